package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// workerPool reads the worker MachineConfigPool.
func workerPool() *unstructured.Unstructured {
	GinkgoHelper()
	return read(poolGVK, types.NamespacedName{Name: "worker"})
}

// pausePoolByHand pauses (or resumes) the worker pool as an administrator would.
func pausePoolByHand(paused bool) {
	GinkgoHelper()
	value := "false"
	if paused {
		value = "true"
	}
	kubectl("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":`+value+`}}`)
}

// conditionMessage is the message of condition t.
func conditionMessage(vpc *advisorv1alpha1.VirtPlatformConfig, t string) string {
	GinkgoHelper()
	_, message := conditionText(vpc, t)
	return message
}

func inProgressReason() string {
	return conditionReason(getConfig(), advisorv1alpha1.ConditionInProgress)
}

var _ = Describe("Rolling out to nodes", func() {
	BeforeEach(resetCluster)

	It("an aggressive drift correction applied before the pool rendered the drift completes once the pool runs the restored content under the same rendered name", func() {
		clock.Advance(time.Hour) // a full token bucket for every target
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})
		rendered, _, _ := unstructured.NestedString(workerPool().Object, "status", "configuration", "name")

		By("psi=1 is removed by hand, and corrected before the Machine Config Operator renders the change")
		kubectl("patch", "mc", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
		Eventually(func() []string {
			args, _, _ := unstructured.NestedStringSlice(read(mcGVK, types.NamespacedName{Name: loadaware.PSIMachineConfigName}).Object, "spec", "kernelArguments")
			return args
		}).Should(Equal([]string{"psi=1"}))
		rolloutPool()
		now, _, _ := unstructured.NestedString(workerPool().Object, "status", "configuration", "name")
		Expect(now).To(Equal(rendered), "the restored content renders the name it had")
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(item(getConfig(), loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
	})

	It("a plan drafted again while its pool still rolls out waits for the rollout, and reports a pool that degrades, instead of saying Completed", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))

		By("raising waitTimeout while the pool is slow redrafts a plan whose targets are all as planned")
		patchSpec(`{"waitTimeout":"2h"}`)
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonAwaitingRollout))
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseInProgress))
		Expect(conditionReason(getConfig(), advisorv1alpha1.ConditionReady)).NotTo(Equal(advisorv1alpha1.ReasonApplied))

		By("the pool degrades: the item fails, naming the pool")
		degradePool("Node worker-2 is reporting: \"error pulling the new OS image\"")
		failed := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(item(failed, loadaware.ItemPSI).Message).To(And(
			ContainSubstring("MachineConfigPool worker is Degraded"), ContainSubstring("error pulling the new OS image")))
	})

	It("the batch is held while ClusterVersion version is Progressing, the items before it are not, and the upgrade's end releases it", func() {
		cv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
			"metadata": map[string]any{"name": "version"},
			"spec":     map[string]any{"clusterID": "6b8b4567-327b-4c6f-a7e3-1f0f6f4f3c2a"},
		}}
		Expect(k8s.Create(ctx, cv)).To(Succeed())
		DeferCleanup(deleteAndWait, cv)
		setProgressing := func(status string) {
			GinkgoHelper()
			cv.Object["status"] = map[string]any{
				"availableUpdates": nil, "observedGeneration": cv.GetGeneration(), "versionHash": "x4A2bIHl7yo=",
				"desired": map[string]any{"version": "4.20.3", "image": "quay.io/openshift-release-dev/ocp-release:4.20.3-x86_64"},
				"conditions": []any{map[string]any{
					"type": "Progressing", "status": status, "message": "Working towards 4.20.3",
					"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
				}},
			}
			Expect(k8s.Status().Update(ctx, cv)).To(Succeed())
		}
		setProgressing("True")

		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonAwaitingClusterUpgrade))
		held := getConfig()
		Expect(conditionMessage(held, advisorv1alpha1.ConditionInProgress)).To(ContainSubstring("Working towards 4.20.3"))
		Expect(item(held, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted), "the items before the batch are not held")
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemPending))
		Expect(targets.PoolPaused(workerPool())).To(BeFalse())

		setProgressing("False")
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("outside the maintenance window the batch waits with the next window's start; inside one it starts", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply,
			MaintenanceWindow: &advisorv1alpha1.MaintenanceWindow{Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}})
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow))
		next := time.Date(clock.Now().UTC().Year()+1, time.January, 1, 0, 0, 0, 0, time.UTC)
		Expect(conditionMessage(getConfig(), advisorv1alpha1.ConditionInProgress)).To(ContainSubstring("the next one starts " + next.Format(time.RFC3339)))
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemPending))

		patchSpec(`{"maintenanceWindow":{"schedule":"* * * * *","duration":"1h"}}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("a pool paused by somebody else is never resumed by the operator: the batch is applied and waits until they resume it", func() {
		pausePoolByHand(true)
		DeferCleanup(pausePoolByHand, false)
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Eventually(func() string { return item(getConfig(), loadaware.ItemPSI).Message }).
			Should(ContainSubstring("MachineConfigPool worker is paused by somebody else: the rollout starts when it is resumed"))
		Consistently(func() bool { return targets.PoolPaused(workerPool()) }).Should(BeTrue())
		Expect(getConfig().Status.Rollouts).To(ConsistOf(HaveField("PauseState", advisorv1alpha1.PauseExternal)))

		pausePoolByHand(false)
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("a config deleted while it holds a pool's pause, and while no operator ran, has its pause given back when an operator starts", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		By("the operator dies right after it applied the MachineConfig, the pool paused")
		applied := faults.watchFor("PATCH", "machineconfigs/"+loadaware.PSIMachineConfigName)
		lost := faults.failRequests("PATCH", statusPath, 1_000_000, applied)
		patchSpec(`{"action":"Apply"}`)
		Eventually(lost.fired).Should(BeClosed())
		stopManager()
		faults.clear()
		Expect(targets.PausedBy(workerPool())).To(ConsistOf(configName))
		Expect(targets.PoolPaused(workerPool())).To(BeTrue())

		By("the config is deleted while no operator runs")
		deleteAndWait(getConfig())
		startManager()
		Eventually(func() bool { return targets.PoolPaused(workerPool()) }).Should(BeFalse())
		Expect(targets.PausedBy(workerPool())).To(BeEmpty())
	})
})
