package controller_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// mixedFleet is the namespace of the VMs of the spec below.
const mixedFleet = "mixed-fleet"

// workerRollout is the worker pool's rollout in status.
func workerRollout(vpc *advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.PoolRollout {
	for _, ro := range vpc.Status.Rollouts {
		if ro.Pool == "worker" {
			return ro
		}
	}
	return advisorv1alpha1.PoolRollout{}
}

// startVMFleet runs, until the spec ends, a pool simulator that plays the Machine Config
// Operator and KubeVirt on n worker nodes with perNode VMs each (vm-<node>-<i>, started by
// a VirtualMachine whose run strategy is Always; change adjusts each), at maxUnavailable 1,
// under the cluster-wide eviction strategy LiveMigrate. A node reboots in reboot.
func startVMFleet(n, perNode int, reboot time.Duration, change func(node string, i int, vm *poolsim.VMSpec)) *poolsim.Simulator {
	GinkgoHelper()
	installKubeVirtCRDs()
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mixedFleet}}))).To(Succeed())
	kubectlApply(`
apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata: {name: kubevirt, namespace: ` + mixedFleet + `}
spec:
  configuration: {evictionStrategy: LiveMigrate}`)
	sim, stop, err := poolsim.Run(ctx, restConfig, poolsim.Options{
		RebootTime: reboot, VMs: true, MigrationTime: 50 * time.Millisecond, Out: GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	nodes, err := sim.CreateNodes(ctx, "worker", n)
	for _, name := range nodes {
		DeferCleanup(deleteAndWait, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	Expect(err).NotTo(HaveOccurred())
	// Registered after the Nodes' cleanup, so it runs before it: the simulator stops first.
	DeferCleanup(func() { Expect(stop()).To(Succeed(), "the simulator stops") })
	for _, node := range nodes {
		Expect(sim.SetAllocatableMemory(ctx, node, "40Gi")).To(Succeed())
		for i := range perNode {
			vm := poolsim.VMSpec{Namespace: mixedFleet, Name: fmt.Sprintf("vm-%s-%d", node, i), Node: node, RunStrategy: "Always"}
			if change != nil {
				change(node, i, &vm)
			}
			Expect(sim.CreateVM(ctx, vm)).To(Succeed())
		}
	}
	Eventually(func() int64 {
		n, _, _ := unstructured.NestedInt64(workerPool().Object, "status", "machineCount")
		return n
	}).Should(BeEquivalentTo(n), "the pool reports its nodes")
	return sim
}

// startMixedFleet is startVMFleet with 6 workers and 10 VMs each:
//   - worker-0, drained first, runs vm-worker-0-1 and -2 with the eviction strategy None
//     (shut down, then started again by their VirtualMachine);
//   - worker-4 runs pg-0, which cannot live-migrate, so it would block the drain;
//   - worker-5, drained last, runs vm-worker-5-0, which tolerates every taint;
//   - every other VM live-migrates.
func startMixedFleet() *poolsim.Simulator {
	GinkgoHelper()
	return startVMFleet(6, 10, 50*time.Millisecond, func(node string, i int, vm *poolsim.VMSpec) {
		switch {
		case node == "worker-0" && (i == 1 || i == 2):
			vm.EvictionStrategy = "None"
		case node == "worker-4" && i == 0:
			vm.Name, vm.NotMigratable = "pg-0", true
		case node == "worker-5" && i == 0:
			vm.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}
	})
}

// stopVM sets the run strategy of the VirtualMachine to Halted.
func stopVM(name string) {
	GinkgoHelper()
	Expect(k8s.Patch(ctx, object(targets.VirtualMachine.GVK, types.NamespacedName{Namespace: mixedFleet, Name: name}),
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runStrategy":"Halted"}}`)))).To(Succeed())
}

var _ = Describe("What a rollout does to the VMs, against the simulator", func() {
	BeforeEach(resetCluster)

	It("6 workers × 10 VMs: the forecast shown before the approval is the split and the migrations the drains then make, the batch holds on the VM that cannot migrate until it is stopped, and status sets what happened beside the forecast", func() {
		sim := startMixedFleet()

		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		var shown *advisorv1alpha1.VirtPlatformConfig
		Eventually(func(g Gomega) {
			shown = getConfig()
			g.Expect(shown.Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired))
			vms := workerRollout(shown).VMs
			g.Expect(vms).NotTo(BeNil())
			g.Expect(vms.LiveMigrate + vms.Restart + vms.Block).To(BeEquivalentTo(60))
		}).WithTimeout(time.Minute).Should(Succeed())
		forecast := workerRollout(shown).VMs
		Expect(forecast.LiveMigrate).To(BeEquivalentTo(57))
		Expect(forecast.Restart).To(BeEquivalentTo(2))
		Expect(forecast.Restarting.Names).To(Equal([]string{mixedFleet + "/vm-worker-0-1", mixedFleet + "/vm-worker-0-2"}))
		Expect(forecast.Block).To(BeEquivalentTo(1))
		Expect(forecast.Blocking.Names).To(Equal([]string{mixedFleet + "/pg-0"}))
		Expect(forecast.Migrations).To(BeEquivalentTo(8*2+49), "the 8 VMs of the first wave that migrate move twice, the other 49 once")
		Expect(forecast.MayExceed.Names).To(Equal([]string{mixedFleet + "/vm-worker-5-0"}))
		Expect(shown.Status.Disruption).To(Equal("reboots 6 worker node(s) once, in 6 wave(s); 57 VMs live-migrate (65 migrations), " +
			"2 restart, 1 blocks the drain (" + mixedFleet + "/pg-0); 1 may move more often (" + mixedFleet + "/vm-worker-5-0)"))

		By("approving: the batch holds, naming the VM that would block the drain")
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + shown.Status.PlanHash + `"}`)
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonDrainBlocked))
		Expect(conditionMessage(getConfig(), advisorv1alpha1.ConditionInProgress)).To(ContainSubstring("MachineConfigPool worker: " + mixedFleet + "/pg-0"))
		Consistently(func(g Gomega) {
			g.Expect(itemState(loadaware.ItemPSI)).To(Equal(advisorv1alpha1.ItemPending))
			g.Expect(sim.Migrations()).To(BeEmpty(), "no drain starts")
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("stopping the VM: the batch goes on by itself and the pool rolls out")
		stopVM("pg-0")
		done := &advisorv1alpha1.VirtPlatformConfig{}
		Eventually(func(g Gomega) {
			done = getConfig()
			g.Expect(done.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		ro := workerRollout(done)
		Expect(ro.VMs.Block).To(BeZero(), "the forecast the rollout started from: pg-0 was stopped")
		Expect(ro.VMs.Migrations).To(Equal(forecast.Migrations))
		migrated := sim.Migrations()
		total := 0
		for _, n := range migrated {
			total += n
		}
		Expect(total).To(BeEquivalentTo(forecast.Migrations), "the drains made as many migrations as forecast")
		Expect(len(migrated)).To(BeEquivalentTo(forecast.LiveMigrate), "every VM forecast to live-migrate did, and no other")
		Expect(slices.Sorted(maps.Keys(sim.Shutdowns()))).To(Equal(forecast.Restarting.Names), "the VMs forecast to restart were shut down")

		actual := ro.VMsActual
		Expect(actual).NotTo(BeNil(), "status sets what happened beside the forecast")
		Expect(actual.UnknownReason).To(BeEmpty())
		Expect(actual.Migrations).To(BeEquivalentTo(total))
		Expect(actual.MigratedVMs).To(BeEquivalentTo(len(migrated)))
		Expect(actual.MaxPerVM).To(BeEquivalentTo(2))
		Expect(actual.Restarts).To(HaveValue(BeEquivalentTo(2)))
		Expect(actual.Blocked).To(BeZero())
		Expect(actual.MovedMore).To(BeNil())
		Expect(actual.AsForecast).To(BeTrue())
		Expect(actual.Duration).NotTo(BeNil())
		Expect(actual.Summary).To(HavePrefix("forecast 65 migration(s), 2 restart(s); actual 65 migration(s) of 57 VM(s) (at most 2 per VM), 2 restart(s), 0 blocked drain(s), in "))
		Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.EventVMsAsForecast))
		for _, node := range []string{"worker-0", "worker-5"} {
			Expect(sim.Reboots(node)).To(Equal(1), "one reboot per node")
		}
	})

	It("a VM that blocks a drain during the rollout gets a Warning Event naming it and its node, and status and an Event say the rollout did not go as forecast", func() {
		sim := startVMFleet(3, 2, 3*time.Second, nil)
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(func(g Gomega) {
			g.Expect(workerRollout(getConfig()).RolloutStartedAt).NotTo(BeNil())
		}).WithTimeout(time.Minute).Should(Succeed())

		By("a VM that cannot migrate starts on the node drained last, once the rollout runs")
		Expect(sim.CreateVM(ctx, poolsim.VMSpec{Namespace: mixedFleet, Name: "pg-0", Node: "worker-2", RunStrategy: "Always",
			NotMigratable: true})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(advisorv1alpha1.EventVMDrainBlocked)).To(ContainElement(
				ContainSubstring("VM " + mixedFleet + "/pg-0 blocks the drain of node worker-2")))
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func() []string { return sim.BlockingDrain("worker-2") }).WithTimeout(time.Minute).
			Should(Equal([]string{mixedFleet + "/pg-0"}), "the drain is blocked indeed")

		stopVM("pg-0")
		var done *advisorv1alpha1.VirtPlatformConfig
		Eventually(func(g Gomega) {
			done = getConfig()
			g.Expect(done.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		actual := workerRollout(done).VMsActual
		Expect(actual).NotTo(BeNil())
		Expect(actual.Blocked).To(BeEquivalentTo(1))
		Expect(actual.Blocking.Names).To(Equal([]string{mixedFleet + "/pg-0"}))
		Expect(actual.AsForecast).To(BeFalse())
		Eventually(func() []string { return eventNotes(advisorv1alpha1.EventVMsNotAsForecast) }).Should(ContainElement(ContainSubstring("blocked a drain: " + mixedFleet + "/pg-0")))
	})
})
