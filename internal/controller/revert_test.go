package controller_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

var _ = Describe("Reverting an execution", func() {
	BeforeEach(resetCluster)

	It("puts every managed path back, deletes what the profile created and releases its fields, after a review of the revert plan", func() {
		before := descheduler()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments("enable-psi-metrics").Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		applied := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(applied.Status.Replaced).NotTo(BeEmpty(), "what each apply replaced is recorded")
		manager := plan.FieldManagerFor(string(advisorv1alpha1.ProfileLoadAwareRebalancing))
		Expect(managers(descheduler())).To(ContainElement(manager))

		By("asking for the revert with spec.action still Apply: it is shown, never executed unreviewed")
		patchSpec(`{"revert":true}`)
		shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(shown.Status.Approval.Command).To(ContainSubstring(shown.Status.PlanHash))
		Expect(plan.PlanHash(shown.Status.PlanRevision, shown.Status.Items, "worker")).To(Equal(shown.Status.PlanHash))
		actions := map[string]advisorv1alpha1.ItemAction{}
		for _, it := range shown.Status.Items {
			actions[it.TargetRef.Kind] = it.Action
			Expect(it.Diff).NotTo(BeEmpty())
		}
		Expect(actions).To(HaveKeyWithValue("MachineConfig", advisorv1alpha1.ItemActionDelete))
		Expect(actions).To(HaveKeyWithValue("KubeDescheduler", advisorv1alpha1.ItemActionRestore))
		Expect(shown.Status.Disruption).To(ContainSubstring("worker"), "deleting the MachineConfig rolls the pool out")
		Consistently(func() *unstructured.Unstructured { return read(mcGVK, psiKey) }).ShouldNot(BeNil())

		By("approving the revert plan shown")
		approve()
		Eventually(func() bool { return read(mcGVK, psiKey) == nil }).Should(BeTrue())
		rolloutPool()
		reverted := waitPhase(advisorv1alpha1.PhaseReverted)
		expectConditions(reverted, "Reverted")
		Expect(reverted.Status.Replaced).To(BeEmpty())

		after := descheduler()
		Expect(after.Object["spec"]).To(Equal(before.Object["spec"]), "every managed path is back")
		Expect(managers(after)).NotTo(ContainElement(manager))
		Expect(slices.Contains(managers(after), manager)).To(BeFalse())
		var restoredOwner string
		for _, e := range after.GetManagedFields() {
			if e.FieldsV1 != nil && strings.Contains(e.FieldsV1.GetRawString(), `"f:mode"`) {
				restoredOwner = e.Manager
			}
		}
		Expect(restoredOwner).To(Equal("kubectl-client-side-apply"), "the restored values go back to the field manager that owned them before")

		By("setting spec.revert back to false: the profile's plan is shown again for review")
		patchSpec(`{"revert":false}`)
		again := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(again.Status.Items).NotTo(ContainElement(HaveField("Action", advisorv1alpha1.ItemActionDelete)))
	})
})

var _ = Describe("Reverting after a failure", func() {
	BeforeEach(resetCluster)

	It("reverts what a config that ended CompletedWithErrors did apply, and nothing else", func() {
		before := descheduler()
		freezeDescheduler()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action: advisorv1alpha1.ActionApply, FailurePolicy: advisorv1alpha1.FailurePolicyContinue,
		})
		Eventually(itemState).WithArguments("enable-psi-metrics").Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompletedWithErrors)
		Expect(read(mcGVK, psiKey)).NotTo(BeNil())

		patchSpec(`{"revert":true}`)
		shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(shown.Status.Items).To(HaveLen(1), "only the MachineConfig was applied: the frozen KubeDescheduler was never written")
		Expect(shown.Status.Items[0].Action).To(Equal(advisorv1alpha1.ItemActionDelete))
		approve()
		Eventually(func() bool { return read(mcGVK, psiKey) == nil }).Should(BeTrue())
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseReverted)
		Expect(descheduler().Object["spec"]).To(Equal(before.Object["spec"]))
	})
})
