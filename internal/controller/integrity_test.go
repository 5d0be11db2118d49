package controller_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// tamperWithDesiredInterval changes the desired descheduling interval in status, as
// someone with write access to the status subresource could.
func tamperWithDesiredInterval(interval int64, rehash bool) {
	GinkgoHelper()
	vpc := getConfig()
	before := vpc.DeepCopy()
	for i := range vpc.Status.Items {
		it := &vpc.Status.Items[i]
		if it.Name != loadaware.ItemDescheduler {
			continue
		}
		var obj map[string]any
		Expect(json.Unmarshal(it.DesiredState.Raw, &obj)).To(Succeed())
		Expect(unstructured.SetNestedField(obj, interval, "spec", "deschedulingIntervalSeconds")).To(Succeed())
		raw, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		it.DesiredState = &runtime.RawExtension{Raw: raw}
	}
	if rehash {
		var pauses []string
		for _, ro := range vpc.Status.Rollouts {
			if ro.Pause {
				pauses = append(pauses, ro.Pool)
			}
		}
		vpc.Status.PlanHash = plan.PlanHash(vpc.Status.PlanRevision, vpc.Status.Items, pauses...)
	}
	Expect(k8s.Status().Patch(ctx, vpc, client.MergeFrom(before))).To(Succeed())
}

var _ = Describe("What is applied is what was approved", func() {
	BeforeEach(resetCluster)

	It("refuses a plan whose desired state was changed in status: Failed with reason PlanIntegrity, nothing applied", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()
		tamperWithDesiredInterval(7, false)
		patchSpec(`{"action":"Apply"}`)
		vpc := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionFailed)).To(Equal(advisorv1alpha1.ReasonPlanIntegrity))
		noTargetWritesSince(mark)
		Expect(deschedulerInterval()).NotTo(BeEquivalentTo(7))
	})

	It("re-renders before applying: a desired state changed in status together with its hash is not applied, the plan is drafted again", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		tamperWithDesiredInterval(7, true)
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + getConfig().Status.PlanHash + `"}`)
		// The approval was pinned to the altered plan: the redrafted one is another.
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).
			Should(Equal(advisorv1alpha1.ReasonApprovalMismatch))
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("now differs from the approved plan"))))
		Expect(desiredSpecField(item(vpc, loadaware.ItemDescheduler), "deschedulingIntervalSeconds")).To(BeEquivalentTo(60))
		Expect(deschedulerInterval()).NotTo(BeEquivalentTo(7))
		Expect(managedByOperator(descheduler())).To(BeFalse())
	})

	It("restarts the wait clock of an item when a paused execution resumes", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action: advisorv1alpha1.ActionApply, WaitTimeout: &metav1.Duration{Duration: 30 * time.Minute},
		})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		patchSpec(`{"action":"DryRun"}`)
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("Paused"))

		By("a pause longer than waitTimeout")
		clock.Advance(2 * time.Hour)
		patchSpec(`{"action":"Apply"}`)
		Consistently(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress),
			"the wait starts again at the resume: the pause does not count")
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("shows an item that leaves the plan as released, and hands its fields back when the plan is applied", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		patchSpec(`{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false}}}`)
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		released := item(vpc, loadaware.ItemPSI)
		Expect(released.Action).To(Equal(advisorv1alpha1.ItemActionRelease))
		Expect(released.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(released.Message).To(ContainSubstring("released"))
		Expect(managedByOperator(read(mcGVK, psiKey))).To(BeTrue(), "nothing is released before the approval")

		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		mc := read(mcGVK, psiKey)
		Expect(mc).NotTo(BeNil(), "a released target is left as it is")
		args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
		Expect(args).To(ContainElement("psi=1"))
		Expect(managedByOperator(mc)).To(BeFalse(), "the profile's fields are handed back: %s", describeManagers(mc))
		Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.EventItemReleased))

		By("a released target is no longer watched for drift")
		kubectl("patch", "machineconfig", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
		Consistently(func(g Gomega) {
			vpc := getConfig()
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted), "conditions: %s; events: %v", describeConditions(vpc), eventReasons())
		}).Should(Succeed())
	})

	It("keeps watching an item for drift when the plan that would release it is replaced by one with no changes", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		patchSpec(`{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false}}}`)
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(vpc, loadaware.ItemPSI).Action).To(Equal(advisorv1alpha1.ItemActionRelease))

		By("turning PSI back on before approving: every target is already as planned")
		patchSpec(`{"options":{"loadAware":{"enablePSIMetrics":true}}}`)
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(conditionReason(vpc, "Completed")).To(Equal(advisorv1alpha1.ReasonNoChanges))
		psi := item(vpc, loadaware.ItemPSI)
		Expect(psi.Action).NotTo(Equal(advisorv1alpha1.ItemActionRelease))
		Expect(psi.Applied).NotTo(BeNil(), "an item already as planned is recorded as applied")

		By("an out-of-band change of the PSI MachineConfig is drift")
		kubectl("patch", "machineconfig", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		Expect(item(drifted, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(item(drifted, loadaware.ItemPSI).Diff).To(ContainSubstring("+  - psi=1"))
	})
})

var _ = Describe("Pinned approvals", func() {
	BeforeEach(resetCluster)

	It("rule 13: a drift correction under a pinned approval shows ApprovalMismatch naming both hashes and the command that approves it", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		pinned := reviewed.Status.PlanHash
		patchSpec(fmt.Sprintf(`{"action":"Apply","approvedPlanHash":%q}`, pinned))
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		mark := requests.mark()
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":902}}`)
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		Expect(conditionReason(drifted, advisorv1alpha1.ConditionDrifted)).To(Equal(advisorv1alpha1.ReasonApprovalMismatch))
		Expect(drifted.Status.PlanHash).NotTo(Equal(pinned))
		Eventually(func() []string { return eventNotes(advisorv1alpha1.ReasonApprovalMismatch) }).Should(ContainElement(And(
			ContainSubstring(pinned), ContainSubstring(drifted.Status.PlanHash))))
		noTargetWritesSince(mark)

		By("the command given approves the correction, without a round trip through DryRun")
		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})

	It("rule 13: after PlanStale the message gives the command that approves the fresh plan, which works while the action is still Apply", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).Should(Equal(advisorv1alpha1.ReasonPlanStale))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(stale.Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("set spec.action to Apply again"))))
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})
})

func describeManagers(obj *unstructured.Unstructured) string {
	var parts []string
	for _, mf := range obj.GetManagedFields() {
		parts = append(parts, fmt.Sprintf("%s/%s/%s", mf.Manager, mf.Operation, mf.Subresource))
	}
	return strings.Join(parts, ", ")
}
