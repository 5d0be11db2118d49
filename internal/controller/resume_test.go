package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const statusPath = "virtplatformconfigs/" + configName + "/status"

var _ = Describe("Resuming after a crash", func() {
	BeforeEach(resetCluster)
	AfterEach(faults.clear)

	DescribeTable("rule 14: an item applied just before the operator died is recorded as applied by it on restart: no second write, no PlanStale",
		func(bypass bool) {
			createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun, BypassOptimisticLock: bypass})
			waitPhase(advisorv1alpha1.PhaseReviewRequired)
			mark := requests.mark()

			By("the KubeDescheduler is applied, then every status write is lost until the process dies")
			applied := faults.watchFor("PATCH", "kubedeschedulers/cluster")
			lost := faults.failRequests("PATCH", statusPath, 1_000_000, applied)
			patchSpec(`{"action":"Apply"}`)
			Eventually(lost.fired).Should(BeClosed())
			stopManager()
			faults.clear()
			Expect(requests.writesSince(mark, "kubedeschedulers")).To(HaveLen(1))
			before := item(getConfig(), loadaware.ItemDescheduler)
			Expect(before.State).To(Equal(advisorv1alpha1.ItemPending), "the status still shows the item as it was before its apply")
			Expect(before.Message).To(Equal("applying"), "the status written before the apply says it is on its way")
			Expect(before.Applied).To(BeNil())

			By("a fresh operator resumes")
			startManager()
			poke()
			Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
			Expect(item(getConfig(), loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted))
			Expect(requests.writesSince(mark, "kubedeschedulers")).To(HaveLen(1), "the item was applied a second time")
			// The Events of a step are recorded once the step is persisted: after the status
			// that shows the next item on its way.
			Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.EventItemAlreadyApplied))
			Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale))
			rolloutPool()
			waitPhase(advisorv1alpha1.PhaseCompleted)
		},
		Entry("with the optimistic lock", false),
		Entry("with bypassOptimisticLock", true),
	)

	It("rule 14: a MachineConfig applied just before the operator died, its pool paused, is not applied again; the pool is resumed and the rollout judged by what the pool runs", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()

		applied := faults.watchFor("PATCH", "machineconfigs/"+loadaware.PSIMachineConfigName)
		lost := faults.failRequests("PATCH", statusPath, 1_000_000, applied)
		patchSpec(`{"action":"Apply"}`)
		Eventually(lost.fired).Should(BeClosed())
		stopManager()
		faults.clear()
		pool := object(poolGVK, types.NamespacedName{Name: "worker"})
		Expect(k8s.Get(ctx, types.NamespacedName{Name: "worker"}, pool)).To(Succeed())
		Expect(targets.PoolPaused(pool)).To(BeTrue(), "the operator died holding the pool's pause")
		Expect(targets.PausedBy(pool)).To(ConsistOf(configName))

		startManager()
		poke()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress),
			"a pool that was Updated before the apply proves nothing")
		Expect(requests.writesSince(mark, "machineconfigs/"+loadaware.PSIMachineConfigName)).To(HaveLen(1))
		rolloutPool()
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, types.NamespacedName{Name: "worker"}, pool)).To(Succeed())
			g.Expect(targets.PoolPaused(pool)).To(BeFalse())
			g.Expect(targets.PausedBy(pool)).To(BeEmpty())
		}).Should(Succeed(), "the fresh operator resumes the pool it paused, once the pool rendered the batch")
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(requests.writesSince(mark, "machineconfigs/"+loadaware.PSIMachineConfigName)).To(HaveLen(1))
		Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale))
	})
})
