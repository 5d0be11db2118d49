package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// setMigrationsPerCluster sets the HyperConverged's parallelMigrationsPerCluster, which
// load-aware-rebalancing reads (it is no target of the plan), with the real kubectl.
func setMigrationsPerCluster(n string) {
	GinkgoHelper()
	kubectl("patch", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "--type=merge",
		"-p", `{"spec":{"virtualization":{"liveMigrationConfig":{"parallelMigrationsPerCluster":`+n+`}}}}`)
}

var _ = Describe("Objects a plan is rendered from", func() {
	BeforeEach(resetCluster)

	It("InputDependencyDrift: after Completed, a change of the HyperConverged's parallelMigrationsPerCluster drafts the plan again for review; reverting it returns to Completed with zero writes to targets", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		DeferCleanup(setMigrationsPerCluster, "5")
		mark := requests.mark()

		setMigrationsPerCluster("9")
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonInputDependencyDrift))
		Expect(vpc.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("an object the plan was rendered from changed"))))
		Expect(vpc.Status.Inputs).To(ContainElement(HaveField("Kind", "HyperConverged")))
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(MatchRegexp(`(?m)^-\s+total: 5$`))
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(MatchRegexp(`(?m)^\+\s+total: 9$`))
		Expect(vpc.Status.Approval.Required).To(BeTrue())
		Eventually(func() []string { return eventNotes(string(advisorv1alpha1.PhaseReviewRequired)) }).Should(ContainElement(ContainSubstring("(InputDependencyDrift)")),
			"the transition is an Event that names the reason")

		By("reverting the input")
		setMigrationsPerCluster("5")
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.Approval.Required).To(BeFalse())
		noTargetWritesSince(mark)
		Expect(requests.writesSince(mark, "hyperconvergeds")).To(BeEmpty(), "the operator never writes an input")
	})

	It("a change of an input that does not change the rendered plan only records it: no redraft, no review", func() {
		vpc := completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		revision, hash := vpc.Status.PlanRevision, vpc.Status.InputsHash
		DeferCleanup(kubectl, "label", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "example.com/team-")
		mark := requests.mark()
		kubectl("label", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "example.com/team=virt")
		Eventually(func() string { return getConfig().Status.InputsHash }).ShouldNot(Equal(hash))
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.PlanRevision).To(Equal(revision))
		noTargetWritesSince(mark)
	})
})
