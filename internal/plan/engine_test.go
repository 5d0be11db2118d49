package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

const (
	testProfile = "load-aware-rebalancing"
	// otherManager is the field manager of whoever configured the targets before the plan.
	otherManager = "cluster-admin"
)

// descheduler is the KubeDescheduler singleton with the given spec (YAML).
func descheduler(spec string) *unstructured.Unstructured {
	return object(`
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: ` + deschedulerNamespace + `
spec:
` + indentBy(2, spec))
}

// machineConfig is a MachineConfig adding a kernel argument, for the pool of role.
func machineConfig(name, role string) *unstructured.Unstructured {
	return object(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + name + `
  labels:
    machineconfiguration.openshift.io/role: ` + role + `
spec:
  config:
    ignition:
      version: 3.2.0
  kernelArguments: [psi=1]
`)
}

// loadAwareSpec is what the load-aware plan manages on the KubeDescheduler.
const loadAwareSpec = `
managementState: Managed
mode: Automatic
deschedulingIntervalSeconds: 60
profiles: [AffinityAndTaints, KubeVirtRelieveAndMigrate]
profileCustomizations:
  devEnableEvictionsInBackground: true
  devDeviationThresholds: AsymmetricLow
`

// adminSpec is how an administrator configured the KubeDescheduler before the plan.
const adminSpec = `
managementState: Managed
mode: Predictive
deschedulingIntervalSeconds: 3600
logLevel: Debug
profiles: [AffinityAndTaints, LifecycleAndUtilization]
`

func deschedulerItem() plan.Item {
	return plan.Item{
		Name:    "enable-load-aware-descheduling",
		Desired: descheduler(loadAwareSpec),
		Impact:  advisorv1alpha1.ImpactMedium,
		Message: "KubeDescheduler cluster will be configured with profile KubeVirtRelieveAndMigrate",
	}
}

func psiItem(name string) plan.Item {
	return plan.Item{
		Name:    "enable-psi-metrics",
		Desired: machineConfig(name, "worker"),
		Impact:  advisorv1alpha1.ImpactHigh,
		Message: "MachineConfig " + name + " adds psi=1 to the worker nodes",
	}
}

// createAsOtherManager creates obj with the otherManager field manager and deletes it
// again after the spec.
func createAsOtherManager(obj *unstructured.Unstructured) {
	Expect(k8sClient.Create(ctx, obj, client.FieldOwner(otherManager))).To(Succeed())
	cleanUp(obj)
}

// cleanUp deletes obj (wherever the spec got it to) after the spec and waits until it is
// gone, so the next spec starts without it.
func cleanUp(obj *unstructured.Unstructured) {
	key := client.ObjectKeyFromObject(obj)
	gvk := obj.GroupVersionKind()
	DeferCleanup(func() {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(key.Name)
		u.SetNamespace(key.Namespace)
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, u))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key, u))
		}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
	})
}

// live reads the current state of obj's target.
func live(obj *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	return u
}

func expectAbsent(obj *unstructured.Unstructured) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), u)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "expected %s to not exist, got %v", obj.GetName(), err)
}

// patchAsOtherManager merge-patches obj's target as otherManager.
func patchAsOtherManager(obj *unstructured.Unstructured, patch string) {
	u := live(obj)
	Expect(k8sClient.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)),
		client.FieldOwner(otherManager))).To(Succeed())
}

// draft drafts the items as the test profile's plan and returns the plan's items.
func draft(e *plan.Engine, items ...plan.Item) ([]advisorv1alpha1.PlanItem, error) {
	p, err := e.Draft(ctx, plan.Request{Profile: testProfile, Items: items})
	if err != nil {
		return nil, err
	}
	return p.Items, nil
}

// apply executes a drafted item as the test profile; checkSnapshot is the optimistic lock.
func apply(e *plan.Engine, pi advisorv1alpha1.PlanItem, checkSnapshot bool) (plan.ApplyOutcome, error) {
	return e.ApplyItem(ctx, pi, plan.ApplyOptions{Profile: testProfile, CheckSnapshot: checkSnapshot, Force: !checkSnapshot})
}

// createAsProfile creates obj with the test profile's field manager, as an earlier apply
// of its plan would have, and deletes it again after the spec.
func createAsProfile(obj *unstructured.Unstructured) {
	Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.FieldOwner(plan.FieldManagerFor(testProfile)))).To(Succeed())
	cleanUp(obj)
}

// draftOne drafts a single item and returns its plan item.
func draftOne(it plan.Item) advisorv1alpha1.PlanItem {
	items, err := draft(engine, it)
	Expect(err).NotTo(HaveOccurred())
	Expect(items).To(HaveLen(1))
	return items[0]
}

// withMarks is desired as the plan writes it: with the managed-by label and the profile
// annotation (built here independently of the engine).
func withMarks(desired *unstructured.Unstructured) *unstructured.Unstructured {
	out := desired.DeepCopy()
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["advisor.kubevirt.io/managed-by"] = "virt-advisor-operator"
	out.SetLabels(labels)
	out.SetAnnotations(map[string]string{"advisor.kubevirt.io/profile." + testProfile: "managed"})
	return out
}

// ownedFields decodes the fieldsV1 set of the managedFields entry of manager with
// operation op; ok is false when there is no such entry.
func ownedFields(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) (map[string]any, bool) {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == op && e.FieldsV1 != nil {
			var set map[string]any
			Expect(json.Unmarshal(e.FieldsV1.GetRawBytes(), &set)).To(Succeed())
			return set, true
		}
	}
	return nil, false
}

func specFieldsOf(set map[string]any) map[string]any {
	spec, _ := set["f:spec"].(map[string]any)
	return spec
}

var _ = Describe("Engine.Draft", func() {
	It("drafts a Pending item with the diff, marks, managed fields and snapshot of a target another manager configured, writing nothing", func() {
		createAsOtherManager(descheduler(adminSpec))
		before := live(descheduler(adminSpec))

		item := deschedulerItem()
		pi := draftOne(item)

		Expect(pi.Name).To(Equal(item.Name))
		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(pi.Message).To(HavePrefix(item.Message+"; approving it takes over fields another manager owns: "),
			"the message names the conflicts with the manager that configured the target")
		Expect(pi.Conflicts).NotTo(BeEmpty())
		Expect(pi.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactMedium))
		Expect(pi.TargetRef).To(Equal(advisorv1alpha1.TargetReference{
			APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler",
			Name: "cluster", Namespace: deschedulerNamespace,
		}))

		By("showing exactly the changes the plan makes, from the live object to the dry-run result")
		Expect(pi.Diff).To(HavePrefix(
			"--- KubeDescheduler openshift-kube-descheduler-operator/cluster (live)\n" +
				"+++ KubeDescheduler openshift-kube-descheduler-operator/cluster (planned)\n@@ "))
		removed, added := changedLines(pi.Diff)
		Expect(removed).To(ConsistOf(loadAwareRemovedLines))
		Expect(added).To(ConsistOf(loadAwareAddedLines))
		Expect(pi.Diff).To(ContainSubstring("\n   logLevel: Debug\n"), "the other manager's logLevel stays, as context")
		for _, noise := range []string{"managedFields", "resourceVersion", "uid:", "generation", "creationTimestamp"} {
			Expect(pi.Diff).NotTo(ContainSubstring(noise))
		}

		By("carrying the ownership marks in the desired state")
		desired, err := plan.DesiredObject(pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(desired.GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "virt-advisor-operator"))
		Expect(desired.GetAnnotations()).To(HaveKeyWithValue("advisor.kubevirt.io/profile."+testProfile, "managed"))
		Expect(desired.Object["spec"]).To(Equal(item.Desired.Object["spec"]))
		Expect(item.Desired.GetLabels()).To(BeEmpty(), "Draft must not mark the caller's object")

		By("listing the paths the desired state sets: the profile's ownership annotation is no value of the plan")
		Expect(pi.ManagedFields).To(Equal([]string{
			`metadata.labels["advisor.kubevirt.io/managed-by"]`,
			"spec.deschedulingIntervalSeconds",
			"spec.managementState",
			"spec.mode",
			"spec.profileCustomizations.devDeviationThresholds",
			"spec.profileCustomizations.devEnableEvictionsInBackground",
			"spec.profiles",
		}))

		By("hashing the live values at those paths")
		after := live(item.Desired)
		Expect(pi.SnapshotHash).To(Equal(plan.SnapshotHash(withMarks(item.Desired), after)))

		By("writing nothing: the dry-run left the live object as it was")
		Expect(after.GetResourceVersion()).To(Equal(before.GetResourceVersion()))
		Expect(after.Object["spec"]).To(Equal(before.Object["spec"]))
		_, applied := ownedFields(after, plan.FieldManagerFor(testProfile), metav1.ManagedFieldsOperationApply)
		Expect(applied).To(BeFalse(), "the dry-run must not leave a managedFields entry")
	})

	It("drafts the creation of a target that does not exist, from /dev/null, without creating it", func() {
		item := psiItem("99-worker-psi-draft")
		cleanUp(item.Desired)

		pi := draftOne(item)

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(pi.Diff).To(HavePrefix("--- /dev/null\n+++ MachineConfig 99-worker-psi-draft (planned)\n@@ -0,0 +1,"))
		removed, added := changedLines(pi.Diff)
		Expect(removed).To(BeEmpty())
		Expect(added).To(ContainElements(
			"+kind: MachineConfig",
			"+    advisor.kubevirt.io/managed-by: virt-advisor-operator",
			"+    machineconfiguration.openshift.io/role: worker",
			"+  - psi=1",
		))
		Expect(pi.SnapshotHash).To(Equal(plan.SnapshotHash(withMarks(item.Desired), nil)))
		expectAbsent(item.Desired)
	})

	It("drafts an item whose target already matches as (no changes) with Low impact", func() {
		createAsProfile(withMarks(descheduler(loadAwareSpec)))

		pi := draftOne(deschedulerItem())

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(pi.Diff).To(Equal(plan.NoChanges))
		Expect(pi.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
	})

	It("drafts an item whose target already holds its values, set by another manager, as an ownership-only change", func() {
		createAsOtherManager(withMarks(descheduler(loadAwareSpec)))

		pi := draftOne(deschedulerItem())

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(pi.Diff).To(HavePrefix(plan.OwnershipOnly))
		Expect(pi.Diff).To(ContainSubstring("spec.mode"))
		Expect(pi.State).To(Equal(advisorv1alpha1.ItemPending), "co-owning changes no value, but it is still a write to review")
		Expect(pi.Change).To(Equal(advisorv1alpha1.ChangeOwnershipOnly))
		Expect(pi.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow), "nothing it configures changes, so nothing rolls out")
	})

	DescribeTable("fails an item the API server rejects, naming the target, and still drafts the other items",
		func(spec string, reason string) {
			bad := plan.Item{Name: "bad-descheduler", Desired: descheduler(spec), Impact: advisorv1alpha1.ImpactMedium}
			good := psiItem("99-worker-psi-after-rejection")
			cleanUp(good.Desired)

			items, err := draft(engine, bad, good)

			Expect(err).NotTo(HaveOccurred())
			Expect(items).To(HaveLen(2))
			Expect(items[0].Name).To(Equal("bad-descheduler"))
			Expect(items[0].State).To(Equal(advisorv1alpha1.ItemFailed))
			Expect(items[0].Message).To(ContainSubstring("KubeDescheduler openshift-kube-descheduler-operator/cluster"))
			Expect(items[0].Message).To(ContainSubstring(reason))
			Expect(items[1].Name).To(Equal("enable-psi-metrics"))
			Expect(items[1].State).To(Equal(advisorv1alpha1.ItemPending))
			Expect(items[1].Diff).To(HavePrefix("--- /dev/null"))
			expectAbsent(bad.Desired)
			expectAbsent(good.Desired)
		},
		Entry("mutually exclusive profiles (CEL rule of the 4.20 CRD)",
			"profiles: [LongLifecycle, KubeVirtRelieveAndMigrate]",
			"cannot declare LongLifecycle and KubeVirtRelieveAndMigrate profiles simultaneously"),
		Entry("a mode outside the enum",
			"mode: Sometimes",
			`Unsupported value: "Sometimes"`),
		// Server-side apply answers a field the schema does not declare with a 500.
		Entry("a field the CRD does not declare",
			"mode: Automatic\ndevNotInThisGeneration: true",
			".spec.devNotInThisGeneration: field not declared in schema"),
		// And a value of the wrong type with a 500 too.
		Entry("a value of the wrong type",
			"mode: Automatic\ndeschedulingIntervalSeconds: hourly",
			".spec.deschedulingIntervalSeconds: expected numeric (int or float), got string"),
	)

	It("fails an item whose kind the cluster does not serve, telling to install its operator", func() {
		widget := object(`
apiVersion: widgets.example.com/v1
kind: Widget
metadata: {name: w}
spec: {size: 3}
`)
		items, err := draft(engine, plan.Item{Name: "widget", Desired: widget})

		Expect(err).NotTo(HaveOccurred())
		Expect(items[0].State).To(Equal(advisorv1alpha1.ItemFailed))
		Expect(items[0].Message).To(ContainSubstring("does not serve Widget (widgets.example.com/v1)"))
	})

	It("skips an item with a skip reason without reading or dry-running its target", func() {
		skipped := deschedulerItem()
		skipped.Desired = descheduler("profiles: [LongLifecycle, KubeVirtRelieveAndMigrate]") // would be rejected
		skipped.SkipReason = "the Kube Descheduler Operator is not installed"

		pi := draftOne(skipped)

		Expect(pi.State).To(Equal(advisorv1alpha1.ItemSkipped))
		Expect(pi.Message).To(Equal(skipped.SkipReason))
		Expect(pi.Diff).To(BeEmpty())
		Expect(pi.ManagedFields).To(BeEmpty())
	})

	DescribeTable("refuses a plan that would have two items fight over one target or one name",
		func(items func() []plan.Item, fragment string) {
			out, err := draft(engine, items()...)
			Expect(err).To(MatchError(plan.ErrInvalidPlan))
			Expect(err.Error()).To(ContainSubstring(fragment))
			Expect(out).To(BeNil())
			Expect(plan.IsPermanent(err)).To(BeTrue())
		},
		Entry("two items with the same target", func() []plan.Item {
			other := deschedulerItem()
			other.Name = "another-descheduler-item"
			return []plan.Item{deschedulerItem(), other}
		}, "both target KubeDescheduler openshift-kube-descheduler-operator/cluster"),
		Entry("two items with the same name", func() []plan.Item {
			other := psiItem("99-worker-psi-duplicate")
			other.Name = deschedulerItem().Name
			return []plan.Item{deschedulerItem(), other}
		}, `two items are named "enable-load-aware-descheduling"`),
		Entry("an item without desired state", func() []plan.Item {
			return []plan.Item{{Name: "empty"}}
		}, `item "empty" has no desired state`),
	)
})

var _ = Describe("Engine.ApplyItem", func() {
	var target *unstructured.Unstructured

	BeforeEach(func() {
		target = descheduler(adminSpec)
		createAsOtherManager(target)
	})

	It("applies with the profile's field manager, after which Recheck shows no changes", func() {
		pi := draftOne(deschedulerItem())
		out, err := apply(engine, pi, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeFalse())
		Expect(out.Applied).To(BeTrue())

		after := live(target)
		Expect(out.Record.Hash).To(Equal(pi.TargetHash),
			"the outcome carries the hash of the values the apply left, which the dry-run predicted")
		Expect(out.Record.Fields).To(Equal(pi.ManagedFields))
		Expect(after.Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"))
		Expect(after.Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(60)))
		Expect(after.Object["spec"]).To(HaveKeyWithValue("profiles", []any{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}))
		Expect(after.GetLabels()).To(HaveKeyWithValue(plan.ManagedByLabel, plan.ManagedByValue))
		Expect(after.GetAnnotations()).To(HaveKeyWithValue(plan.ProfileAnnotation(testProfile), plan.ProfileAnnotationValue))

		By("owning the spec fields it set through an Apply entry")
		owned, ok := ownedFields(after, plan.FieldManagerFor(testProfile), metav1.ManagedFieldsOperationApply)
		Expect(ok).To(BeTrue(), "no Apply entry of the profile's field manager in %v", after.GetManagedFields())
		Expect(specFieldsOf(owned)).To(HaveKey("f:profiles"))
		Expect(specFieldsOf(owned)).To(HaveKey("f:deschedulingIntervalSeconds"))
		Expect(specFieldsOf(owned)).To(HaveKey("f:mode"))
		Expect(specFieldsOf(owned)).To(HaveKey("f:managementState"))
		Expect(specFieldsOf(owned)).To(HaveKey("f:profileCustomizations"))
		Expect(specFieldsOf(owned)).NotTo(HaveKey("f:logLevel"))

		By("finding the target in sync afterwards")
		check, err := engine.Recheck(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(check.Diff).To(Equal(plan.NoChanges))
		Expect(check.ChangedPaths).To(BeEmpty())
	})

	It("keeps a field the plan does not manage, set by another manager (co-management, not ownership)", func() {
		pi := draftOne(deschedulerItem())
		_, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())

		after := live(target)
		Expect(after.Object["spec"]).To(HaveKeyWithValue("logLevel", "Debug"))
		owned, ok := ownedFields(after, otherManager, metav1.ManagedFieldsOperationUpdate)
		Expect(ok).To(BeTrue())
		Expect(specFieldsOf(owned)).To(HaveKey("f:logLevel"), "the other manager still owns logLevel")

		By("leaving it alone when the other manager changes it again: no drift")
		patchAsOtherManager(target, `{"spec":{"logLevel":"Trace"}}`)
		check, err := engine.Recheck(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(check.Diff).To(Equal(plan.NoChanges))
	})

	It("refuses a Stale item without writing when a managed field changed after drafting", func() {
		pi := draftOne(deschedulerItem())
		patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)
		before := live(target)

		out, err := apply(engine, pi, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeTrue())
		Expect(out.Applied).To(BeFalse())
		after := live(target)
		Expect(after.GetResourceVersion()).To(Equal(before.GetResourceVersion()))
		Expect(after.Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(1800)))

		By("reporting the changed path on Recheck")
		check, err := engine.Recheck(ctx, testProfile, pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(check.ChangedPaths).To(ContainElement("spec.deschedulingIntervalSeconds"))
	})

	It("refuses a Stale item, without overwriting, when the target changes between the check and the apply", func() {
		pi := draftOne(deschedulerItem())
		// Another writer gets in right after the engine read the target and before its
		// apply reaches the API server.
		racing := &plan.Engine{Reader: k8sClient, Writer: writerFunc{Client: k8sClient, beforeApply: func() {
			patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)
		}}}

		out, err := apply(racing, pi, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeTrue())
		Expect(out.Applied).To(BeFalse())
		Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(1800)))
		Expect(live(target).GetLabels()).NotTo(HaveKey(plan.ManagedByLabel))
	})

	It("refuses a Stale item when its target was created after drafting", func() {
		item := psiItem("99-worker-psi-stale")
		pi := draftOne(item)
		createAsOtherManager(machineConfig("99-worker-psi-stale", "worker"))

		out, err := apply(engine, pi, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeTrue())
		Expect(live(item.Desired).GetLabels()).NotTo(HaveKey(plan.ManagedByLabel))
	})

	It("applies despite a change to a field the plan does not manage", func() {
		pi := draftOne(deschedulerItem())
		patchAsOtherManager(target, `{"spec":{"logLevel":"Trace"}}`)

		out, err := apply(engine, pi, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeFalse())
		Expect(out.Applied).To(BeTrue())
		after := live(target)
		Expect(after.Object["spec"]).To(HaveKeyWithValue("mode", "Automatic"))
		Expect(after.Object["spec"]).To(HaveKeyWithValue("logLevel", "Trace"))
	})

	It("applies despite a managed change when the snapshot check is off (bypassOptimisticLock)", func() {
		pi := draftOne(deschedulerItem())
		patchAsOtherManager(target, `{"spec":{"deschedulingIntervalSeconds":1800}}`)

		out, err := apply(engine, pi, false)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeFalse())
		Expect(out.Applied).To(BeTrue())
		Expect(live(target).Object["spec"]).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(60)))
	})

	It("sends nothing for an item drafted as (no changes) whose target is unchanged", func() {
		pi := draftOne(deschedulerItem())
		_, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		inSync := draftOne(deschedulerItem())
		Expect(inSync.Diff).To(Equal(plan.NoChanges))
		before := live(target)

		out, err := apply(engine, inSync, true)

		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeFalse())
		Expect(out.Applied).To(BeFalse())
		Expect(out.AlreadyApplied).To(BeTrue())
		Expect(out.Record.Hash).To(Equal(inSync.TargetHash))
		Expect(live(target).GetResourceVersion()).To(Equal(before.GetResourceVersion()))
	})

	It("reports a permanent error when the API server refuses the apply", func() {
		pi := draftOne(deschedulerItem())
		// Make the stored desired state invalid after the review, as a hand-edited status would.
		desired, err := plan.DesiredObject(pi)
		Expect(err).NotTo(HaveOccurred())
		Expect(unstructured.SetNestedField(desired.Object, "Sometimes", "spec", "mode")).To(Succeed())
		pi.DesiredState.Raw, err = desired.MarshalJSON()
		Expect(err).NotTo(HaveOccurred())

		_, err = apply(engine, pi, false)

		Expect(err).To(HaveOccurred())
		Expect(plan.IsPermanent(err)).To(BeTrue())
		Expect(plan.FailureMessage(pi, err)).To(HavePrefix(
			"the API server refused the apply of KubeDescheduler openshift-kube-descheduler-operator/cluster"))
	})
})

var _ = Describe("IsPermanent", func() {
	gr := schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}
	gk := schema.GroupKind{Group: "operator.openshift.io", Kind: "KubeDescheduler"}

	DescribeTable("tells a refused request from a passing failure",
		func(err error, permanent bool) {
			Expect(plan.IsPermanent(err)).To(Equal(permanent))
			Expect(plan.IsPermanent(fmt.Errorf("apply KubeDescheduler: %w", err))).To(Equal(permanent), "wrapped")
		},
		Entry("Invalid is permanent", apierrors.NewInvalid(gk, "cluster",
			field.ErrorList{field.NotSupported(field.NewPath("spec", "mode"), "Sometimes", []string{"Automatic", "Predictive"})}), true),
		Entry("Forbidden is permanent", apierrors.NewForbidden(gr, "cluster", errors.New("RBAC")), true),
		Entry("NotFound is permanent", apierrors.NewNotFound(gr, "cluster"), true),
		Entry("BadRequest is permanent", apierrors.NewBadRequest("malformed"), true),
		Entry("NoKindMatch is permanent", &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{"v1"}}, true),
		Entry("ErrInvalidPlan is permanent", plan.ErrInvalidPlan, true),
		Entry("a server-side apply schema mismatch (reported as a 500) is permanent", &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 500,
			Message: "failed to create typed patch object (ns/cluster; operator.openshift.io/v1, Kind=KubeDescheduler): .spec.bogus: field not declared in schema",
		}}, true),
		Entry("a server-side apply type mismatch (reported as a 500) is permanent", &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 500,
			Message: "failed to create typed patch object (ns/cluster; operator.openshift.io/v1, Kind=KubeDescheduler): .spec.deschedulingIntervalSeconds: expected numeric (int or float), got string",
		}}, true),
		Entry("a server timeout passes", apierrors.NewServerTimeout(gr, "patch", 2), false),
		Entry("a request timeout passes", apierrors.NewTimeoutError("request did not complete", 2), false),
		Entry("TooManyRequests passes", apierrors.NewTooManyRequests("slow down", 1), false),
		Entry("ServiceUnavailable passes", apierrors.NewServiceUnavailable("etcd leader election"), false),
		Entry("an internal error passes", apierrors.NewInternalError(errors.New("boom")), false),
		Entry("a connection error passes", errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"), false),
		Entry("nil is not an error", nil, false),
	)
})

// writerFunc runs beforeApply right before each real (not dry-run) apply it forwards.
type writerFunc struct {
	client.Client
	beforeApply func()
}

func (w writerFunc) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	o := &client.ApplyOptions{}
	o.ApplyOptions(opts)
	if len(o.DryRun) == 0 {
		w.beforeApply()
	}
	return w.Client.Apply(ctx, obj, opts...)
}
