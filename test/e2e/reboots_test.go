package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// masterPool is the control plane's MachineConfigPool, with the MachineConfig every pool
// renders from on OpenShift.
const masterPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: master
  labels:
    pools.operator.machineconfiguration.openshift.io/master: ""
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: master
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/master: ""
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 00-master
  labels:
    machineconfiguration.openshift.io/role: master
spec:
  config:
    ignition:
      version: 3.2.0
`

// rebootCluster is a control plane with six workers (maxUnavailable 1) and three control
// plane nodes, played by the pool simulator, with the operators the full baseline needs.
func rebootCluster() *pluginCluster {
	GinkgoHelper()
	pc := startPluginCluster(upstreamCRDFiles...)
	pc.kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	pc.kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
	pc.apply(masterPool)
	// With the three workers and the control plane node of the baseline's cluster: six and three.
	_, err := pc.pools.CreateNodes(context.Background(), "worker", 3)
	Expect(err).NotTo(HaveOccurred())
	_, err = pc.pools.CreateNodes(context.Background(), "master", 2)
	Expect(err).NotTo(HaveOccurred())
	pc.waitForWorkerPool()
	Eventually(func() string { return pc.jsonpath("mcp/master", "{.status.machineCount}") }).Should(Equal("3"))
	Expect(pc.jsonpath("mcp/worker", "{.status.machineCount}")).To(Equal("6"))
	return pc
}

// apply applies a manifest with kubectl.
func (pc *pluginCluster) apply(doc string) {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "manifest.yaml")
	Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
	pc.kubectl("apply", "-f", path)
}

// forecast is the status.rollouts entry of pool.
func (pc *pluginCluster) forecast(config, pool string) advisorv1alpha1.PoolRollout {
	GinkgoHelper()
	var rollouts []advisorv1alpha1.PoolRollout
	Expect(json.Unmarshal([]byte(pc.jsonpath("vpc/"+config, "{.status.rollouts}")), &rollouts)).To(Succeed())
	for _, ro := range rollouts {
		if ro.Pool == pool {
			return ro
		}
	}
	Fail(fmt.Sprintf("%s forecasts nothing for pool %s: %+v", config, pool, rollouts))
	return advisorv1alpha1.PoolRollout{}
}

// approveAsShown runs the approval command the config's status gives.
func (pc *pluginCluster) approveAsShown(config string) {
	GinkgoHelper()
	command := pc.jsonpath("vpc/"+config, "{.status.approval.command}")
	cmd := exec.Command("bash", "-c", command+" --kubeconfig="+pc.kubeconfig)
	cmd.Env = append(pc.env(), "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s: %s", command, out)
}

// nodesOf are the simulator's nodes of pool.
func (pc *pluginCluster) nodesOf(pool string) []string {
	GinkgoHelper()
	return strings.Fields(pc.kubectl("get", "nodes", "-l", "node-role.kubernetes.io/"+pool, "-o", "jsonpath={.items[*].metadata.name}"))
}

func (pc *pluginCluster) rebootsOf(pool string) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, node := range pc.nodesOf(pool) {
		out[node] = pc.pools.Reboots(node)
	}
	return out
}

func (pc *pluginCluster) waitCompleted(configs ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, name := range configs {
			out := pc.jsonpath("vpc/"+name, `{.status.phase}{"\n"}{range .status.items[*]}{.name}={.state}: {.message}{"\n"}{end}`)
			phase, items, _ := strings.Cut(out, "\n")
			g.Expect(phase).To(Equal("Completed"), "%s items:\n%s", name, items)
		}
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

func eachOnce(reboots map[string]int) map[string]int {
	want := map[string]int{}
	for node := range reboots {
		want[node] = 1
	}
	return want
}

var _ = Describe("Rolling node changes out with one reboot per node", func() {
	It("approving the platform-baseline full sample reboots each worker exactly once, in the waves the forecast shown before approval says", func() {
		pc := rebootCluster()
		Eventually(func() string { return pc.jsonpath(baselineVPC, "{.status.phase}") }).Should(Equal("Ignored"))
		pc.kubectl("apply", "-f", testenv.Path("config", "samples", "baseline_full_sample.yaml"))
		pc.kubectl("wait", baselineVPC, "--for=condition=ReviewRequired", "--timeout=60s")

		By("the forecast before approval: the worker pool, six nodes, six waves, one reboot, paused around the batch")
		f := pc.forecast("platform-baseline", "worker")
		Expect(f.Nodes).To(BeEquivalentTo(6))
		Expect(f.Waves).To(BeEquivalentTo(6))
		Expect(f.Reboot).To(BeTrue())
		Expect(f.Pause).To(BeTrue())
		Expect(len(f.Items)).To(BeNumerically(">=", 3), "the MachineConfigs and the KubeletConfig roll out together")
		Expect(pc.jsonpath(baselineVPC, "{.status.disruption}")).To(Equal("reboots 6 worker node(s) once, in 6 wave(s)"))
		Expect(pc.kubectl("get", baselineVPC)).To(ContainSubstring("reboots 6 worker node(s) once, in 6 wave(s)"))
		Expect(pc.jsonpath(baselineVPC, `{.status.conditions[?(@.type=="ReviewRequired")].message}`)).
			To(ContainSubstring("approving it reboots 6 worker node(s) once, in 6 wave(s)"))
		plan, _, _ := pc.plugin("plan", "platform-baseline")
		Expect(plan).To(ContainSubstring("MachineConfigPool worker: 6 node(s) reboot once, in 6 wave(s) of at most 1"))

		pc.approveAsShown("platform-baseline")
		pc.waitCompleted("platform-baseline")

		By("what the simulator counted matches the forecast")
		reboots := pc.rebootsOf("worker")
		Expect(reboots).To(HaveLen(6))
		Expect(reboots).To(Equal(eachOnce(reboots)), "each worker reboots once")
		Expect(pc.pools.Rollouts("worker")).To(HaveLen(1))
		Expect(pc.pools.Waves("worker")).To(BeEquivalentTo(f.Waves))
		for _, node := range pc.nodesOf("master") {
			Expect(pc.pools.Reboots(node)).To(BeZero(), "the control plane is not touched")
		}
		Expect(pc.jsonpath("mcp/worker", "{.spec.paused}")).NotTo(Equal("true"), "the pool is resumed")
	})

	It("approving all three profiles together reboots each worker exactly once", func() {
		pc := rebootCluster()
		profiles := map[string]string{
			"load-aware-rebalancing": "loadaware_sample.yaml",
			"virt-higher-density":    "higherdensity_sample.yaml",
			"platform-baseline":      "baseline_sample.yaml",
		}
		for name, sample := range profiles {
			Eventually(func() string { return pc.jsonpath("vpc/"+name, "{.status.phase}") }).Should(Equal("Ignored"))
			pc.kubectl("apply", "-f", testenv.Path("config", "samples", sample))
		}
		for name := range profiles {
			pc.kubectl("wait", "vpc/"+name, "--for=condition=ReviewRequired", "--timeout=60s")
			Expect(pc.forecast(name, "worker").Waves).To(BeEquivalentTo(6), name)
		}

		By("approving the three within a second")
		var wg sync.WaitGroup
		for name := range profiles {
			wg.Go(func() {
				defer GinkgoRecover()
				pc.approveAsShown(name)
			})
		}
		wg.Wait()
		pc.waitCompleted("load-aware-rebalancing", "virt-higher-density", "platform-baseline")

		reboots := pc.rebootsOf("worker")
		Expect(reboots).To(HaveLen(6))
		Expect(reboots).To(Equal(eachOnce(reboots)), "each worker reboots once for the three approvals")
		Expect(pc.pools.Rollouts("worker")).To(HaveLen(1))
		Expect(pc.jsonpath("mcp/worker", "{.spec.paused}")).NotTo(Equal("true"))
	})

	It("on a compact cluster load-aware's PSI argument reaches the control plane nodes too, forecast as one reboot of the master pool", func() {
		pc := rebootCluster()
		pc.apply(`apiVersion: config.openshift.io/v1
kind: Scheduler
metadata:
  name: cluster
spec:
  mastersSchedulable: true
`)
		Eventually(func() string { return pc.jsonpath("vpc/load-aware-rebalancing", "{.status.phase}") }).Should(Equal("Ignored"))
		pc.kubectl("apply", "-f", testenv.Path("config", "samples", "loadaware_sample.yaml"))
		pc.kubectl("wait", "vpc/load-aware-rebalancing", "--for=condition=ReviewRequired", "--timeout=60s")
		Expect(pc.jsonpath("vpc/load-aware-rebalancing", "{.status.items[*].name}")).To(ContainSubstring("enable-psi-metrics-masters"))
		master := pc.forecast("load-aware-rebalancing", "master")
		Expect(master.Nodes).To(BeEquivalentTo(3))
		Expect(master.Waves).To(BeEquivalentTo(3))
		Expect(master.Reboot).To(BeTrue())
		Expect(pc.jsonpath("vpc/load-aware-rebalancing", "{.status.disruption}")).
			To(Equal("reboots 3 master node(s) once, in 3 wave(s); reboots 6 worker node(s) once, in 6 wave(s)"))

		pc.approveAsShown("load-aware-rebalancing")
		pc.waitCompleted("load-aware-rebalancing")
		masters := pc.rebootsOf("master")
		Expect(masters).To(HaveLen(3))
		Expect(masters).To(Equal(eachOnce(masters)), "each control plane node reboots once")
		workers := pc.rebootsOf("worker")
		Expect(workers).To(Equal(eachOnce(workers)))
		Expect(pc.jsonpath("mcp/master", "{.spec.paused}")).NotTo(Equal("true"))
	})
})
