package controller_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
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

// psiRevertItem is the revert item of the PSI MachineConfig in a revert plan.
func psiRevertItem(vpc *advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.PlanItem {
	GinkgoHelper()
	for _, it := range vpc.Status.Items {
		if it.TargetRef.Kind == mcGVK.Kind && it.TargetRef.Name == psiKey.Name {
			return it
		}
	}
	Fail("the revert plan has no item for the PSI MachineConfig")
	return advisorv1alpha1.PlanItem{}
}

// psiRecord is the record status.replaced holds of the PSI MachineConfig.
func psiRecord(vpc *advisorv1alpha1.VirtPlatformConfig) *advisorv1alpha1.ReplacedRecord {
	GinkgoHelper()
	rec := plan.RecordOf(vpc.Status.Replaced, item(vpc, loadaware.ItemPSI).TargetRef)
	Expect(rec).NotTo(BeNil(), "status.replaced records the PSI MachineConfig")
	return rec
}

// kernelArguments reads the kernel arguments of a MachineConfig.
func kernelArguments(mc *unstructured.Unstructured) []string {
	GinkgoHelper()
	args, _, err := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	Expect(err).NotTo(HaveOccurred())
	return args
}

// revertAsShown asks for the revert plan, returns it as shown, then approves it and waits
// until the config is Reverted, rolling the worker pool out once the PSI MachineConfig's
// revert item waits for it.
func revertAsShown(check func(shown *advisorv1alpha1.VirtPlatformConfig)) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	patchSpec(`{"revert":true}`)
	shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
	check(shown)
	approve()
	Eventually(itemState).WithArguments(psiRevertItem(shown).Name).Should(Equal(advisorv1alpha1.ItemInProgress))
	rolloutPool()
	return waitPhase(advisorv1alpha1.PhaseReverted)
}

var _ = Describe("Reverting a target someone else created or deleted", func() {
	BeforeEach(resetCluster)
	AfterEach(faults.clear)

	It("restores, never deletes, a MachineConfig an administrator created after the first apply's write of it was lost", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)

		By("the first apply's write of the PSI MachineConfig is lost, until the operator stops")
		lost := faults.failRequests("PATCH", "machineconfigs/"+loadaware.PSIMachineConfigName, 1_000_000, nil)
		patchSpec(`{"action":"Apply"}`)
		Eventually(lost.fired).Should(BeClosed())
		stopManager()
		faults.clear()
		Expect(read(mcGVK, psiKey)).To(BeNil(), "the write never reached the API server")

		By("an administrator creates the MachineConfig by hand")
		createPSIMachineConfigByHand()
		admin := read(mcGVK, psiKey)

		By("the operator starts again: the plan went stale; the fresh plan is approved and applied")
		startManager()
		poke()
		Eventually(func() string { return conditionReason(getConfig(), "ReviewRequired") }).Should(Equal("PlanStale"))
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		approve()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		completed := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(kernelArguments(read(mcGVK, psiKey))).To(Equal([]string{"psi=1"}))
		Expect(*psiRecord(completed)).To(And(HaveField("Created", false), HaveField("UID", BeEmpty()),
			HaveField("Fields", ContainElement(And(HaveField("Path", "spec.kernelArguments"), HaveField("Value", `["psi=1","psi_debug=1"]`))))),
			"recorded as the administrator's object, with its values before the apply")

		By("the revert plan restores the administrator's MachineConfig")
		reverted := revertAsShown(func(shown *advisorv1alpha1.VirtPlatformConfig) {
			it := psiRevertItem(shown)
			Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionRestore), it.Message)
			Expect(it.Diff).To(ContainSubstring("+  - psi_debug=1"))
		})
		expectConditions(reverted, "Reverted")
		after := read(mcGVK, psiKey)
		Expect(after).NotTo(BeNil(), "the administrator's MachineConfig was deleted")
		Expect(after.GetUID()).To(Equal(admin.GetUID()))
		Expect(kernelArguments(after)).To(Equal([]string{"psi=1", "psi_debug=1"}))
		Expect(managers(after)).NotTo(ContainElement(plan.FieldManagerFor(configName)))
	})

	It("deletes a MachineConfig that existed before the first apply, was deleted by an administrator and created again by an approved correction", func() {
		createPSIMachineConfigByHand()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		By("the administrator deletes the MachineConfig: the config drifts")
		deleteAndWait(object(mcGVK, psiKey))
		waitPhase(advisorv1alpha1.PhaseDrifted)

		By("the correction is approved: it creates the MachineConfig again")
		approve()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		recreated := read(mcGVK, psiKey)
		Expect(recreated).NotTo(BeNil())
		rolloutPool()
		completed := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(*psiRecord(completed)).To(And(HaveField("Created", true), HaveField("UID", recreated.GetUID()), HaveField("Fields", BeEmpty())))

		By("the revert plan deletes the MachineConfig the correction created")
		revertAsShown(func(shown *advisorv1alpha1.VirtPlatformConfig) {
			it := psiRevertItem(shown)
			Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionDelete), it.Message)
		})
		Expect(read(mcGVK, psiKey)).To(BeNil())
	})

	It("rule 14: deletes a MachineConfig created just before the operator died, whose status write was lost", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()
		applied := faults.watchFor("PATCH", "machineconfigs/"+loadaware.PSIMachineConfigName)
		lostStatus := faults.failRequests("PATCH", statusPath, 1_000_000, applied)
		patchSpec(`{"action":"Apply"}`)
		Eventually(lostStatus.fired).Should(BeClosed())
		stopManager()
		faults.clear()
		created := read(mcGVK, psiKey)
		Expect(created).NotTo(BeNil())

		startManager()
		poke()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		completed := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(requests.writesSince(mark, "machineconfigs/"+loadaware.PSIMachineConfigName)).To(HaveLen(1), "the write is not sent again")
		Expect(*psiRecord(completed)).To(And(HaveField("Created", true), HaveField("UID", created.GetUID())),
			"the object the lost answer named is found again on restart")

		revertAsShown(func(shown *advisorv1alpha1.VirtPlatformConfig) {
			it := psiRevertItem(shown)
			Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionDelete), it.Message)
		})
		Expect(read(mcGVK, psiKey)).To(BeNil())
	})
})
