package plan_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

var _ = Describe("Fields handed to the user", func() {
	ignoreInterval := map[string]string{plan.IgnoreFieldsAnnotation: "/spec/deschedulingIntervalSeconds"}

	It("ignores two indices of one array as the elements they name, whichever is removed first", func() {
		target := withAnnotations(descheduler(adminSpec), map[string]string{plan.IgnoreFieldsAnnotation: "/spec/profiles/0,/spec/profiles/1"})
		createAsOtherManager(target)
		pi := draftOne(deschedulerItem())
		patchAsOtherManager(target, `{"spec":{"profiles":["AffinityAndTaints","SoftTopologyAndDuplicates"]}}`)
		snap, err := engine.Snapshot(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap).To(Equal(pi.SnapshotHash), "both changed elements are the user's")
	})

	DescribeTable("keeps the user's value of an ignored field changed after the draft",
		func(checkSnapshot bool) {
			target := withAnnotations(descheduler(adminSpec), ignoreInterval)
			createAsOtherManager(target)
			pi := draftOne(deschedulerItem())
			patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)
			out, err := apply(engine, pi, checkSnapshot)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Stale).To(BeFalse(), out.StaleReason)
			Expect(out.Applied).To(BeTrue())
			Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(1800)))
			Expect(live(target).Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"), "the managed fields are applied")
		},
		Entry("with the optimistic lock", true),
		Entry("with bypassOptimisticLock", false),
	)

	It("keeps the user's value of an ignored field when a drift correction is applied", func() {
		target := withAnnotations(descheduler(adminSpec), ignoreInterval)
		createAsOtherManager(target)
		pi := draftOne(deschedulerItem())
		out, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		pi.Applied, pi.State = out.Record, advisorv1alpha1.ItemCompleted
		patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800,"mode":"Predictive"}}`)
		dc, err := engine.CheckDrift(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(dc.InSync).To(BeFalse())
		pi.Diff, pi.SnapshotHash, pi.TargetHash, pi.Conflicts = dc.Diff, dc.SnapshotHash, dc.TargetHash, dc.Conflicts
		_, err = engine.ApplyItem(ctx, pi, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(1800)))
		Expect(live(target).Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"))
	})

	It("does not call the approved plan outdated when only an ignored field changed", func() {
		target := withAnnotations(descheduler(adminSpec), ignoreInterval)
		createAsOtherManager(target)
		item := deschedulerItem()
		pi := draftOne(item)
		patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)
		out, err := engine.ApplyItem(ctx, pi, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: true, Rendered: &item})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Outdated).To(BeFalse())
		Expect(out.Applied).To(BeTrue())
	})

	It("skips an item whose patch annotation cannot be applied to the desired object, naming the target, without failing the plan", func() {
		createAsOtherManager(withAnnotations(descheduler(adminSpec), map[string]string{
			plan.PatchAnnotation: `[{"op":"remove","path":"/spec/doesNotExist"}]`,
		}))
		p := draftPlan(deschedulerItem())
		Expect(p.Items[0].State).To(Equal(advisorv1alpha1.ItemSkipped))
		Expect(p.Items[0].Message).To(And(ContainSubstring("advisor.kubevirt.io/patch"), ContainSubstring("KubeDescheduler"),
			ContainSubstring("cannot apply it to the desired object")))
		Expect(p.Notes).To(ContainElement(HaveField("Reason", advisorv1alpha1.EventBadAnnotation)))
	})
})
