package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const baselineVPC = "vpc/platform-baseline"

var _ = Describe("An administrator laying down the platform baseline with kubectl", Ordered, func() {
	// The swap MachineConfig is also virt-higher-density's: it is removed at the end only
	// when this container created it, so the other containers find the cluster as before.
	var swapExisted bool

	// approveAsGiven runs the approval command of the status as it is given, by a shell
	// whose kubectl is the control plane's.
	approveAsGiven := func() {
		GinkgoHelper()
		approve := jsonpath(baselineVPC, "{.status.approval.command}")
		Expect(approve).To(HavePrefix("kubectl patch vpc platform-baseline "))
		out, errOut, err := runWithEnv("bash", "-c", `PATH="$(dirname "$KUBECTL"):$PATH"; `+approve)
		Expect(err).NotTo(HaveOccurred(), out+errOut)
	}

	// waitUntilCompleted waits, while the pool simulator rolls out each node change the items
	// make, until the config is Completed.
	waitUntilCompleted := func() {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			out, errOut, err := runKubectl("get", baselineVPC, "-o",
				`jsonpath={.status.phase}{"\n"}{range .status.items[?(@.state=="InProgress")]}{.message}{end}`)
			g.Expect(err).NotTo(HaveOccurred(), errOut)
			phase, waiting, _ := strings.Cut(out, "\n")
			g.Expect(phase).To(Equal("Completed"), "item in progress: %s", waiting)
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	}

	// manifest writes doc to a file of the run's work directory and returns its path.
	manifest := func(name, doc string) string {
		GinkgoHelper()
		path := filepath.Join(workDir, name)
		Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
		return path
	}

	BeforeAll(func() {
		_, _, err := runKubectl("get", "machineconfig", "90-worker-kubelet-swap")
		swapExisted = err == nil
		By("setting up the worker pool, three labelled workers and the Self Node Remediation template")
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		waitForWorkerPool(admin)
		kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
		Expect(kubectl("get", "nodes", "-l", "node-role.kubernetes.io/worker", "-o", "name")).
			To(ContainSubstring("node/baseline-worker-2"))
	})

	AfterAll(func() {
		// Back to the advertised config: no plan, no writes, no drift handling.
		kubectl("patch", baselineVPC, "--type=merge", "-p", `{"spec":{"action":"Ignore","approvedPlanHash":null}}`)
		kubectl("wait", baselineVPC, "--for=jsonpath={.status.phase}=Ignored", "--timeout=60s")
		written := []string{"machineconfig/90-worker-iommu", "kubeletconfig/virt-advisor-kubelet", "nodehealthcheck/virt-advisor-worker-health"}
		if !swapExisted {
			written = append(written, "machineconfig/90-worker-kubelet-swap")
		}
		kubectl(append([]string{"delete", "--ignore-not-found"}, written...)...)
		waitForWorkerPool(admin)
	})

	It("sees the platform-baseline profile advertised before creating anything", func() {
		Eventually(func() string {
			out, _, _ := runKubectl("get", baselineVPC, "-o", "jsonpath={.spec.action}/{.status.phase}")
			return out
		}).Should(Equal("Ignore/Ignored"))
		Expect(jsonpath(baselineVPC, "{.metadata.annotations.advisor\\.kubevirt\\.io/description}")).
			To(ContainSubstring("substrate of a virtualization cluster"))
	})

	It("finds the sample with every component configured accepted by the API server", func() {
		out := kubectl("apply", "--dry-run=server", "-f", testenv.Path("config", "samples", "baseline_full_sample.yaml"), "-o", "yaml")
		Expect(out).To(ContainSubstring("resourceName: nvidia.com/TU104GL_Tesla_T4"))
		Expect(out).To(ContainSubstring("resourceName: kubevirt.io/usb-receiver"))
		_, errOut, err := runKubectl("apply", "--dry-run=server", "-f", manifest("baseline-vfio-without-devices.yaml", `apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata:
  name: platform-baseline
spec:
  profile: platform-baseline
  action: DryRun
  options:
    platformBaseline:
      vfio:
        enabled: true
`))
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("options.platformBaseline.vfio.enabled requires at least one device"))
	})

	It("applies the sample with the defaults and waits for the plan to need review", func() {
		kubectl("apply", "-f", testenv.Path("config", "samples", "baseline_sample.yaml"))
		kubectl("wait", baselineVPC, "--for=condition=ReviewRequired", "--timeout=60s")
		Expect(kubectl("get", baselineVPC)).To(MatchRegexp(`platform-baseline\s+platform-baseline\s+DryRun\s+ReviewRequired\s+High\s+0/4`))
		Expect(strings.Fields(jsonpath(baselineVPC, "{.status.items[*].name}"))).To(Equal([]string{
			"enable-kubelet-swap", "tune-worker-kubelet", "enable-iommu", "remediate-unhealthy-workers",
			"configure-mtv", "deploy-metallb",
		}), "the components planned by default, in execution order")

		GinkgoWriter.Printf("=== kubectl get vpc platform-baseline -o yaml ===\n%s=== end ===\n", kubectl("get", baselineVPC, "-o", "yaml"))
	})

	It("reviews the items: swap, the worker kubelet with NUMA from the node labels, the IOMMU and the node health check", func() {
		item := func(name, field string) string {
			GinkgoHelper()
			return jsonpath(baselineVPC, fmt.Sprintf(`{.status.items[?(@.name==%q)].%s}`, name, field))
		}
		Expect(item("enable-kubelet-swap", "message")).To(ContainSubstring("MachineConfig 90-worker-kubelet-swap turns swap on"))
		Expect(item("enable-kubelet-swap", "state")).To(Equal("Pending"))

		Expect(item("tune-worker-kubelet", "components")).To(Equal(`["numa","kubeletPerformance"]`))
		Expect(item("tune-worker-kubelet", "message")).To(ContainSubstring("2 of 3 workers report several NUMA nodes"))
		kubelet := item("tune-worker-kubelet", "diff")
		Expect(kubelet).To(HavePrefix("--- /dev/null\n+++ KubeletConfig virt-advisor-kubelet (planned)"))
		Expect(kubelet).To(MatchRegexp(`(?m)^\+\s+topologyManagerPolicy: best-effort$`))
		Expect(kubelet).To(MatchRegexp(`(?m)^\+\s+maxPods: 500$`))
		Expect(kubelet).To(MatchRegexp(`(?m)^\+\s+pools.operator.machineconfiguration.openshift.io/worker: ""$`))

		iommu := item("enable-iommu", "diff")
		Expect(iommu).To(HavePrefix("--- /dev/null\n+++ MachineConfig 90-worker-iommu (planned)"))
		Expect(iommu).To(ContainSubstring("intel_iommu=on"))
		Expect(iommu).NotTo(ContainSubstring("amd_iommu"))
		Expect(item("enable-iommu", "message")).To(ContainSubstring("3 of 3 workers report Intel CPUs"))

		health := item("remediate-unhealthy-workers", "diff")
		Expect(health).To(HavePrefix("--- /dev/null\n+++ NodeHealthCheck virt-advisor-worker-health (planned)"))
		Expect(health).To(MatchRegexp(`(?m)^\+\s+minHealthy: 51%$`))
		Expect(health).To(MatchRegexp(`(?m)^\+\s+namespace: openshift-workload-availability$`))
		Expect(item("remediate-unhealthy-workers", "impactSeverity")).To(Equal("Low"))
	})

	It("sees MTV and MetalLB skipped, naming the operator to install", func() {
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="configure-mtv")].state}`)).To(Equal("Skipped"))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="configure-mtv")].message}`)).
			To(ContainSubstring("install the Migration Toolkit for Virtualization Operator"))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="deploy-metallb")].state}`)).To(Equal("Skipped"))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="deploy-metallb")].message}`)).
			To(ContainSubstring("install the MetalLB Operator"))
	})

	It("finds nothing written before the approval", func() {
		for _, obj := range []string{"machineconfig/90-worker-iommu", "kubeletconfig/virt-advisor-kubelet",
			"nodehealthcheck/virt-advisor-worker-health"} {
			_, _, err := runKubectl("get", obj)
			Expect(err).To(HaveOccurred(), "a DryRun plan creates no %s", obj)
		}
	})

	It("approves with the command the status gives, and waits for Completed while the worker pool rolls out each node change", func() {
		approveAsGiven()
		waitUntilCompleted()
		kubectl("wait", baselineVPC, "--for=condition=Ready", "--timeout=60s")
		Expect(kubectl("get", baselineVPC)).To(MatchRegexp(`Apply\s+Completed\s+High\s+4/4`))
		Expect(strings.Fields(jsonpath(baselineVPC, "{.status.items[*].state}"))).To(Equal([]string{
			"Completed", "Completed", "Completed", "Completed", "Skipped", "Skipped",
		}))
	})

	It("finds the MachineConfigs, the KubeletConfig and the NodeHealthCheck as planned", func() {
		Expect(jsonpath("machineconfig/90-worker-iommu", "{.spec.kernelArguments}")).To(Equal(`["intel_iommu=on","iommu=pt"]`))
		Expect(jsonpath("kubeletconfig/virt-advisor-kubelet", "{.spec.kubeletConfig.topologyManagerPolicy} {.spec.kubeletConfig.maxPods} {.spec.autoSizingReserved}")).
			To(Equal("best-effort 500 true"))
		Expect(jsonpath("kubeletconfig/virt-advisor-kubelet", "{.metadata.labels.advisor\\.kubevirt\\.io/managed-by}")).
			To(Equal("virt-advisor-operator"))
		// The pool rolled out the KubeletConfig as the MachineConfig rendered from it.
		Expect(jsonpath("mcp/worker", "{.status.configuration.source[*].name}")).To(And(
			ContainSubstring("90-worker-kubelet-swap"), ContainSubstring("90-worker-iommu"), ContainSubstring("99-worker-generated-kubelet")))
		Expect(jsonpath("nodehealthcheck/virt-advisor-worker-health", "{.spec.remediationTemplate.name}")).
			To(Equal("self-node-remediation-automatic-strategy-template"))
		managers := jsonpath("machineconfig/90-worker-kubelet-swap", "{.metadata.managedFields[*].manager}")
		Expect(strings.Fields(managers)).To(ContainElement("virt-advisor-operator/platform-baseline"))
	})

	It("lists a config for every profile with kubectl get vpc", func() {
		out := kubectl("get", "vpc")
		GinkgoWriter.Printf("=== kubectl get vpc ===\n%s=== end ===\n", out)
		for _, profile := range []string{"load-aware-rebalancing", "virt-higher-density", "platform-baseline"} {
			Expect(out).To(MatchRegexp(`(?m)^%s\s+%s\s`, profile, profile))
		}
		Expect(out).To(MatchRegexp(`(?m)^platform-baseline\s+platform-baseline\s+Apply\s+Completed\s+High\s+4/4\s`))
	})

	It("sees the plan drafted again for review when the MetalLB Operator's CRD is installed, without a restart", func() {
		kubectl("apply", "--server-side", "-f", upstreamCRD("metallb.io/metallbs.yaml"))
		// kubectl wait fails on a CRD read before it has any condition: poll instead.
		Eventually(func() string {
			out, _, _ := runKubectl("get", "crd/metallbs.metallb.io", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			return out
		}).Should(Equal("True"))
		kubectl("apply", "-f", manifest("metallb-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: metallb-system\n"))

		kubectl("wait", baselineVPC, "--for=condition=ReviewRequired", "--timeout=60s")
		// The operator drafted the plan again because an object it was rendered from changed.
		Expect(jsonpath(baselineVPC, "{.status.approval.cause}")).To(Equal("InputDependencyDrift"))
		Eventually(func() string {
			out, _, _ := runKubectl("get", "events", "-A", "--field-selector", "involvedObject.name=platform-baseline",
				"-o", "jsonpath={.items[*].message}")
			return out
		}).Should(ContainSubstring("Completed -> Drafting (InputDependencyDrift): an object the plan was rendered from changed"))
		// The earlier approval pinned the hash of the plan it approved: the plan shown is
		// another one.
		Expect(jsonpath(baselineVPC, `{.status.conditions[?(@.type=="ReviewRequired")].reason}`)).To(Equal("ApprovalMismatch"))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="deploy-metallb")].state}`)).To(Equal("Pending"))
		diff := jsonpath(baselineVPC, `{.status.items[?(@.name=="deploy-metallb")].diff}`)
		Expect(diff).To(HavePrefix("--- /dev/null\n+++ MetalLB metallb-system/metallb (planned)"))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="configure-mtv")].state}`)).To(Equal("Skipped"))
		for _, name := range []string{"enable-kubelet-swap", "tune-worker-kubelet", "enable-iommu", "remediate-unhealthy-workers"} {
			Expect(jsonpath(baselineVPC, fmt.Sprintf(`{.status.items[?(@.name==%q)].message}`, name))).
				To(HavePrefix("already as planned: "), "item %s", name)
		}
		Expect(kubectl("get", baselineVPC)).To(MatchRegexp(`Apply\s+ReviewRequired\s+Low\s+0/5`))
		_, _, err := runKubectl("get", "metallb", "metallb", "-n", "metallb-system")
		Expect(err).To(HaveOccurred(), "nothing is written before the approval")
		Expect(manager.Exited()).To(BeFalse(), "the manager kept running")
	})

	It("approves the new item with the command the status gives and finds the MetalLB deployed", func() {
		approveAsGiven()
		waitUntilCompleted()
		kubectl("wait", baselineVPC, "--for=condition=Ready", "--timeout=60s")
		// The plan changed only the MetalLB; the other targets already matched it.
		Expect(kubectl("get", baselineVPC)).To(MatchRegexp(`Apply\s+Completed\s+Low\s+5/5`))
		Expect(jsonpath(baselineVPC, `{.status.items[?(@.name=="deploy-metallb")].state}`)).To(Equal("Completed"))
		Expect(jsonpath("metallb/metallb", "{.metadata.labels.advisor\\.kubevirt\\.io/managed-by}", "-n", "metallb-system")).
			To(Equal("virt-advisor-operator"))
	})
})

var _ = Describe("An administrator laying down every component of the platform baseline with kubectl", Ordered, func() {
	// A control plane of its own, with the operators the suite's has (the Machine Config
	// Operator's KubeletConfig, the Node Health Check and Self Node Remediation operators):
	// the KubeletConfig the plan creates is new to its pool simulator, as on a cluster that
	// never had one, and the other containers' configs are left alone.
	var pc *pluginCluster

	BeforeAll(func() {
		pc = startPluginCluster(upstreamCRDFiles...)
		By("setting up the worker pool, three labelled workers and the Self Node Remediation template")
		pc.kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		pc.kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
		pc.waitForWorkerPool()
	})

	ReportAfterEach(func(report SpecReport) {
		if report.Failed() && pc != nil {
			data, _ := os.ReadFile(pc.managerLog)
			AddReportEntry("manager log (the full baseline's control plane)", string(data))
			data, _ = os.ReadFile(pc.poolSimLog)
			AddReportEntry("pool simulator log (the full baseline's control plane)", string(data))
		}
	})

	It("approves the plan of the sample with every component configured with the command the status gives, and waits for Completed while the worker pool rolls out each node change", func() {
		Eventually(func() string { return pc.jsonpath(baselineVPC, "{.status.phase}") }).Should(Equal("Ignored"))
		pc.kubectl("apply", "-f", testenv.Path("config", "samples", "baseline_full_sample.yaml"))
		pc.kubectl("wait", baselineVPC, "--for=condition=ReviewRequired", "--timeout=60s")
		approve := pc.jsonpath(baselineVPC, "{.status.approval.command}")
		Expect(approve).To(HavePrefix("kubectl patch vpc platform-baseline "))
		// The command as given, run by a shell whose kubectl is the control plane's.
		cmd := exec.Command("bash", "-c", approve+" --kubeconfig="+pc.kubeconfig)
		cmd.Env = append(pc.env(), "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		Eventually(func(g Gomega) {
			out := pc.jsonpath(baselineVPC, `{.status.phase}{"\n"}{range .status.items[*]}{.name}={.state}: {.message}{"\n"}{end}`)
			phase, items, _ := strings.Cut(out, "\n")
			g.Expect(phase).To(Equal("Completed"), "items:\n%s", items)
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		pc.kubectl("wait", baselineVPC, "--for=condition=Ready", "--timeout=60s")
		GinkgoWriter.Printf("=== kubectl get vpc platform-baseline ===\n%s=== end ===\n", pc.kubectl("get", baselineVPC))
		for _, state := range strings.Fields(pc.jsonpath(baselineVPC, "{.status.items[*].state}")) {
			Expect(state).To(BeElementOf("Completed", "Skipped"))
		}
		// The pool rolled out the KubeletConfig as the MachineConfig rendered from it.
		Expect(pc.jsonpath("mcp/worker", "{.status.configuration.source[*].name}")).To(ContainSubstring("99-worker-generated-kubelet"))
	})

	It("stays Completed, with no drift and no write, while the Machine Config Operator keeps only its own annotation on the KubeletConfig", func() {
		// The pool simulator replaced the KubeletConfig's annotations with the operator's
		// mc-name-suffix, as the Machine Config Operator does when it first renders it.
		Expect(pc.jsonpath("kubeletconfig/virt-advisor-kubelet", "{.metadata.annotations}")).
			To(Equal(`{"machineconfiguration.openshift.io/mc-name-suffix":""}`))
		version := pc.jsonpath("kubeletconfig/virt-advisor-kubelet", "{.metadata.resourceVersion}")
		Consistently(func() string { return pc.jsonpath(baselineVPC, "{.status.phase}") }).
			WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Equal("Completed"))
		Expect(pc.jsonpath("kubeletconfig/virt-advisor-kubelet", "{.metadata.resourceVersion}")).To(Equal(version),
			"the KubeletConfig was not written again")
	})
})
