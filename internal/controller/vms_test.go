package controller_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// vmNamespace holds the VMs of the specs below.
const vmNamespace = "vms"

// installKubeVirtCRDs installs the KubeVirt CRDs until the spec ends.
func installKubeVirtCRDs() {
	GinkgoHelper()
	kubectl("apply", "-f", testenv.KubeVirtCRDs)
	kubectl("wait", "--for=condition=Established", "--timeout=30s",
		"crd/virtualmachineinstances.kubevirt.io", "crd/virtualmachines.kubevirt.io", "crd/kubevirts.kubevirt.io")
	DeferCleanup(kubectl, "delete", "-f", testenv.KubeVirtCRDs, "--wait=true")
}

// createWorkerNodes creates the worker pool's nodes, worker-0 to worker-<n-1>, until the
// spec ends.
func createWorkerNodes(n int) {
	GinkgoHelper()
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("worker-%d", i),
			Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		DeferCleanup(deleteAndWait, node)
	}
}

// vmi is a running VirtualMachineInstance on node, live-migratable or not, with guest
// memory and an eviction strategy of its own ("" follows the cluster's).
func vmi(name, node string, migratable bool, memory, strategy string) string {
	status := "True"
	if !migratable {
		status = "False"
	}
	own := ""
	if strategy != "" {
		own = "\n  evictionStrategy: " + strategy
	}
	return fmt.Sprintf(`---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: %s, namespace: %s}
spec:%s
  domain:
    devices: {}
    memory: {guest: %s}
status:
  phase: Running
  nodeName: %s
  conditions:
  - {type: LiveMigratable, status: "%s", reason: DisksNotLiveMigratable}
`, name, vmNamespace, own, memory, node, status)
}

// vmsOnWorkers installs the KubeVirt CRDs, creates three worker nodes, a KubeVirt CR
// whose cluster-wide eviction strategy is LiveMigrate, and the VMIs of manifest, until
// the spec ends.
func vmsOnWorkers(manifest string) {
	GinkgoHelper()
	installKubeVirtCRDs()
	createWorkerNodes(3)
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vmNamespace}}))).To(Succeed())
	kubectlApply(`
apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata: {name: kubevirt, namespace: ` + vmNamespace + `}
spec:
  configuration: {evictionStrategy: LiveMigrate}
` + manifest)
}

// workerVMs is the VM forecast of the worker pool in status.
func workerVMs(vpc *advisorv1alpha1.VirtPlatformConfig) *advisorv1alpha1.VMForecast {
	for _, ro := range vpc.Status.Rollouts {
		if ro.Pool == "worker" {
			return ro.VMs
		}
	}
	return nil
}

var _ = Describe("What a rollout does to the VMs", func() {
	BeforeEach(resetCluster)

	It("without the KubeVirt CRDs the forecast says the VMs are unknown and why, and the plan is reviewed, approved and applied", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		vms := workerVMs(shown)
		Expect(vms).NotTo(BeNil(), "the worker nodes are drained: the forecast says what happens to their VMs")
		Expect(vms.UnknownReason).To(ContainSubstring("the cluster serves no VirtualMachineInstances"))
		Expect(vms.LiveMigrate + vms.Restart + vms.Block).To(BeZero())
		Expect(shown.Status.Disruption).To(Equal("reboots 3 worker node(s) once, in 3 wave(s)"),
			"a cluster without KubeVirt runs no VMs: the one-line forecast has nothing to add")

		approve()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("shows before the approval which VMs of the drained nodes live-migrate, how often, which restart and which block the drain, and refreshes it as VMs go without touching the plan hash", func() {
		vmsOnWorkers(`
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: batch-0, namespace: ` + vmNamespace + `}
spec:
  runStrategy: Always
  template: {spec: {domain: {devices: {}}}}
` + vmi("web-0", "worker-0", true, "2Gi", "") + vmi("web-1", "worker-1", true, "1Gi", "") +
			vmi("pg-0", "worker-2", false, "4Gi", "") + vmi("batch-0", "worker-2", false, "1Gi", "None") +
			vmi("elsewhere", "master-0", true, "8Gi", ""))

		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		var shown *advisorv1alpha1.VirtPlatformConfig
		Eventually(func(g Gomega) {
			shown = getConfig()
			g.Expect(shown.Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired))
			g.Expect(workerVMs(shown)).NotTo(BeNil())
			g.Expect(workerVMs(shown).UnknownReason).To(BeEmpty())
		}).Should(Succeed())
		vms := workerVMs(shown)
		Expect(vms.LiveMigrate).To(BeEquivalentTo(2))
		Expect(vms.Migrations).To(BeEquivalentTo(3), "web-0 is drained in the first wave, before any node is updated: it moves twice")
		Expect(vms.MemoryToMigrate.Cmp(resource.MustParse("5Gi"))).To(BeZero(), "2Gi twice and 1Gi once")
		Expect(vms.Restart).To(BeEquivalentTo(1))
		Expect(vms.Restarting.Names).To(Equal([]string{"vms/batch-0"}))
		Expect(vms.Block).To(BeEquivalentTo(1))
		Expect(vms.Blocking.Names).To(Equal([]string{"vms/pg-0"}))
		const sentence = "reboots 3 worker node(s) once, in 3 wave(s); 2 VMs live-migrate (3 migrations), 1 restarts, 1 blocks the drain (vms/pg-0)"
		Expect(shown.Status.Disruption).To(Equal(sentence))
		Expect(conditionMessage(shown, advisorv1alpha1.ConditionReviewRequired)).To(ContainSubstring("approving it " + sentence))

		By("the VM that blocks the drain is stopped: the forecast follows, the plan and its hash stay")
		kubectl("delete", "vmi", "pg-0", "-n", vmNamespace)
		Eventually(func() string { return getConfig().Status.Disruption }).Should(Equal(
			"reboots 3 worker node(s) once, in 3 wave(s); 2 VMs live-migrate (3 migrations), 1 restarts"))
		refreshed := getConfig()
		Expect(refreshed.Status.PlanHash).To(Equal(shown.Status.PlanHash))
		Expect(refreshed.Status.PlanRevision).To(Equal(shown.Status.PlanRevision))
		Expect(workerVMs(refreshed).Blocking).To(BeNil())

		By("the plan approved before the VM moved is the plan applied")
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + shown.Status.PlanHash + `"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		done := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(strings.Join(eventReasons(), ",")).NotTo(ContainSubstring(advisorv1alpha1.ReasonPlanStale))
		Expect(done.Status.PlanHash).To(Equal(shown.Status.PlanHash))
	})

	It("a batch whose drain a VM would block does not start: the items before it are applied, the config names the VM and what unblocks it, and the batch starts by itself once the VM is stopped", func() {
		vmsOnWorkers(vmi("web-0", "worker-0", true, "2Gi", "") + vmi("pg-0", "worker-2", false, "4Gi", ""))
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonDrainBlocked))
		held := getConfig()
		Expect(conditionMessage(held, advisorv1alpha1.ConditionInProgress)).To(And(
			ContainSubstring("MachineConfigPool worker: vms/pg-0"), ContainSubstring("stop it (runStrategy: Halted)")))
		Expect(item(held, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted), "the items before the batch are not held")
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemPending))
		Expect(targets.PoolPaused(workerPool())).To(BeFalse())

		kubectl("delete", "vmi", "pg-0", "-n", vmNamespace)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("a VM that starts blocking after the approval keeps the pool paused right before its resume, until it no longer blocks", func() {
		vmsOnWorkers(vmi("web-0", "worker-0", true, "2Gi", ""))
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(func(g Gomega) {
			g.Expect(itemState(loadaware.ItemPSI)).To(Equal(advisorv1alpha1.ItemInProgress))
			g.Expect(targets.PausedBy(workerPool())).To(ConsistOf(configName))
		}).Should(Succeed())

		By("a VM that cannot migrate starts on a worker while the batch is applied")
		kubectlApply(vmi("pg-0", "worker-1", false, "4Gi", ""))
		rolloutPool()
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonDrainBlocked))
		Expect(conditionMessage(getConfig(), advisorv1alpha1.ConditionInProgress)).To(ContainSubstring("vms/pg-0"))
		Consistently(func() []string { return targets.PausedBy(workerPool()) }).Should(ConsistOf(configName))

		kubectl("delete", "vmi", "pg-0", "-n", vmNamespace)
		Eventually(func() bool { return targets.PoolPaused(workerPool()) }).Should(BeFalse())
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("a drift correction that waits for approval shows what approving it does to the VMs, as they run now", func() {
		vmsOnWorkers(vmi("web-0", "worker-0", true, "2Gi", "") + vmi("web-1", "worker-1", true, "1Gi", ""))
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		driftPSI()
		const before = "reboots 3 worker node(s) once, in 3 wave(s); 2 VMs live-migrate (3 migrations)"
		Eventually(func(g Gomega) {
			drifted := getConfig()
			g.Expect(drifted.Status.Phase).To(Equal(advisorv1alpha1.PhaseDrifted))
			g.Expect(conditionMessage(drifted, advisorv1alpha1.ConditionDrifted)).To(ContainSubstring("approving it " + before))
		}).Should(Succeed())

		By("a VM that cannot migrate starts on a worker: the correction's forecast follows")
		kubectlApply(vmi("pg-0", "worker-2", false, "4Gi", ""))
		Eventually(func(g Gomega) {
			drifted := getConfig()
			g.Expect(drifted.Status.Disruption).To(Equal(before + ", 1 blocks the drain (vms/pg-0)"))
			g.Expect(conditionMessage(drifted, advisorv1alpha1.ConditionDrifted)).To(ContainSubstring("1 blocks the drain (vms/pg-0)"))
		}).Should(Succeed())
	})
})
