package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

var _ = Describe("Maintenance windows", func() {
	BeforeEach(resetCluster)

	DescribeTable("a window the API server accepts but that cannot open fails the draft, before any approval or write, saying what is wrong; fixing it drafts the plan",
		func(window advisorv1alpha1.MaintenanceWindow, says string) {
			mark := requests.mark()
			createConfigAsIs(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply, MaintenanceWindow: &window})
			failed := waitPhase(advisorv1alpha1.PhaseFailed)
			reason, message := conditionText(failed, advisorv1alpha1.ConditionFailed)
			Expect(reason).To(Equal(advisorv1alpha1.ReasonInvalidMaintenanceWindow))
			Expect(message).To(And(ContainSubstring("spec.maintenanceWindow"), ContainSubstring(says)))
			Expect(failed.Status.Items).To(BeEmpty(), "nothing is shown to approve")
			Expect(requests.writesSince(mark, "kubedeschedulers")).To(BeEmpty())
			Expect(requests.writesSince(mark, "machineconfig")).To(BeEmpty())

			patchSpec(`{"action":"DryRun","maintenanceWindow":{"schedule":"0 22 * * *","duration":"4h","timeZone":"UTC"}}`)
			waitPhase(advisorv1alpha1.PhaseReviewRequired)
		},
		Entry("a minute and an hour out of range", advisorv1alpha1.MaintenanceWindow{
			Schedule: "61 25 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}, "61"),
		Entry("an unknown time zone", advisorv1alpha1.MaintenanceWindow{
			Schedule: "0 22 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus_Mons"}, "Mars/Olympus_Mons"),
	)

	It("a window made invalid after the approval holds the batch in InProgress, saying why, until it is fixed; changing the window needs no new approval", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply,
			MaintenanceWindow: &advisorv1alpha1.MaintenanceWindow{Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}})
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow))
		revision := getConfig().Status.PlanRevision

		patchSpec(`{"maintenanceWindow":{"schedule":"61 25 * * *"}}`)
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonInvalidMaintenanceWindow))
		Expect(conditionMessage(getConfig(), advisorv1alpha1.ConditionInProgress)).To(ContainSubstring("fix it to go on"))
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseInProgress))
		Expect(itemState(loadaware.ItemPSI)).To(Equal(advisorv1alpha1.ItemPending))

		patchSpec(`{"maintenanceWindow":{"schedule":"* * * * *"}}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(getConfig().Status.PlanRevision).To(Equal(revision), "the window decides when, not what: the plan and its approval stay")
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})
})
