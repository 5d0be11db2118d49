package e2e

import (
	"os/exec"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const vpc = "vpc/load-aware-rebalancing"

var _ = Describe("An administrator with kubectl", Ordered, func() {
	It("prints the operator's version", func() {
		out, err := exec.Command(managerBin, "--version").Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(string(out))).NotTo(BeEmpty())
	})

	It("finds every field of the load-aware options documented by kubectl explain", func() {
		var out string
		// The API server publishes a new CRD's schema a moment after it is established.
		Eventually(func() error {
			var err error
			out, _, err = runKubectl("explain", "virtplatformconfig.spec.options.loadAware")
			return err
		}).Should(Succeed())
		for _, field := range []string{"deschedulingIntervalSeconds", "mode", "enablePSIMetrics",
			"devDeviationThresholds", "evictionLimitTotal", "evictionLimitNode"} {
			Expect(out).To(MatchRegexp(`(?m)^\s+`+field+`\s+<\w+>\n\s+\S`), "field %s has no description", field)
		}
		Expect(out).To(ContainSubstring("DESCRIPTION:"))
	})

	It("sees the profile advertised before creating anything", func() {
		Eventually(func() string {
			out, _, _ := runKubectl("get", vpc, "-o", "jsonpath={.spec.action}/{.status.phase}")
			return out
		}).Should(Equal("Ignore/Ignored"))
		Expect(jsonpath(vpc, "{.metadata.annotations.advisor\\.kubevirt\\.io/description}")).To(ContainSubstring("live-migrates VMs"))
	})

	BeforeAll(func() {
		By("setting up the baseline resources of a cluster without OpenShift")
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		waitForWorkerPool(admin)
	})

	It("applies the sample and waits for the plan to need review", func() {
		kubectl("apply", "-f", testenv.Path("config", "samples", "loadaware_sample.yaml"))
		kubectl("wait", vpc, "--for=condition=ReviewRequired", "--timeout=60s")
		Expect(kubectl("get", vpc)).To(MatchRegexp(`load-aware-rebalancing\s+load-aware-rebalancing\s+DryRun\s+ReviewRequired\s+High\s+0/2`))
	})

	It("reads in the diff that the KubeVirt descheduler profile is added and nothing was changed yet", func() {
		diff := jsonpath(vpc, `{.status.items[?(@.name=="enable-load-aware-descheduling")].diff}`)
		Expect(diff).To(ContainSubstring("+  - KubeVirtRelieveAndMigrate"))
		Expect(diff).To(ContainSubstring("-  - LifecycleAndUtilization"))
		Expect(diff).To(MatchRegexp(`(?m)^@@ -\d+,\d+ \+\d+,\d+ @@`))
		psiDiff := jsonpath(vpc, `{.status.items[?(@.name=="enable-psi-metrics")].diff}`)
		Expect(psiDiff).To(HavePrefix("--- /dev/null"))
		Expect(psiDiff).To(ContainSubstring("+  - psi=1"))
		_, _, err := runKubectl("get", "machineconfig", "99-worker-psi-karg")
		Expect(err).To(HaveOccurred(), "a DryRun plan creates nothing")
		Expect(jsonpath("kubedescheduler/cluster", "{.spec.profiles}", "-n", "openshift-kube-descheduler-operator")).
			To(ContainSubstring("LifecycleAndUtilization"))
	})

	It("approves with kubectl patch and waits for Completed while the worker pool rolls out", func() {
		kubectl("patch", vpc, "--type=json", "-p", `[{"op":"replace","path":"/spec/action","value":"Apply"}]`)
		kubectl("wait", vpc, `--for=jsonpath={.status.items[1].state}=InProgress`, "--timeout=60s")
		Eventually(func() string { return jsonpath(vpc, "{.status.items[1].message}") }).Should(ContainSubstring("MachineConfigPool worker"))
		// The pool simulator renders the MachineConfig and reboots the workers one by one.
		kubectl("wait", vpc, "--for=condition=Completed", "--timeout=60s")
		kubectl("wait", vpc, "--for=condition=Ready", "--timeout=60s")
		Expect(kubectl("get", vpc)).To(MatchRegexp(`Apply\s+Completed\s+High\s+2/2`))
	})

	It("finds the KubeDescheduler and 99-worker-psi-karg as planned", func() {
		profiles := jsonpath("kubedescheduler/cluster", "{.spec.profiles}", "-n", "openshift-kube-descheduler-operator")
		Expect(profiles).To(Equal(`["AffinityAndTaints","SoftTopologyAndDuplicates","KubeVirtRelieveAndMigrate"]`))
		Expect(jsonpath("kubedescheduler/cluster", "{.spec.mode} {.spec.deschedulingIntervalSeconds}", "-n", "openshift-kube-descheduler-operator")).
			To(Equal("Automatic 60"))
		Expect(jsonpath("machineconfig/99-worker-psi-karg", "{.spec.kernelArguments}")).To(Equal(`["psi=1"]`))
		Expect(jsonpath("machineconfig/99-worker-psi-karg", "{.metadata.labels.advisor\\.kubevirt\\.io/managed-by}")).
			To(Equal("virt-advisor-operator"))
		managers := jsonpath("kubedescheduler/cluster", "{.metadata.managedFields[*].manager}", "-n", "openshift-kube-descheduler-operator")
		Expect(strings.Fields(managers)).To(ContainElement("virt-advisor-operator/load-aware-rebalancing"), "each profile applies with its own field manager")
	})

	It("sees an out-of-band edit as Drifted, with the correction in the diff", func() {
		kubectl("patch", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator", "--type=merge",
			"-p", `{"spec":{"profiles":["AffinityAndTaints","LongLifecycle"]}}`)
		kubectl("wait", vpc, "--for=condition=Drifted", "--timeout=60s")
		Expect(kubectl("get", vpc)).To(MatchRegexp(`Apply\s+Drifted\s+High\s+1/2`))
		diff := jsonpath(vpc, `{.status.items[?(@.name=="enable-load-aware-descheduling")].diff}`)
		Expect(diff).To(ContainSubstring("-  - LongLifecycle"))
		Expect(diff).To(ContainSubstring("+  - KubeVirtRelieveAndMigrate"))
		events := kubectl("get", "events", "-A", "--field-selector", "involvedObject.name=load-aware-rebalancing", "-o", "jsonpath={.items[*].reason}")
		Expect(strings.Fields(events)).To(ContainElement("Drifted"))
	})

	It("sees the config Completed again once the edit is reverted", func() {
		kubectl("patch", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator", "--type=merge",
			"-p", `{"spec":{"profiles":["AffinityAndTaints","SoftTopologyAndDuplicates","KubeVirtRelieveAndMigrate"]}}`)
		kubectl("wait", vpc, "--for=condition=Completed", "--timeout=60s")
		kubectl("wait", vpc, "--for=condition=Ready", "--timeout=60s")
		Expect(kubectl("get", vpc)).To(MatchRegexp(`Apply\s+Completed\s+High\s+2/2`))
		Expect(regexp.MustCompile(`True`).FindAllString(jsonpath(vpc, "{.status.conditions[*].status}"), -1)).To(HaveLen(2),
			"exactly Completed and Ready hold")
	})
})
