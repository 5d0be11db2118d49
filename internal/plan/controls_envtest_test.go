package plan_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// automaticAdminSpec is an administrator's KubeDescheduler already in Automatic mode, so
// a patch to Predictive shows in the diff.
const automaticAdminSpec = `
managementState: Managed
mode: Automatic
deschedulingIntervalSeconds: 3600
profiles: [AffinityAndTaints, LifecycleAndUtilization]
`

// withAnnotations returns obj carrying the annotations (besides its own).
func withAnnotations(obj *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	all := out.GetAnnotations()
	if all == nil {
		all = map[string]string{}
	}
	for k, v := range annotations {
		all[k] = v
	}
	out.SetAnnotations(all)
	return out
}

// without returns lines without the one given.
func without(lines []string, line string) []string {
	var out []string
	for _, l := range lines {
		if l != line {
			out = append(out, l)
		}
	}
	return out
}

// draftPlan drafts the items as the test profile's plan.
func draftPlan(items ...plan.Item) plan.Plan {
	p, err := engine.Draft(ctx, plan.Request{Profile: testProfile, Items: items})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Items).To(HaveLen(len(items)))
	return p
}

// badAnnotationNote matches the Warning Event a draft asks for about a bad annotation on
// the target of item.
func badAnnotationNote(item string, fragments ...string) OmegaMatcher {
	matchers := []OmegaMatcher{
		HaveField("Type", corev1.EventTypeWarning),
		HaveField("Reason", advisorv1alpha1.EventBadAnnotation),
		HaveField("Item", item),
		HaveField("Message", HavePrefix("item "+item+": not planned: ")),
	}
	for _, f := range fragments {
		matchers = append(matchers, HaveField("Message", ContainSubstring(f)))
	}
	return SatisfyAll(matchers...)
}

// expectDraftedNormally checks that the psi item of a plan was drafted as if the other
// item's target carried no annotation: the creation of its MachineConfig.
func expectDraftedNormally(pi advisorv1alpha1.PlanItem, name string) {
	Expect(pi.Name).To(Equal("enable-psi-metrics"))
	Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
	Expect(pi.Message).To(Equal("MachineConfig " + name + " adds psi=1 to the worker nodes"))
	Expect(pi.Diff).To(HavePrefix("--- /dev/null\n+++ MachineConfig " + name + " (planned)\n"))
	Expect(pi.ManagedFields).To(ContainElement("spec.kernelArguments"))
	Expect(pi.SnapshotHash).NotTo(BeEmpty())
}

var _ = Describe("User-control annotations", func() {
	Describe(plan.ModeAnnotation, func() {
		It("skips an item whose target is annotated advisor.kubevirt.io/mode: unmanaged, and writes nothing", func() {
			target := withAnnotations(descheduler(adminSpec), map[string]string{plan.ModeAnnotation: plan.ModeUnmanaged})
			createAsOtherManager(target)
			before := live(target)

			item := deschedulerItem()
			p := draftPlan(item)
			pi := p.Items[0]

			Expect(pi.State).To(Equal(advisorv1alpha1.ItemSkipped))
			Expect(pi.Message).To(Equal("left alone: KubeDescheduler openshift-kube-descheduler-operator/cluster is annotated advisor.kubevirt.io/mode: unmanaged"))
			Expect(pi.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
			Expect(pi.Diff).To(BeEmpty())
			Expect(pi.ManagedFields).To(BeEmpty())
			Expect(pi.ControlsHash).NotTo(BeEmpty(), "the annotation is remembered, so removing it redrafts the plan")
			Expect(p.Notes).To(BeEmpty(), "opting out is not a bad annotation")

			By("writing nothing when the skipped item is handed to ApplyItem anyway")
			out, err := engine.ApplyItem(ctx, pi, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: true, Rendered: &item})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Applied).To(BeFalse())
			Expect(out.Unmanaged).To(BeTrue(), "the target's opt-out is read right before any write")
			out, err = apply(engine, pi, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Applied).To(BeFalse())

			after := live(target)
			Expect(after.GetResourceVersion()).To(Equal(before.GetResourceVersion()))
			Expect(after.Object["spec"]).To(Equal(before.Object["spec"]))
			Expect(after.GetLabels()).NotTo(HaveKey(plan.ManagedByLabel))
			_, owned := ownedFields(after, plan.FieldManagerFor(testProfile), metav1.ManagedFieldsOperationApply)
			Expect(owned).To(BeFalse())
		})

		It("plans an item whose target is annotated advisor.kubevirt.io/mode: managed as if it were not annotated", func() {
			createAsOtherManager(withAnnotations(descheduler(adminSpec), map[string]string{plan.ModeAnnotation: "managed"}))

			pi := draftOne(deschedulerItem())

			Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
			removed, added := changedLines(pi.Diff)
			Expect(removed).To(ConsistOf(loadAwareRemovedLines))
			// The target already has annotations: only the profile's is added to them.
			Expect(added).To(ConsistOf(without(loadAwareAddedLines, "+  annotations:")))
		})
	})

	Describe(plan.IgnoreFieldsAnnotation, func() {
		const ignored = "/spec/deschedulingIntervalSeconds"
		var target *unstructured.Unstructured

		BeforeEach(func() {
			target = withAnnotations(descheduler(adminSpec), map[string]string{plan.IgnoreFieldsAnnotation: ignored})
			createAsOtherManager(target)
		})

		It("leaves an ignored field out of the managed fields, the diff and the snapshot hash, so changing it after the draft does not make the plan stale", func() {
			pi := draftOne(deschedulerItem())

			Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
			Expect(pi.IgnoredFields).To(Equal([]string{ignored}))

			By("not setting the profile's value of the field in the desired state")
			desired, err := plan.DesiredObject(pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(desired.Object["spec"]).NotTo(HaveKeyWithValue("deschedulingIntervalSeconds", int64(60)))
			Expect(desired.Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"), "the other fields are planned as rendered")

			By("leaving it out of the managed fields")
			Expect(pi.ManagedFields).NotTo(ContainElement("spec.deschedulingIntervalSeconds"))
			Expect(pi.ManagedFields).To(ContainElements("spec.mode", "spec.profiles", "spec.managementState"))

			By("leaving it out of the diff")
			Expect(pi.Diff).NotTo(ContainSubstring("deschedulingIntervalSeconds: "))
			removed, added := changedLines(pi.Diff)
			Expect(removed).To(ContainElement("-  mode: Predictive"))
			Expect(added).To(ContainElement("+  mode: Automatic"))

			By("not changing the snapshot hash when the field changes out of band")
			snapshot, err := engine.Snapshot(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).To(Equal(pi.SnapshotHash))
			patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)
			snapshot, err = engine.Snapshot(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).To(Equal(pi.SnapshotHash))

			check, err := engine.Recheck(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(check.Diff).To(Equal(pi.Diff))
			Expect(check.SnapshotHash).To(Equal(pi.SnapshotHash))
			Expect(check.ChangedPaths).NotTo(ContainElement("spec.deschedulingIntervalSeconds"))

			By("still counting a change of a managed field")
			patchAsOtherManager(target, `{"spec":{"mode":"Automatic"}}`)
			snapshot, err = engine.Snapshot(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).NotTo(Equal(pi.SnapshotHash))
		})

		It("does not count a later out-of-band change of an ignored field as drift", func() {
			pi := draftOne(deschedulerItem())
			out, err := apply(engine, pi, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Applied).To(BeTrue())
			pi.Applied = out.Record
			Expect(pi.Applied.Fields).NotTo(ContainElement("spec.deschedulingIntervalSeconds"))
			Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(3600)),
				"the apply leaves the ignored field as the user set it")

			patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)

			dc, err := engine.CheckDrift(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(dc.InSync).To(BeTrue())
			Expect(dc.ControlsChanged).To(BeFalse())
			check, err := engine.Recheck(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(check.Diff).To(Equal(plan.NoChanges))
			Expect(check.ChangedPaths).To(BeEmpty())
			snapshot, err := engine.Snapshot(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).To(Equal(pi.SnapshotHash))
			Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(1800)))

			By("still counting a change of a managed field as drift")
			patchAsOtherManager(target, `{"spec":{"mode":"Predictive"}}`)
			dc, err = engine.CheckDrift(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(dc.InSync).To(BeFalse())
			Expect(dc.ChangedPaths).To(Equal([]string{"spec.mode"}))
			Expect(dc.Diff).NotTo(ContainSubstring("deschedulingIntervalSeconds: "))
		})

		It("makes the plan stale when the annotation itself changes", func() {
			pi := draftOne(deschedulerItem())

			patchAsOtherManager(target, `{"metadata":{"annotations":{"advisor.kubevirt.io/ignore-fields":"/spec/deschedulingIntervalSeconds,/spec/mode"}}}`)

			snapshot, err := engine.Snapshot(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).NotTo(Equal(pi.SnapshotHash))
			redrafted := draftOne(deschedulerItem())
			Expect(redrafted.ControlsHash).NotTo(Equal(pi.ControlsHash))
			Expect(redrafted.IgnoredFields).To(Equal([]string{"/spec/deschedulingIntervalSeconds", "/spec/mode"}))
			Expect(redrafted.ManagedFields).NotTo(ContainElement("spec.mode"))
			Expect(redrafted.Diff).NotTo(ContainSubstring("mode: Automatic"))
		})
	})

	It("leaves an ignored field the target does not have out of the desired state", func() {
		createAsOtherManager(withAnnotations(descheduler(`
managementState: Managed
mode: Predictive
profiles: [AffinityAndTaints]
`), map[string]string{plan.IgnoreFieldsAnnotation: "/spec/deschedulingIntervalSeconds, /spec/profileCustomizations/devDeviationThresholds"}))

		pi := draftOne(deschedulerItem())

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		desired, err := plan.DesiredObject(pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(desired.Object["spec"]).NotTo(HaveKey("deschedulingIntervalSeconds"))
		Expect(desired.Object["spec"]).To(HaveKeyWithValue("profileCustomizations",
			map[string]any{"devEnableEvictionsInBackground": true}))
		Expect(pi.ManagedFields).NotTo(ContainElement("spec.deschedulingIntervalSeconds"))
		Expect(pi.ManagedFields).NotTo(ContainElement("spec.profileCustomizations.devDeviationThresholds"))
		Expect(pi.ManagedFields).To(ContainElement("spec.profileCustomizations.devEnableEvictionsInBackground"))
		Expect(pi.Diff).NotTo(ContainSubstring("deschedulingIntervalSeconds: "))
		Expect(pi.Diff).NotTo(ContainSubstring("devDeviationThresholds: "))
		Expect(pi.Diff).To(ContainSubstring("+    devEnableEvictionsInBackground: true"))
	})

	It("leaves a list element named by an array index in ignore-fields to the user", func() {
		target := withAnnotations(descheduler(adminSpec), map[string]string{plan.IgnoreFieldsAnnotation: "/spec/profiles/1"})
		createAsOtherManager(target)

		pi := draftOne(deschedulerItem())

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(pi.IgnoredFields).To(Equal([]string{"/spec/profiles/1"}))
		desired, err := plan.DesiredObject(pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(desired.Object["spec"]).To(HaveKeyWithValue("profiles", []any{"AffinityAndTaints", "LifecycleAndUtilization"}),
			"the ignored element keeps its live value, the others are planned")
		Expect(pi.Diff).NotTo(ContainSubstring("KubeVirtRelieveAndMigrate"))
		Expect(pi.Diff).NotTo(ContainSubstring("LifecycleAndUtilization"))

		By("not changing the snapshot hash when the ignored element changes")
		patchAsOtherManager(target, `{"spec":{"profiles":["AffinityAndTaints","SoftTopologyAndDuplicates"]}}`)
		snapshot, err := engine.Snapshot(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot).To(Equal(pi.SnapshotHash))

		By("changing it when another element changes")
		patchAsOtherManager(target, `{"spec":{"profiles":["EvictPodsWithPVC","SoftTopologyAndDuplicates"]}}`)
		snapshot, err = engine.Snapshot(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot).NotTo(Equal(pi.SnapshotHash))
	})

	Describe(plan.PatchAnnotation, func() {
		It("applies a patch annotation on the KubeDescheduler to the desired state before the dry-run: spec.mode Predictive shows in the diff", func() {
			target := withAnnotations(descheduler(automaticAdminSpec), map[string]string{
				plan.PatchAnnotation: `[{"op":"replace","path":"/spec/mode","value":"Predictive"}]`,
			})
			createAsOtherManager(target)

			item := deschedulerItem()
			pi := draftOne(item)

			Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
			desired, err := plan.DesiredObject(pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(desired.Object["spec"]).To(HaveKeyWithValue("mode", "Predictive"))
			Expect(desired.Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(60)), "the rest is planned as rendered")
			Expect(item.Desired.Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"), "Draft must not patch the caller's object")
			Expect(pi.ManagedFields).To(ContainElement("spec.mode"))
			removed, added := changedLines(pi.Diff)
			Expect(removed).To(ContainElement("-  mode: Automatic"))
			Expect(added).To(ContainElement("+  mode: Predictive"))

			By("applying the patched desired state, as the profile renders it with the annotation")
			out, err := engine.ApplyItem(ctx, pi, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: true, Rendered: &item})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Outdated).To(BeFalse())
			Expect(out.Stale).To(BeFalse())
			Expect(out.Applied).To(BeTrue())
			Expect(live(target).Object["spec"]).To(HaveKeyWithValue("mode", "Predictive"))
			check, err := engine.Recheck(ctx, testProfile, pi)
			Expect(err).NotTo(HaveOccurred())
			Expect(check.Diff).To(Equal(plan.NoChanges))
		})

		It("skips an item whose MachineConfig target carries a patch annotation, with a BadAnnotation note, and drafts the other item of the plan normally", func() {
			createAsOtherManager(descheduler(adminSpec))
			mc := withAnnotations(machineConfig("99-worker-psi-patched", "worker"), map[string]string{
				plan.PatchAnnotation: `[{"op":"replace","path":"/spec/kernelArguments","value":["psi=0"]}]`,
			})
			createAsOtherManager(mc)
			before := live(mc)

			p := draftPlan(deschedulerItem(), psiItem("99-worker-psi-patched"))

			Expect(p.Items[0].Name).To(Equal("enable-load-aware-descheduling"))
			Expect(p.Items[0].State).To(Equal(advisorv1alpha1.ItemPending))
			removed, added := changedLines(p.Items[0].Diff)
			Expect(removed).To(ConsistOf(loadAwareRemovedLines))
			Expect(added).To(ConsistOf(loadAwareAddedLines))

			refused := p.Items[1]
			Expect(refused.Name).To(Equal("enable-psi-metrics"))
			Expect(refused.State).To(Equal(advisorv1alpha1.ItemSkipped))
			Expect(refused.Message).To(HavePrefix("not planned: advisor.kubevirt.io/patch on MachineConfig 99-worker-psi-patched: "))
			Expect(refused.Message).To(ContainSubstring("patches are refused on MachineConfigs"))
			Expect(refused.Message).To(ContainSubstring("Fix or remove the annotation; the other items are not affected"))
			Expect(refused.Diff).To(BeEmpty())
			Expect(refused.ManagedFields).To(BeEmpty())
			Expect(refused.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
			Expect(refused.ControlsHash).NotTo(BeEmpty())

			Expect(p.Notes).To(HaveLen(1))
			Expect(p.Notes).To(ContainElement(badAnnotationNote("enable-psi-metrics", "patches are refused on MachineConfigs")))

			after := live(mc)
			Expect(after.GetResourceVersion()).To(Equal(before.GetResourceVersion()))
			Expect(after.Object["spec"]).To(HaveKeyWithValue("kernelArguments", []any{"psi=1"}))
		})
	})

	DescribeTable("skips an item whose patch annotation makes a desired state the API server refuses, naming the annotation, the target and the server's complaint, with a BadAnnotation note, and drafts the other item of the plan normally",
		func(patch, complaint string) {
			target := withAnnotations(descheduler(adminSpec), map[string]string{plan.PatchAnnotation: patch})
			createAsOtherManager(target)
			before := live(target)
			other := psiItem("99-worker-psi-beside-refused-patch")
			cleanUp(other.Desired)

			p := draftPlan(deschedulerItem(), other)

			bad := p.Items[0]
			Expect(bad.Name).To(Equal("enable-load-aware-descheduling"))
			Expect(bad.State).To(Equal(advisorv1alpha1.ItemSkipped), bad.Message)
			Expect(bad.Message).To(HavePrefix("not planned: advisor.kubevirt.io/patch on KubeDescheduler openshift-kube-descheduler-operator/cluster: " +
				"annotation advisor.kubevirt.io/patch: the API server refuses the desired object it makes: "))
			Expect(bad.Message).To(ContainSubstring(complaint))
			Expect(bad.Message).To(HaveSuffix("Fix or remove the annotation; the other items are not affected"))
			Expect(bad.Diff).To(BeEmpty())
			Expect(bad.ManagedFields).To(BeEmpty())
			Expect(bad.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
			Expect(bad.ControlsHash).NotTo(BeEmpty(), "fixing or removing the annotation drafts the plan again")

			Expect(p.Notes).To(HaveLen(1))
			Expect(p.Notes).To(ContainElement(badAnnotationNote("enable-load-aware-descheduling", complaint)))

			expectDraftedNormally(p.Items[1], "99-worker-psi-beside-refused-patch")
			expectAbsent(other.Desired)
			Expect(live(target).GetResourceVersion()).To(Equal(before.GetResourceVersion()))
		},
		Entry("a mode outside the enum",
			`[{"op":"replace","path":"/spec/mode","value":"Sometimes"}]`,
			`Unsupported value: "Sometimes"`),
		Entry("mutually exclusive profiles (CEL rule of the 4.20 CRD)",
			`[{"op":"replace","path":"/spec/profiles","value":["LongLifecycle","KubeVirtRelieveAndMigrate"]}]`,
			"cannot declare LongLifecycle and KubeVirtRelieveAndMigrate profiles simultaneously"),
		Entry("a value of the wrong type",
			`[{"op":"replace","path":"/spec/deschedulingIntervalSeconds","value":"hourly"}]`,
			"spec.deschedulingIntervalSeconds"),
		// Server-side apply answers a field the schema does not declare with a 500.
		Entry("a field the CRD does not declare",
			`[{"op":"add","path":"/spec/devNotInThisGeneration","value":true}]`,
			".spec.devNotInThisGeneration: field not declared in schema"),
	)

	DescribeTable("fails an item the API server refuses as today when its patch annotation did not change what it plans",
		func(annotations map[string]string) {
			target := withAnnotations(descheduler(adminSpec), annotations)
			createAsOtherManager(target)
			item := deschedulerItem()
			item.Desired = descheduler("managementState: Managed\nprofiles: [LongLifecycle, KubeVirtRelieveAndMigrate]")

			p := draftPlan(item)

			refused := p.Items[0]
			Expect(refused.State).To(Equal(advisorv1alpha1.ItemFailed))
			Expect(refused.Message).To(HavePrefix("the API server refused the dry-run of KubeDescheduler openshift-kube-descheduler-operator/cluster: "))
			Expect(refused.Message).To(ContainSubstring("cannot declare LongLifecycle and KubeVirtRelieveAndMigrate profiles simultaneously"))
			Expect(refused.Message).NotTo(ContainSubstring(plan.PatchAnnotation))
			Expect(p.Notes).To(HaveLen(1))
			Expect(p.Notes[0].Reason).To(Equal(advisorv1alpha1.EventItemRejected))
		},
		Entry("a patch whose only operation is a test that passes",
			map[string]string{plan.PatchAnnotation: `[{"op":"test","path":"/spec/managementState","value":"Managed"}]`}),
		Entry("a patch that sets a value the profile already sets",
			map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/spec/managementState","value":"Managed"}]`}),
		Entry("ignore-fields, and no patch",
			map[string]string{plan.IgnoreFieldsAnnotation: "/spec/logLevel"}),
	)

	DescribeTable("skips an item whose target carries a bad annotation, with a BadAnnotation note, and drafts the other item of the plan normally",
		func(annotations map[string]string, fragment string) {
			target := withAnnotations(descheduler(adminSpec), annotations)
			createAsOtherManager(target)
			before := live(target)
			other := psiItem("99-worker-psi-beside-bad-annotation")
			cleanUp(other.Desired)

			p := draftPlan(deschedulerItem(), other)

			bad := p.Items[0]
			Expect(bad.Name).To(Equal("enable-load-aware-descheduling"))
			Expect(bad.State).To(Equal(advisorv1alpha1.ItemSkipped))
			Expect(bad.Message).To(HavePrefix("not planned: "))
			Expect(bad.Message).To(ContainSubstring("on KubeDescheduler openshift-kube-descheduler-operator/cluster"))
			Expect(bad.Message).To(ContainSubstring(fragment))
			Expect(bad.Message).To(HaveSuffix("Fix or remove the annotation; the other items are not affected"))
			Expect(bad.Diff).To(BeEmpty())
			Expect(bad.ManagedFields).To(BeEmpty())

			Expect(p.Notes).To(HaveLen(1))
			Expect(p.Notes).To(ContainElement(badAnnotationNote("enable-load-aware-descheduling", fragment)))

			expectDraftedNormally(p.Items[1], "99-worker-psi-beside-bad-annotation")
			expectAbsent(other.Desired)
			Expect(live(target).GetResourceVersion()).To(Equal(before.GetResourceVersion()))
		},
		Entry("malformed ignore-fields (a dotted path, not a JSON pointer)",
			map[string]string{plan.IgnoreFieldsAnnotation: "spec.deschedulingIntervalSeconds"},
			`annotation advisor.kubevirt.io/ignore-fields: JSON pointer "spec.deschedulingIntervalSeconds" must start with /`),
		Entry("malformed ignore-fields (a bad ~ escape among good pointers)",
			map[string]string{plan.IgnoreFieldsAnnotation: "/spec/mode, /spec/a~2"},
			"~ must be followed by 0 or 1"),
		Entry("ignore-fields naming metadata.name",
			map[string]string{plan.IgnoreFieldsAnnotation: "/metadata/name"},
			"touches metadata/name, which the operator needs"),
		Entry("an unknown mode",
			map[string]string{plan.ModeAnnotation: "paused"},
			`annotation advisor.kubevirt.io/mode: unknown mode "paused"`),
		Entry("a patch that is not JSON",
			map[string]string{plan.PatchAnnotation: "mode: Predictive"},
			"annotation advisor.kubevirt.io/patch: not an RFC 6902 JSON patch"),
		Entry("a patch on /metadata/name",
			map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/metadata/name","value":"other"}]`},
			"touches metadata/name, which a patch may not change"),
		Entry("a patch on /kind",
			map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/kind","value":"ConfigMap"}]`},
			"touches kind, which a patch may not change"),
		Entry("a patch whose test operation fails",
			map[string]string{plan.PatchAnnotation: `[{"op":"test","path":"/spec/mode","value":"Predictive"},{"op":"remove","path":"/spec/mode"}]`},
			"cannot apply it to the desired object"),
		Entry("a patch on /status",
			map[string]string{plan.PatchAnnotation: `[{"op":"add","path":"/status","value":{}}]`},
			"touches status, which a patch may not change"),
	)
})
