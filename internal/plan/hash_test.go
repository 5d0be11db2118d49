package plan_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// hashDesired is what the load-aware plan manages on the KubeDescheduler: the
// ownership marks and part of the spec.
const hashDesired = `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  labels:
    advisor.kubevirt.io/managed-by: virt-advisor-operator
  annotations:
    advisor.kubevirt.io/profile.load-aware-rebalancing: managed
spec:
  mode: Automatic
  deschedulingIntervalSeconds: 60
  profiles: [AffinityAndTaints, KubeVirtRelieveAndMigrate]
  profileCustomizations:
    devEnableEvictionsInBackground: true
`

// hashLive is the live KubeDescheduler before the plan: it has some of the managed fields
// and others the plan does not manage.
const hashLive = `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  uid: 6f1c2b8e-3d0a-4c55-9a7e-2f4b1d9c8e01
  resourceVersion: "48213"
  generation: 4
  labels:
    team: virt
  annotations:
    note: tuned by hand
  managedFields:
  - manager: kubectl-edit
    operation: Update
    apiVersion: operator.openshift.io/v1
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:profiles: {}}}
spec:
  mode: Predictive
  deschedulingIntervalSeconds: 3600
  logLevel: Normal
  managementState: Managed
  profiles: [AffinityAndTaints, LifecycleAndUtilization]
status:
  observedGeneration: 4
  readyReplicas: 1
`

func TestSnapshotHash(t *testing.T) {
	desired := object(hashDesired)
	base := plan.SnapshotHash(desired, object(hashLive))

	// liveWith returns hashLive with one change made to it.
	liveWith := func(change func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := object(hashLive)
		change(u)
		return u
	}
	set := func(value any, path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, path...) }
	}

	t.Run("is stable for the same desired and live objects", func(t *testing.T) {
		NewWithT(t).Expect(plan.SnapshotHash(object(hashDesired), object(hashLive))).To(Equal(base))
	})

	t.Run("does not depend on the values the desired object sets, only on its paths", func(t *testing.T) {
		other := object(hashDesired)
		if err := unstructured.SetNestedField(other.Object, int64(120), "spec", "deschedulingIntervalSeconds"); err != nil {
			t.Fatal(err)
		}
		NewWithT(t).Expect(plan.SnapshotHash(other, object(hashLive))).To(Equal(base))
	})

	for _, tc := range []struct {
		name   string
		change func(*unstructured.Unstructured)
	}{
		{"spec.profiles changes", set([]any{"AffinityAndTaints"}, "spec", "profiles")},
		{"only the order of spec.profiles changes", set([]any{"LifecycleAndUtilization", "AffinityAndTaints"}, "spec", "profiles")},
		{"spec.deschedulingIntervalSeconds changes", set(int64(1800), "spec", "deschedulingIntervalSeconds")},
		{"spec.mode changes", set("Automatic", "spec", "mode")},
		{"a managed field nested in a map changes", set(false, "spec", "profileCustomizations", "devEnableEvictionsInBackground")},
		{"the managed spec.mode is removed", remove("spec", "mode")},
	} {
		t.Run("changes when "+tc.name, func(t *testing.T) {
			NewWithT(t).Expect(plan.SnapshotHash(desired, liveWith(tc.change))).NotTo(Equal(base))
		})
	}

	t.Run("changes when the target appears or disappears", func(t *testing.T) {
		g := NewWithT(t)
		absent := plan.SnapshotHash(desired, nil)
		g.Expect(absent).NotTo(Equal(base), "absent -> present")
		g.Expect(base).NotTo(Equal(absent), "present -> absent")
		g.Expect(plan.SnapshotHash(desired, nil)).To(Equal(absent), "absent stays absent")
	})

	t.Run("tells an absent target from a present one that has none of the managed fields", func(t *testing.T) {
		bare := object(`
			apiVersion: operator.openshift.io/v1
			kind: KubeDescheduler
			metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}
		`)
		NewWithT(t).Expect(plan.SnapshotHash(desired, bare)).NotTo(Equal(plan.SnapshotHash(desired, nil)))
	})

	// A field that appears with a value that looks like nothing still changed: absence
	// is recorded explicitly.
	for _, tc := range []struct {
		name  string
		value any
		path  []string
	}{
		{`spec.profileCustomizations.devEnableEvictionsInBackground: false`, false, []string{"spec", "profileCustomizations", "devEnableEvictionsInBackground"}},
		{`spec.mode: ""`, "", []string{"spec", "mode"}},
		{`spec.mode: null`, nil, []string{"spec", "mode"}},
		{`spec.deschedulingIntervalSeconds: 0`, int64(0), []string{"spec", "deschedulingIntervalSeconds"}},
		{`spec.profiles: []`, []any{}, []string{"spec", "profiles"}},
	} {
		t.Run("changes when a managed field goes from absent to "+tc.name, func(t *testing.T) {
			absent := liveWith(remove(tc.path...))
			present := liveWith(set(tc.value, tc.path...))
			NewWithT(t).Expect(plan.SnapshotHash(desired, present)).NotTo(Equal(plan.SnapshotHash(desired, absent)))
		})
	}

	for _, tc := range []struct {
		name   string
		change func(*unstructured.Unstructured)
	}{
		{"spec.logLevel", set("TraceAll", "spec", "logLevel")},
		{"spec.managementState", set("Unmanaged", "spec", "managementState")},
		{"a new unmanaged spec field", set(int64(9), "spec", "evictionLimits", "total")},
		{"an unrelated annotation", set("retuned", "metadata", "annotations", "note")},
		{"an unrelated label", set("storage", "metadata", "labels", "team")},
		{"status", set(int64(0), "status", "readyReplicas")},
		{"status removed", remove("status")},
		{"resourceVersion", set("48999", "metadata", "resourceVersion")},
		{"generation", set(int64(5), "metadata", "generation")},
		{"managedFields", set([]any{map[string]any{"manager": "other", "operation": "Apply"}}, "metadata", "managedFields")},
		{"uid", set("00000000-0000-0000-0000-000000000000", "metadata", "uid")},
	} {
		t.Run("does not change when the unmanaged "+tc.name+" changes", func(t *testing.T) {
			NewWithT(t).Expect(plan.SnapshotHash(desired, liveWith(tc.change))).To(Equal(base))
		})
	}

	// Every profile sets the managed-by label to one value: another profile's first apply
	// of a shared target sets it, and that is no change to what this plan writes.
	for _, tc := range []struct {
		name   string
		change func(*unstructured.Unstructured)
	}{
		{"appears, set by another profile's apply", set("virt-advisor-operator", "metadata", "labels", "advisor.kubevirt.io/managed-by")},
		{"has another value", set("someone-else", "metadata", "labels", "advisor.kubevirt.io/managed-by")},
	} {
		t.Run("does not change when the managed-by label "+tc.name, func(t *testing.T) {
			NewWithT(t).Expect(plan.SnapshotHash(desired, liveWith(tc.change))).To(Equal(base))
		})
	}
}

// planItems is a two-item plan as Draft returns it.
func planItems() []advisorv1alpha1.PlanItem {
	return []advisorv1alpha1.PlanItem{
		{
			Name: "enable-load-aware-descheduling",
			TargetRef: advisorv1alpha1.TargetReference{
				APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler",
				Name: "cluster", Namespace: "openshift-kube-descheduler-operator",
			},
			ImpactSeverity: advisorv1alpha1.ImpactMedium,
			DesiredState: &runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"operator.openshift.io/v1","kind":"KubeDescheduler","metadata":{"name":"cluster","namespace":"openshift-kube-descheduler-operator"},"spec":{"mode":"Automatic","profiles":["KubeVirtRelieveAndMigrate"]}}`)},
			Diff:          "--- KubeDescheduler (live)\n+++ KubeDescheduler (planned)\n@@ -1 +1 @@\n-  mode: Predictive\n+  mode: Automatic\n",
			ManagedFields: []string{"spec.mode", "spec.profiles"},
			SnapshotHash:  "1111111111111111111111111111111111111111111111111111111111111111",
			State:         advisorv1alpha1.ItemPending,
			Message:       "KubeDescheduler cluster will be configured",
		},
		{
			Name: "enable-psi-metrics",
			TargetRef: advisorv1alpha1.TargetReference{
				APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg",
			},
			ImpactSeverity: advisorv1alpha1.ImpactHigh,
			DesiredState: &runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-psi-karg"},"spec":{"kernelArguments":["psi=1"]}}`)},
			Diff:          "--- /dev/null\n+++ MachineConfig 99-worker-psi-karg (planned)\n@@ -0,0 +1,2 @@\n+spec:\n+  kernelArguments: [psi=1]\n",
			ManagedFields: []string{"spec.kernelArguments"},
			SnapshotHash:  "2222222222222222222222222222222222222222222222222222222222222222",
			State:         advisorv1alpha1.ItemPending,
			Message:       "MachineConfig 99-worker-psi-karg will be created",
		},
	}
}

// itemChange is one edit to a drafted plan.
type itemChange struct {
	name   string
	change func(items []advisorv1alpha1.PlanItem)
}

var (
	changeDesired = itemChange{"a desired state", func(items []advisorv1alpha1.PlanItem) {
		items[1].DesiredState.Raw = []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-psi-karg"},"spec":{"kernelArguments":["psi=0"]}}`)
	}}
	changeDiff = itemChange{"a diff", func(items []advisorv1alpha1.PlanItem) {
		items[0].Diff = "--- KubeDescheduler (live)\n+++ KubeDescheduler (planned)\n@@ -1 +1 @@\n-  mode: Automatic\n+  mode: Automatic\n"
	}}
	changeMessage = itemChange{"a message", func(items []advisorv1alpha1.PlanItem) {
		items[0].Message = "the wording of a newer operator version"
	}}
	changeImpact = itemChange{"an impactSeverity", func(items []advisorv1alpha1.PlanItem) {
		items[1].ImpactSeverity = advisorv1alpha1.ImpactLow
	}}
	reencodeDesired = itemChange{"the encoding of a desired state (key order, whitespace)", func(items []advisorv1alpha1.PlanItem) {
		items[0].DesiredState.Raw = []byte(`{
			"spec": {"profiles": ["KubeVirtRelieveAndMigrate"], "mode": "Automatic"},
			"metadata": {"namespace": "openshift-kube-descheduler-operator", "name": "cluster"},
			"kind": "KubeDescheduler", "apiVersion": "operator.openshift.io/v1"}`)
	}}
	changeSnapshot = itemChange{"a snapshot hash", func(items []advisorv1alpha1.PlanItem) {
		items[1].SnapshotHash = "3333333333333333333333333333333333333333333333333333333333333333"
	}}
)

func hashAfter(hash func([]advisorv1alpha1.PlanItem) string, c itemChange) string {
	items := planItems()
	c.change(items)
	return hash(items)
}

func TestPlanHash(t *testing.T) {
	planHash := func(items []advisorv1alpha1.PlanItem) string { return plan.PlanHash(1, items) }
	base := planHash(planItems())
	for _, c := range []itemChange{changeDesired, changeDiff} {
		t.Run("changes when "+c.name+" changes", func(t *testing.T) {
			NewWithT(t).Expect(hashAfter(planHash, c)).NotTo(Equal(base))
		})
	}
	for _, c := range []itemChange{changeMessage, changeImpact, reencodeDesired, changeSnapshot} {
		t.Run("does not change when only "+c.name+" changes", func(t *testing.T) {
			NewWithT(t).Expect(hashAfter(planHash, c)).To(Equal(base))
		})
	}
	t.Run("changes when an item becomes Skipped", func(t *testing.T) {
		NewWithT(t).Expect(hashAfter(planHash, itemChange{"skip", func(items []advisorv1alpha1.PlanItem) {
			items[1].State = advisorv1alpha1.ItemSkipped
		}})).NotTo(Equal(base))
	})
	t.Run("changes when the items are reordered", func(t *testing.T) {
		NewWithT(t).Expect(hashAfter(planHash, itemChange{"reorder", func(items []advisorv1alpha1.PlanItem) {
			items[0], items[1] = items[1], items[0]
		}})).NotTo(Equal(base))
	})
	t.Run("changes with the plan's revision, whatever the items", func(t *testing.T) {
		NewWithT(t).Expect(plan.PlanHash(2, planItems())).NotTo(Equal(base))
	})
	t.Run("is 64 lowercase hex characters, as spec.approvedPlanHash requires", func(t *testing.T) {
		NewWithT(t).Expect(base).To(MatchRegexp(`^[a-f0-9]{64}$`))
	})
}

func TestDesiredHash(t *testing.T) {
	base := plan.DesiredHash(planItems())
	t.Run("changes when "+changeDesired.name+" changes", func(t *testing.T) {
		NewWithT(t).Expect(hashAfter(plan.DesiredHash, changeDesired)).NotTo(Equal(base))
	})
	for _, c := range []itemChange{changeDiff, changeMessage, changeImpact, reencodeDesired, changeSnapshot} {
		t.Run("does not change when only "+c.name+" changes", func(t *testing.T) {
			NewWithT(t).Expect(hashAfter(plan.DesiredHash, c)).To(Equal(base))
		})
	}
}

func TestCombinedSnapshotHash(t *testing.T) {
	base := plan.CombinedSnapshotHash(planItems())
	for i, it := range planItems() {
		t.Run("changes when the snapshot hash of item "+it.Name+" changes", func(t *testing.T) {
			items := planItems()
			items[i].SnapshotHash = "4444444444444444444444444444444444444444444444444444444444444444"
			NewWithT(t).Expect(plan.CombinedSnapshotHash(items)).NotTo(Equal(base))
		})
	}
	for _, c := range []itemChange{changeDiff, changeMessage, changeImpact} {
		t.Run("does not change when only "+c.name+" changes", func(t *testing.T) {
			NewWithT(t).Expect(hashAfter(plan.CombinedSnapshotHash, c)).To(Equal(base))
		})
	}
}
