package e2e

import (
	"os"
	"os/exec"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("An administrator approving all three profiles at once", Ordered, func() {
	var pc *pluginCluster
	// The full platform-baseline sample shares two targets with virt-higher-density: the swap
	// MachineConfig (the same content) and the HyperConverged (AAQ beside the overcommit).
	profiles := map[string]string{
		"load-aware-rebalancing": "loadaware_sample.yaml",
		"virt-higher-density":    "higherdensity_sample.yaml",
		"platform-baseline":      "baseline_full_sample.yaml",
	}

	BeforeAll(func() {
		pc = startPluginCluster()
		pc.setUpWorkerPool()
	})

	It("approves the three plans within a second with the commands their statuses give; each reaches Completed without a second approval", func() {
		for name, sample := range profiles {
			Eventually(func() string { return pc.jsonpath("vpc/"+name, "{.status.phase}") }).Should(Equal("Ignored"))
			pc.kubectl("apply", "-f", testenv.Path("config", "samples", sample))
		}
		approved := map[string]string{}
		commands := map[string]string{}
		for name := range profiles {
			pc.kubectl("wait", "vpc/"+name, "--for=condition=ReviewRequired", "--timeout=60s")
			approved[name] = pc.jsonpath("vpc/"+name, "{.status.planHash}")
			commands[name] = pc.jsonpath("vpc/"+name, "{.status.approval.command}")
			Expect(commands[name]).To(ContainSubstring(approved[name]))
		}
		Expect(pc.jsonpath("vpc/platform-baseline", `{.status.items[?(@.state=="Pending")].targetRef.kind}`)).To(ContainSubstring("HyperConverged"))
		Expect(pc.jsonpath("vpc/virt-higher-density", `{.status.items[?(@.state=="Pending")].targetRef.kind}`)).To(ContainSubstring("HyperConverged"))

		By("running the three commands at once: virt-higher-density and platform-baseline write the same swap MachineConfig and HyperConverged")
		var wg sync.WaitGroup
		outs := make(chan string, len(commands))
		for _, command := range commands {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("bash", "-c", command+" --kubeconfig="+pc.kubeconfig)
				// The commands call kubectl by name: the control plane's is first on PATH.
				cmd.Env = append(pc.env(), "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+string(os.PathListSeparator)+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					outs <- command + ": " + err.Error() + ": " + string(out)
				}
			}()
		}
		wg.Wait()
		close(outs)
		for out := range outs {
			Fail(out)
		}

		By("waiting while the pool simulator rolls out each node change, until every config is Completed")
		Eventually(func(g Gomega) {
			for name := range profiles {
				g.Expect(pc.jsonpath("vpc/"+name, "{.status.phase}")).To(Equal("Completed"), name)
			}
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("no second approval was asked for: each executed the plan it was approved for")
		for name := range profiles {
			Expect(pc.jsonpath("vpc/"+name, "{.status.approval.approvedPlanHash}")).To(Equal(approved[name]), name)
			Expect(pc.jsonpath("vpc/"+name, "{.status.planHash}")).To(Equal(approved[name]), name)
			events := pc.kubectl("get", "events", "--field-selector", "involvedObject.name="+name)
			Expect(events).NotTo(ContainSubstring("PlanStale"), name)
		}
	})
})
