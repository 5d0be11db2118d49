package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const densityVPC = "vpc/virt-higher-density"

var _ = Describe("An administrator raising VM density with kubectl", Ordered, func() {
	BeforeAll(func() {
		By("setting up the baseline resources of a cluster without OpenShift")
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		waitForWorkerPool(admin)
	})

	It("applies the higher-density sample with enableSwap: true and waits for the plan to need review", func() {
		kubectl("apply", "-f", testenv.Path("config", "samples", "higherdensity_options_sample.yaml"))
		Expect(jsonpath(densityVPC, "{.spec.options.virtHigherDensity.enableSwap}")).To(Equal("true"))
		kubectl("wait", densityVPC, "--for=condition=ReviewRequired", "--timeout=60s")
		Expect(kubectl("get", densityVPC)).To(MatchRegexp(`virt-higher-density\s+virt-higher-density\s+DryRun\s+ReviewRequired\s+High\s+0/2`))
	})

	It("reviews both diffs: the swap MachineConfig to create, and the HyperConverged's overcommit and KSM", func() {
		swap := jsonpath(densityVPC, `{.status.items[?(@.name=="enable-kubelet-swap")].diff}`)
		Expect(swap).To(HavePrefix("--- /dev/null\n+++ MachineConfig 90-worker-kubelet-swap (planned)"))
		Expect(swap).To(ContainSubstring("ConditionPathExists=/dev/disk/by-partlabel/CNV_SWAP"))
		Expect(swap).To(ContainSubstring("swapBehavior:%20LimitedSwap"))
		Expect(swap).To(ContainSubstring("MemorySwapMax=0"))
		Expect(jsonpath(densityVPC, `{.status.items[?(@.name=="enable-kubelet-swap")].impactSeverity}`)).To(Equal("High"))

		hco := jsonpath(densityVPC, `{.status.items[?(@.name=="increase-vm-density")].diff}`)
		Expect(hco).To(MatchRegexp(`(?m)^\+\s+memoryOvercommitPercentage: 200$`))
		Expect(hco).To(MatchRegexp(`(?m)^\+\s+ksmConfiguration:$`))
		Expect(jsonpath(densityVPC, `{.status.items[?(@.name=="increase-vm-density")].impactSeverity}`)).To(Equal("Medium"))
		Expect(jsonpath(densityVPC, `{.status.items[?(@.name=="increase-vm-density")].message}`)).To(ContainSubstring("running VMs keep"))

		_, _, err := runKubectl("get", "machineconfig", "90-worker-kubelet-swap")
		Expect(err).To(HaveOccurred(), "a DryRun plan creates nothing")
		Expect(jsonpath("hyperconverged/kubevirt-hyperconverged", "{.spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage}",
			"-n", "openshift-cnv")).NotTo(Equal("200"))
	})

	It("approves with the command the status gives, and waits for Completed while the worker pool rolls out", func() {
		approve := jsonpath(densityVPC, "{.status.approval.command}")
		Expect(approve).To(HavePrefix("kubectl patch vpc virt-higher-density "))
		// The command as given, run by a shell whose kubectl is the control plane's.
		out, errOut, err := runWithEnv("bash", "-c", `PATH="$(dirname "$KUBECTL"):$PATH"; `+approve)
		Expect(err).NotTo(HaveOccurred(), out+errOut)
		kubectl("wait", densityVPC, `--for=jsonpath={.status.items[0].state}=InProgress`, "--timeout=60s")
		Eventually(func() string { return jsonpath(densityVPC, "{.status.items[0].message}") }).Should(ContainSubstring("MachineConfigPool worker"))
		Expect(jsonpath(densityVPC, "{.status.items[1].state}")).To(Equal("Pending"), "the HyperConverged waits for swap")
		// The pool simulator renders the MachineConfig and reboots the workers one by one.
		kubectl("wait", densityVPC, "--for=condition=Completed", "--timeout=60s")
		kubectl("wait", densityVPC, "--for=condition=Ready", "--timeout=60s")
		Expect(kubectl("get", densityVPC)).To(MatchRegexp(`Apply\s+Completed\s+High\s+2/2`))
	})

	It("finds the swap MachineConfig and the HyperConverged as planned, applied by the profile's field manager", func() {
		Expect(jsonpath("machineconfig/90-worker-kubelet-swap", "{.spec.config.systemd.units[0].name}")).To(Equal("virt-advisor-swap.service"))
		Expect(jsonpath("hyperconverged/kubevirt-hyperconverged", "{.spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage}",
			"-n", "openshift-cnv")).To(Equal("200"))
		managers := jsonpath("hyperconverged/kubevirt-hyperconverged", "{.metadata.managedFields[*].manager}", "-n", "openshift-cnv")
		Expect(strings.Fields(managers)).To(ContainElement("virt-advisor-operator/virt-higher-density"))
	})
})
