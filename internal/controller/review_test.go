package controller_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

var _ = Describe("Drafting and reviewing a plan", func() {
	BeforeEach(resetCluster)

	It("rule 1: a change of spec.action or approvedPlanHash alone never redrafts the plan; any other spec change redrafts it, in every phase", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		By("ReviewRequired: pinning an approval to another hash changes nothing in the plan")
		patchSpec(`{"approvedPlanHash":"` + strings.Repeat("0", 64) + `"}`)
		afterPin := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(afterPin.Generation).To(BeNumerically(">", reviewed.Generation))
		Expect(afterPin.Status.Items).To(Equal(reviewed.Status.Items))
		Expect(afterPin.Status.PlanHash).To(Equal(reviewed.Status.PlanHash))
		Expect(afterPin.Status.PlanSpecHash).To(Equal(reviewed.Status.PlanSpecHash))
		patchSpec(`{"approvedPlanHash":null}`)

		By("ReviewRequired: an option change redrafts")
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":120}}}`)
		Eventually(func() any {
			return desiredSpecField(item(getConfig(), loadaware.ItemDescheduler), "deschedulingIntervalSeconds")
		}).Should(BeEquivalentTo(120))
		redrafted := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(redrafted.Status.PlanSpecHash).NotTo(Equal(reviewed.Status.PlanSpecHash))
		Expect(*redrafted.Status.AppliedOptions.LoadAware.DeschedulingIntervalSeconds).To(BeEquivalentTo(120))
		Expect(item(redrafted, loadaware.ItemDescheduler).Diff).To(ContainSubstring("+  deschedulingIntervalSeconds: 120"))

		By("ReviewRequired: a failurePolicy change redrafts too, though the desired states stay the same")
		patchSpec(`{"failurePolicy":"Continue"}`)
		Eventually(func() string { return getConfig().Status.PlanSpecHash }).ShouldNot(Equal(redrafted.Status.PlanSpecHash))

		By("InProgress: an option change redrafts and the new plan, not the old one, is executed")
		patchSpec(`{"action":"Apply"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerInterval()).To(BeEquivalentTo(120))
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":300}}}`)
		Eventually(deschedulerInterval).Should(BeEquivalentTo(300))
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		completed := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(desiredSpecField(item(completed, loadaware.ItemDescheduler), "deschedulingIntervalSeconds")).To(BeEquivalentTo(300))

		By("Completed: an action change alone leaves the plan as it is")
		patchSpec(`{"action":"DryRun"}`)
		stillCompleted := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(stillCompleted.Status.Items).To(Equal(completed.Status.Items))
		Expect(stillCompleted.Status.PlanHash).To(Equal(completed.Status.PlanHash))

		By("Completed: an option change redrafts; with action DryRun it waits for review")
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":600}}}`)
		review := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(review, loadaware.ItemDescheduler).Diff).To(And(
			ContainSubstring("-  deschedulingIntervalSeconds: 300"), ContainSubstring("+  deschedulingIntervalSeconds: 600")))
		Expect(deschedulerInterval()).To(BeEquivalentTo(300), "a DryRun plan writes nothing")

		By("Drifted: an option change redrafts; taking the drifted field back from its editor waits for an approval given after it was shown")
		patchSpec(`{"action":"Apply"}`)
		waitPhase(advisorv1alpha1.PhaseCompleted)
		editDescheduler(`{"spec":{"mode":"Predictive"}}`)
		waitPhase(advisorv1alpha1.PhaseDrifted)
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":900}}}`)
		conflict := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(conflict, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonFieldConflicts))
		Expect(deschedulerInterval()).To(BeEquivalentTo(600))
		runApprovalCommand()
		final := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(900))
		mode, _, _ := unstructured.NestedString(descheduler().Object, "spec", "mode")
		Expect(mode).To(Equal("Automatic"), "the redrafted plan corrected the drift as well")
		Expect(*final.Status.AppliedOptions.LoadAware.DeschedulingIntervalSeconds).To(BeEquivalentTo(900))
	})

	It("rule 2: DryRun drafts and shows the plan but writes nothing outside the config; a plan without changes is Completed at once", func() {
		before := descheduler()
		mark := requests.mark()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		Expect(vpc.Status.Items).To(HaveLen(2))
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(ContainSubstring("+  - KubeVirtRelieveAndMigrate"))
		Expect(item(vpc, loadaware.ItemPSI).Diff).To(HavePrefix("--- /dev/null"))
		Expect(vpc.Status.PlanHash).To(HaveLen(64))
		Expect(vpc.Status.SourceSnapshotHash).To(HaveLen(64))
		Expect(vpc.Status.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactHigh))
		Expect(vpc.Status.ItemsSummary).To(Equal("0/2"))
		Expect(vpc.Status.OperatorVersion).To(Equal(operatorVersion))

		Consistently(func() string { return descheduler().GetResourceVersion() }).Should(Equal(before.GetResourceVersion()))
		Expect(read(mcGVK, psiKey)).To(BeNil(), "the PSI MachineConfig must not be created by a dry run")
		Expect(managedByOperator(descheduler())).To(BeFalse())
		for _, w := range requests.writesSince(mark) {
			Expect(w).To(Or(ContainSubstring("/virtplatformconfigs/"+configName+"/status"), ContainSubstring("/events")),
				"a DryRun config wrote outside itself: %s", w)
		}

		By("applying the plan once, then drafting it again: every target already matches")
		patchSpec(`{"action":"Apply"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		deleteAndWait(getConfig())
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		noChange := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(conditionReason(noChange, "Completed")).To(Equal("NoChanges"))
		for _, it := range noChange.Status.Items {
			Expect(it.Diff).To(Equal(plan.NoChanges))
			Expect(it.State).To(Equal(advisorv1alpha1.ItemCompleted))
			Expect(it.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
		}
		expectConditions(noChange, "Completed", "Ready")
	})

	It("rule 3: a config created with action Apply drafts and executes without stopping for review when its plan takes no field another manager owns", func() {
		deleteAndWait(object(deschedulerGVK, deschedulerKey))
		createConfigAsIs(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(managedByOperator(descheduler())).To(BeTrue())
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.ItemsSummary).To(Equal("2/2"))
		Eventually(eventReasons).Should(ContainElements("Drafting", "InProgress", "Completed"))
		Expect(eventReasons()).NotTo(ContainElement("ReviewRequired"))
	})

	It("executes with an approvedPlanHash equal to status.planHash", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + vpc.Status.PlanHash + `"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})

	It("stays in ReviewRequired with reason ApprovalMismatch when approvedPlanHash is another plan's", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		other := strings.Repeat("ab", 32)
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + other + `"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("ApprovalMismatch"))
		mismatch := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		expectConditions(mismatch, "ReviewRequired")
		Expect(mismatch.Status.Conditions).To(ContainElement(HaveField("Message", And(
			ContainSubstring(other), ContainSubstring(vpc.Status.PlanHash)))))
		Eventually(eventReasons).Should(ContainElement("ApprovalMismatch"))
		Consistently(func() bool { return managedByOperator(descheduler()) }).Should(BeFalse())
		Expect(read(mcGVK, psiKey)).To(BeNil())

		By("correcting the pin executes the plan")
		patchSpec(`{"approvedPlanHash":"` + vpc.Status.PlanHash + `"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
	})
})
