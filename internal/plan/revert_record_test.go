package plan_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// recordCreated is records after the apply of pi answered res, as the write gate keeps
// them: naming the object the apply created.
func recordCreated(records []advisorv1alpha1.ReplacedRecord, pi advisorv1alpha1.PlanItem, res plan.ApplyOutcome) []advisorv1alpha1.ReplacedRecord {
	if res.CreatedUID == "" {
		return records
	}
	return plan.RecordCreated(records, pi.TargetRef, res.CreatedUID)
}

// draftRevert drafts the revert plan of records as the test profile's; it returns the
// records the plan was drafted from.
func draftRevert(records []advisorv1alpha1.ReplacedRecord) (plan.Plan, []advisorv1alpha1.ReplacedRecord) {
	GinkgoHelper()
	p, settled, err := engine.DraftRevert(ctx, plan.RevertRequest{Profile: testProfile, Records: records, Revision: 1})
	Expect(err).NotTo(HaveOccurred())
	return p, settled
}

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
		p, _ := draftRevert(records)
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

var _ = Describe("Which object a revert deletes", func() {
	// psiWith is the MachineConfig name as an administrator writes it: kernelArguments
	// only, so every other field the profile's apply sets is the profile's alone.
	psiWith := func(name string, kernelArguments ...any) *unstructured.Unstructured {
		mc := machineConfig(name, "worker")
		mc.SetLabels(nil)
		mc.Object["spec"] = map[string]any{"kernelArguments": kernelArguments}
		return mc
	}
	// recordAndApply records what applying it replaces, as the write gate does, drafts and
	// applies it, and records the object the apply created, as the write gate does.
	recordAndApply := func(records []advisorv1alpha1.ReplacedRecord, it plan.Item) []advisorv1alpha1.ReplacedRecord {
		GinkgoHelper()
		pi := draftOne(it)
		out, err := engine.RecordReplaced(ctx, testProfile, pi, records)
		Expect(err).NotTo(HaveOccurred())
		res, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Applied).To(BeTrue())
		return recordCreated(out, pi, res)
	}
	// revertPlan drafts the revert plan of records; it has one item.
	revertPlan := func(records []advisorv1alpha1.ReplacedRecord) (advisorv1alpha1.PlanItem, []advisorv1alpha1.ReplacedRecord) {
		GinkgoHelper()
		p, settled := draftRevert(records)
		Expect(p.Items).To(HaveLen(1))
		return p.Items[0], settled
	}
	// executeRevert executes a revert item as the write gate does, from records.
	executeRevert := func(it advisorv1alpha1.PlanItem, records []advisorv1alpha1.ReplacedRecord) {
		GinkgoHelper()
		res, err := engine.ApplyItem(ctx, it, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: true, Revert: plan.RecordOf(records, it.TargetRef)})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Applied).To(BeTrue())
	}

	It("restores, never deletes, an object an administrator created after the profile's write of it never happened", func() {
		name := "99-worker-psi-lost"
		pi := draftOne(psiItem(name))
		Expect(pi.Diff).To(HavePrefix("--- /dev/null"))
		records, err := engine.RecordReplaced(ctx, testProfile, pi, nil)
		Expect(err).NotTo(HaveOccurred())
		By("the write recorded is lost; an administrator creates the MachineConfig, with a kernel argument of their own")
		createAsOtherManager(psiWith(name, "psi=1", "psi_debug=1"))
		admin := live(psiWith(name))

		By("a later approved apply writes the administrator's object")
		records = recordAndApply(records, psiItem(name))
		Expect(live(admin).GetUID()).To(Equal(admin.GetUID()))

		it, records := revertPlan(records)
		Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionRestore), it.Message)
		Expect(it.Diff).To(ContainSubstring("+  - psi_debug=1"))
		executeRevert(it, records)
		after := live(admin)
		Expect(after.GetUID()).To(Equal(admin.GetUID()), "the administrator's object is still there")
		Expect(after.Object["spec"]).To(Equal(admin.Object["spec"]), "with the values it had before the apply")
		_, owned := ownedFields(after, plan.FieldManagerFor(testProfile), metav1.ManagedFieldsOperationApply)
		Expect(owned).To(BeFalse(), "the profile's fields are handed back")
	})

	It("names the object an apply created, also when the apply's answer was lost, and deletes that object", func() {
		name := "99-worker-psi-created"
		pi := draftOne(psiItem(name))
		cleanUp(psiWith(name))
		records, err := engine.RecordReplaced(ctx, testProfile, pi, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(records).To(ConsistOf(And(HaveField("Created", true), HaveField("UID", BeEmpty()))),
			"absent before the write, which may never happen")
		res, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		created := live(psiWith(name))
		Expect(res.CreatedUID).To(Equal(created.GetUID()))
		Expect(recordCreated(records, pi, res)).To(ConsistOf(And(HaveField("Created", true), HaveField("UID", created.GetUID()))))

		By("the apply's answer is lost in a crash: the revert plan finds the object the profile's write created")
		p, settled := draftRevert(records)
		Expect(settled).To(ConsistOf(HaveField("UID", created.GetUID())))
		Expect(p.Items).To(ConsistOf(HaveField("Action", advisorv1alpha1.ItemActionDelete)))

		By("rule 14: the write resumed finds it too, and is not sent again")
		records, err = engine.RecordReplaced(ctx, testProfile, pi, records)
		Expect(err).NotTo(HaveOccurred())
		Expect(records).To(ConsistOf(And(HaveField("Created", true), HaveField("UID", created.GetUID()))))
		res, err = apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.AlreadyApplied).To(BeTrue())
		it, records := revertPlan(records)
		Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionDelete), it.Message)
		executeRevert(it, records)
		expectAbsent(psiWith(name))
	})

	It("never deletes an object created again under the name of one the profile created", func() {
		name := "99-worker-psi-replaced"
		records := recordAndApply(nil, psiItem(name))
		first := live(psiWith(name))
		Expect(records).To(ConsistOf(HaveField("UID", first.GetUID())))

		By("the object is deleted and created again as it was, under the profile's field manager (a restore from a backup)")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		expectAbsent(first)
		createAsProfile(withMarks(psiItem(name).Desired))
		Expect(live(first).GetUID()).NotTo(Equal(first.GetUID()))

		it, records := revertPlan(records)
		Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionRestore), it.Message)
		Expect(it.Change).To(Equal(advisorv1alpha1.ChangeOwnershipOnly))
		Expect(it.Message).To(ContainSubstring("which this profile did not create"))
		executeRevert(it, records)
		_, owned := ownedFields(live(first), plan.FieldManagerFor(testProfile), metav1.ManagedFieldsOperationApply)
		Expect(owned).To(BeFalse(), "the profile's fields are handed back; the object stays")
	})

	It("deletes an object that existed before the first apply, was deleted by an administrator and created again by an apply", func() {
		name := "99-worker-psi-recreated"
		createAsOtherManager(psiWith(name, "psi=1", "psi_debug=1"))
		records := recordAndApply(nil, psiItem(name))
		Expect(records).To(ConsistOf(HaveField("Fields", Not(BeEmpty()))))

		By("the administrator deletes the MachineConfig; an approved correction creates it again")
		Expect(k8sClient.Delete(ctx, live(psiWith(name)))).To(Succeed())
		expectAbsent(psiWith(name))
		records = recordAndApply(records, psiItem(name))

		it, records := revertPlan(records)
		Expect(it.Action).To(Equal(advisorv1alpha1.ItemActionDelete), it.Message)
		executeRevert(it, records)
		expectAbsent(psiWith(name))
	})
})
