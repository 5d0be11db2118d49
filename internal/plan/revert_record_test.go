package plan_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

var _ = Describe("What the applies replaced, for a revert", func() {
	// recordAndApply records what applying it replaces, as the write gate does, then
	// drafts and applies it.
	recordAndApply := func(records []advisorv1alpha1.ReplacedRecord, it plan.Item) []advisorv1alpha1.ReplacedRecord {
		GinkgoHelper()
		pi := draftOne(it)
		out, err := engine.RecordReplaced(ctx, testProfile, pi, records)
		Expect(err).NotTo(HaveOccurred())
		res, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Applied).To(BeTrue())
		return out
	}
	revertItem := func(records []advisorv1alpha1.ReplacedRecord) advisorv1alpha1.PlanItem {
		GinkgoHelper()
		p, err := engine.DraftRevert(ctx, plan.RevertRequest{Profile: testProfile, Records: records, Revision: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Items).To(HaveLen(1))
		Expect(p.Items[0].Action).To(Equal(advisorv1alpha1.ItemActionRestore))
		return p.Items[0]
	}

	It("shows no conflict for a map the profile added and a later apply of its own changed, and one when another manager changed it", func() {
		createAsOtherManager(descheduler(adminSpec))
		records := recordAndApply(nil, deschedulerItem())
		Expect(records).To(HaveLen(1))
		Expect(records[0].Fields).To(ContainElement(And(
			HaveField("Path", "spec.profileCustomizations"), HaveField("Absent", true))))

		By("applying a plan that changes a field inside the map the first apply added")
		changed := deschedulerItem()
		changed.Desired = descheduler(`
managementState: Managed
mode: Automatic
deschedulingIntervalSeconds: 60
profiles: [AffinityAndTaints, KubeVirtRelieveAndMigrate]
profileCustomizations:
  devEnableEvictionsInBackground: true
  devDeviationThresholds: AsymmetricMedium
`)
		records = recordAndApply(records, changed)
		it := revertItem(records)
		Expect(it.Conflicts).To(BeEmpty(), "the map holds what this profile applied last")
		Expect(it.Diff).To(ContainSubstring("-  profileCustomizations:"))

		By("another manager changing a field inside that map")
		patchAsOtherManager(changed.Desired, `{"spec":{"profileCustomizations":{"devDeviationThresholds":"High"}}}`)
		it = revertItem(records)
		Expect(it.Conflicts).To(ConsistOf(And(
			HaveField("Path", "spec.profileCustomizations"), HaveField("Manager", otherManager),
			HaveField("PlannedValue", "(absent)"))))
	})
})
