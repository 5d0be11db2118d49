package controller_test

import (
	"slices"
	"strings"
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

var _ = Describe("Executing a plan", func() {
	BeforeEach(resetCluster)

	It("rule 5: runs items strictly in order; under Abort the first failure fails the config and the later items stay Pending", func() {
		freezeDescheduler()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		patchSpec(`{"action":"Apply"}`)

		failed := waitPhase(advisorv1alpha1.PhaseFailed)
		expectConditions(failed, "Failed")
		Expect(conditionReason(failed, "Failed")).To(Equal("ItemFailed"))
		first := item(failed, loadaware.ItemDescheduler)
		Expect(first.State).To(Equal(advisorv1alpha1.ItemFailed))
		Expect(first.Message).To(ContainSubstring("frozen for maintenance"))
		Expect(item(failed, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemPending))
		Consistently(func() *unstructured.Unstructured { return read(mcGVK, psiKey) }).Should(BeNil(),
			"the item after a failed one must not run under Abort")
		Eventually(eventReasons).Should(ContainElements("ItemFailed", "Failed"))
		Expect(failed.Status.ItemsSummary).To(Equal("0/2"))
	})

	It("rule 5: under Continue goes on after a failure and ends CompletedWithErrors", func() {
		freezeDescheduler()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action: advisorv1alpha1.ActionApply, FailurePolicy: advisorv1alpha1.FailurePolicyContinue,
		})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(itemState(loadaware.ItemDescheduler)).To(Equal(advisorv1alpha1.ItemFailed))
		Expect(read(mcGVK, psiKey)).NotTo(BeNil())
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseCompletedWithErrors)
		expectConditions(vpc, "Completed", "Failed")
		Expect(item(vpc, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(vpc.Status.ItemsSummary).To(Equal("1/2"))
	})

	It("rule 5: starts an item only after the one before it is Completed", func() {
		mark := requests.mark()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)

		writes := requests.writesSince(mark)
		descheduler := indexOf(writes, "PATCH /apis/operator.openshift.io/v1/namespaces/openshift-kube-descheduler-operator/kubedeschedulers/cluster")
		machineConfig := indexOf(writes, "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigs/99-worker-psi-karg")
		Expect(descheduler).To(BeNumerically(">=", 0), "writes: %v", writes)
		Expect(machineConfig).To(BeNumerically(">", descheduler), "writes: %v", writes)
		Expect(writes[descheduler+1:machineConfig]).To(ContainElement(HaveSuffix("/virtplatformconfigs/"+configName+"/status")),
			"the first item's completion is recorded before the second item is applied")
		first, second := item(vpc, loadaware.ItemDescheduler), item(vpc, loadaware.ItemPSI)
		Expect(second.LastTransitionTime.Time).NotTo(BeTemporally("<", first.LastTransitionTime.Time))
	})

	It("rule 6: a MachineConfig item waits until its pool runs a configuration that holds it: a pool that was Updated before the apply proves nothing", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		waiting := getConfig()
		Expect(waiting.Status.Phase).To(Equal(advisorv1alpha1.PhaseInProgress))
		expectConditions(waiting, "InProgress")
		Expect(item(waiting, loadaware.ItemPSI).Message).To(And(
			ContainSubstring("MachineConfigPool worker targets rendered-worker-"),
			ContainSubstring("which lacks kernel argument psi=1 of MachineConfig 99-worker-psi-karg")))

		rolloutPool()
		done := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(item(done, loadaware.ItemPSI).Message).To(ContainSubstring("MachineConfigPool worker updated to rendered-worker-"))
	})

	It("rule 6: the items that roll out are applied while their pool is paused, and the pool is resumed once it rendered them all, each write after the status that authorizes it", func() {
		probeKernelArgs.Store(true)
		DeferCleanup(func() { probeKernelArgs.Store(false) })
		DeferCleanup(deleteAndWait, object(mcGVK, types.NamespacedName{Name: probeMachineConfig}))
		createProbe(advisorv1alpha1.ActionDryRun)
		review := waitProbe(advisorv1alpha1.PhaseReviewRequired)
		Expect(review.Status.Rollouts).To(ConsistOf(And(
			HaveField("Pool", "worker"), HaveField("Items", ContainElement("probe-kernel-args")),
			HaveField("Pause", BeTrue()), HaveField("Reboot", BeTrue()), HaveField("Waves", BeNumerically(">", 0)))))
		Expect(review.Status.Disruption).To(MatchRegexp(`^reboots \d+ worker node\(s\) once, in \d+ wave\(s\)$`))
		Expect(conditionMessage(review, advisorv1alpha1.ConditionReviewRequired)).To(ContainSubstring("approving it " + review.Status.Disruption))

		mark := requests.mark()
		kubectl("patch", "vpc", string(advisorv1alpha1.ProfilePlatformBaseline), "--type=merge", "-p", `{"spec":{"action":"Apply"}}`)
		name := types.NamespacedName{Name: string(advisorv1alpha1.ProfilePlatformBaseline)}
		probe := &advisorv1alpha1.VirtPlatformConfig{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, name, probe)).To(Succeed())
			g.Expect(item(probe, "probe-kernel-args").State).To(Equal(advisorv1alpha1.ItemInProgress))
		}).Should(Succeed())
		Expect(item(probe, "probe-kernel-args").Message).To(ContainSubstring("the pool is resumed once it has rendered the whole batch"))
		Consistently(func() bool { return targets.PoolPaused(workerPool()) }).Should(BeTrue(),
			"the pool is not resumed before its configuration holds the whole batch")

		By("the Machine Config Operator renders the batch: the pool is resumed")
		rolloutPool()
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, name, probe)).To(Succeed())
			g.Expect(probe.Status.Rollouts).To(ConsistOf(HaveField("PauseState", advisorv1alpha1.PauseResumed)))
		}).Should(Succeed())

		// Events are sent on their own time: only the writes of objects count here.
		writes := slices.DeleteFunc(requests.writesSince(mark), func(w string) bool { return strings.Contains(w, "/events") })
		pause := indexOf(writes, "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker")
		apply := indexOf(writes, "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigs/"+probeMachineConfig)
		Expect(pause).To(BeNumerically(">=", 0), "writes: %v", writes)
		Expect(apply).To(BeNumerically(">", pause), "writes: %v", writes)
		resume := indexOf(writes[apply:], "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker")
		Expect(resume).To(BeNumerically(">", 0), "writes: %v", writes)
		for _, at := range []int{pause, apply, apply + resume} {
			Expect(writes[at-1]).To(HaveSuffix("/virtplatformconfigs/"+name.Name+"/status"), "writes: %v", writes)
		}
		pool := object(poolGVK, types.NamespacedName{Name: "worker"})
		Expect(k8s.Get(ctx, types.NamespacedName{Name: "worker"}, pool)).To(Succeed())
		Expect(targets.PoolPaused(pool)).To(BeFalse())
		Expect(targets.PausedBy(pool)).To(BeEmpty())
		done := waitProbe(advisorv1alpha1.PhaseCompleted)
		Expect(item(done, "probe-kernel-args").Message).To(ContainSubstring("MachineConfigPool worker updated to rendered-worker-"))
	})

	It("rule 6: a degraded pool fails the item with a message naming the pool", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		degradePool("node worker-2 failed to boot with the new kernel arguments")
		vpc := waitPhase(advisorv1alpha1.PhaseFailed)
		psi := item(vpc, loadaware.ItemPSI)
		Expect(psi.State).To(Equal(advisorv1alpha1.ItemFailed))
		Expect(psi.Message).To(And(ContainSubstring("MachineConfigPool worker is Degraded"), ContainSubstring("worker-2 failed to boot")))
	})

	It("rule 6: a MachineConfig no pool selects fails its item", func() {
		deleteAndWait(object(mcpGVK, types.NamespacedName{Name: "worker"}))
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		vpc := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(item(vpc, loadaware.ItemPSI).Message).To(ContainSubstring("no MachineConfigPool selects MachineConfig 99-worker-psi-karg"))
		Expect(item(vpc, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted))
	})

	It("rule 6: waitTimeout fails a rollout that does not finish, even when no event arrives", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action: advisorv1alpha1.ActionApply, WaitTimeout: &metav1.Duration{Duration: 30 * time.Minute},
		})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		clock.Advance(31 * time.Minute)
		vpc := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(item(vpc, loadaware.ItemPSI).Message).To(And(
			ContainSubstring("within waitTimeout 30m0s"), ContainSubstring("MachineConfigPool worker")))
	})

	It("pauses when the action is set back to DryRun during execution, and resumes on Apply", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		patchSpec(`{"action":"DryRun"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("Paused"))
		paused := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(paused.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("execution paused at item enable-psi-metrics"))))
		rolloutPool()
		poke()
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseReviewRequired))

		patchSpec(`{"action":"Apply"}`)
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.ItemsSummary).To(Equal("2/2"))
	})

	It("resumes a failed plan with its failed item after the cause is fixed and the plan approved again", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		degradePool("node worker-1 is unreachable")
		waitPhase(advisorv1alpha1.PhaseFailed)

		rolloutPool()
		approve()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.ItemsSummary).To(Equal("2/2"))
		Expect(eventReasons()).NotTo(ContainElement("PlanStale"), "the operator's own apply does not make its plan stale")
	})
})

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
