package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

var _ = Describe("The optimistic lock", func() {
	BeforeEach(resetCluster)

	It("rule 4: returns to ReviewRequired with reason PlanStale when a managed field of a target changed after review, and applies nothing", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("PlanStale"))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		expectConditions(stale, "ReviewRequired")
		Eventually(eventReasons).Should(ContainElement("PlanStale"))
		Eventually(func() []string { return eventNotes("PlanStale") }).Should(ContainElement(ContainSubstring(loadaware.ItemDescheduler)))

		By("the fresh plan shows the change made after the review")
		Expect(stale.Status.SourceSnapshotHash).NotTo(Equal(reviewed.Status.SourceSnapshotHash))
		Expect(stale.Status.PlanHash).NotTo(Equal(reviewed.Status.PlanHash))
		Expect(item(stale, loadaware.ItemDescheduler).Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 1800"))

		By("nothing was applied, and the stale approval does not carry over to the fresh plan")
		Consistently(func() bool { return managedByOperator(descheduler()) }).Should(BeFalse())
		Expect(read(mcGVK, psiKey)).To(BeNil())
		Expect(deschedulerInterval()).To(BeEquivalentTo(1800))
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseReviewRequired))

		By("a fresh approval executes the fresh plan")
		approve()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})

	It("rule 4: a stale-plan redraft interrupted by an API error still needs a fresh approval", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		profileReader.failNext("KubeDescheduler", 1)
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("PlanStale"))
		Consistently(func() bool { return managedByOperator(descheduler()) }).Should(BeFalse())
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseReviewRequired))
	})

	It("rule 4: treats a target that appeared after review as a change", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(reviewed, loadaware.ItemPSI).Diff).To(HavePrefix("--- /dev/null"))

		createPSIMachineConfigByHand()
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("PlanStale"))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Eventually(func() []string { return eventNotes("PlanStale") }).Should(ContainElement(ContainSubstring(loadaware.ItemPSI)))
		Expect(item(stale, loadaware.ItemPSI).Diff).NotTo(HavePrefix("--- /dev/null"))
		Expect(item(stale, loadaware.ItemPSI).Diff).To(ContainSubstring("-  - psi_debug=1"))
		Expect(managedByOperator(descheduler())).To(BeFalse(), "no item runs when any target went stale")
	})

	It("rule 4: treats a target that disappeared after review as a change", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		deleteAndWait(object(deschedulerGVK, deschedulerKey))
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("PlanStale"))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(stale, loadaware.ItemDescheduler).Diff).To(HavePrefix("--- /dev/null"))
		Expect(descheduler()).To(BeNil())
	})

	It("rule 4: does not call a plan stale when only fields it does not manage changed", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		editDescheduler(`{"spec":{"logLevel":"Debug"},"metadata":{"annotations":{"team":"platform"}}}`)
		patchSpec(`{"action":"Apply"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(eventReasons()).NotTo(ContainElement("PlanStale"))
		logLevel := descheduler().Object["spec"].(map[string]any)["logLevel"]
		Expect(logLevel).To(Equal("Debug"), "a field the plan does not manage keeps the administrator's value")
	})

	It("rule 4: applies a plan that went stale when bypassOptimisticLock is set", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun, BypassOptimisticLock: true})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		patchSpec(`{"action":"Apply"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
		Expect(eventReasons()).NotTo(ContainElement("PlanStale"))
	})
})
