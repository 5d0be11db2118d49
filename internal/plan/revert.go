package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// A revert puts back what a config's executions replaced. Before each apply the operator
// records, from the target as it reads it then, what the apply replaces (RecordReplaced):
// for a target that did not exist, that the apply creates it; for one that existed, each
// managed path's value before the first apply that set it (or its absence), the field
// managers that owned it, and a hash of the value applied. The record of a created target
// names the object only once an apply is known to have created it (its UID, from the
// apply's answer: RecordCreated), since the write recorded before may never happen (a
// lost connection, a stale plan, a crash) and someone else may create the object instead.
// The revert plan is drafted from those records (DraftRevert) and executed like any plan:
//
//   - the object an apply created is deleted (Delete), and no other object of that name,
//     unless another field manager shares the fields the profile set on it: then only the
//     profile's ownership is released (Release);
//   - a target that existed gets its recorded values back and loses the fields the
//     profile added (Restore). A field another manager shares with the profile at the
//     value the profile applied keeps its value; a field whose value changed since the
//     apply is put back too, shown as a conflict. The restored values are written, in one
//     JSON patch guarded by the resourceVersion read, under the field manager that owned
//     them before when they had one and the same one (an update entry; a manager that
//     applies server-side takes them back with its next apply), otherwise under the
//     operator's own manager; the profile's managedFields entry is removed in the same
//     patch, so its ownership is released either way.

// RevertRequest is the draft of a revert plan.
type RevertRequest struct {
	Profile  string
	Records  []advisorv1alpha1.ReplacedRecord
	Revision int64
}

// DraftRevert drafts the revert plan of records: one item per target that still holds
// something to put back, the last target applied first. It returns the records the plan
// was drafted from: req.Records with each created target whose creating apply was not
// known to have happened named when the object there now looks created by the profile's
// own write (an apply whose answer was lost in a crash). The caller stores them with the
// plan: a revert deletes only an object a record names.
func (e *Engine) DraftRevert(ctx context.Context, req RevertRequest) (Plan, []advisorv1alpha1.ReplacedRecord, error) {
	manager := FieldManagerFor(req.Profile)
	records := make([]advisorv1alpha1.ReplacedRecord, len(req.Records))
	for i := range req.Records {
		req.Records[i].DeepCopyInto(&records[i])
	}
	var items []advisorv1alpha1.PlanItem
	for i := len(records) - 1; i >= 0; i-- {
		if err := e.settleCreatedRecord(ctx, manager, &records[i]); err != nil {
			return Plan{}, nil, err
		}
		it, ok, err := e.revertItem(ctx, req.Profile, manager, records[i])
		if err != nil {
			return Plan{}, nil, err
		}
		if ok {
			items = append(items, it)
		}
	}
	return Plan{
		Items:        items,
		PlanHash:     PlanHash(req.Revision, items),
		SnapshotHash: CombinedSnapshotHash(items),
		FieldManager: manager,
		Content:      ContentOf(items, nil),
	}, records, nil
}

// settleCreatedRecord reads the target of a created record that names no object yet and
// names the object there when it looks created by the profile's own write.
func (e *Engine) settleCreatedRecord(ctx context.Context, manager string, rec *advisorv1alpha1.ReplacedRecord) error {
	if !rec.Created || rec.UID != "" {
		return nil
	}
	live, err := e.readLive(ctx, probeOf(rec.TargetRef), types.NamespacedName{Namespace: rec.TargetRef.Namespace, Name: rec.TargetRef.Name})
	if err != nil {
		if IsPermanent(err) {
			return nil
		}
		return err
	}
	settleCreated(rec, live, manager)
	return nil
}

// probeOf is an empty object of ref's kind, to read ref with.
func probeOf(ref advisorv1alpha1.TargetReference) *unstructured.Unstructured {
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(ref.APIVersion)
	probe.SetKind(ref.Kind)
	return probe
}

// RevertItemName is the name of the revert item of a target.
func RevertItemName(ref advisorv1alpha1.TargetReference) string {
	name := "revert-" + strings.ToLower(ref.Kind) + "-"
	if ref.Namespace != "" {
		name += ref.Namespace + "-"
	}
	return name + ref.Name
}

// revertItem drafts what reverting rec does to its target now; ok is false when there is
// nothing to put back (the target is gone, or holds nothing of the profile's any more).
func (e *Engine) revertItem(ctx context.Context, profile, manager string, rec advisorv1alpha1.ReplacedRecord) (advisorv1alpha1.PlanItem, bool, error) {
	live, err := e.readLive(ctx, probeOf(rec.TargetRef), types.NamespacedName{Namespace: rec.TargetRef.Namespace, Name: rec.TargetRef.Name})
	if err != nil {
		if IsPermanent(err) {
			// The kind is no longer served: nothing of it is left to put back.
			return advisorv1alpha1.PlanItem{}, false, nil
		}
		return advisorv1alpha1.PlanItem{}, false, err
	}
	if live == nil {
		return advisorv1alpha1.PlanItem{}, false, nil
	}
	mine, _, owned := appliedFields(live, manager)
	pi := advisorv1alpha1.PlanItem{
		Name:      RevertItemName(rec.TargetRef),
		TargetRef: rec.TargetRef,
		State:     advisorv1alpha1.ItemPending,
		Change:    advisorv1alpha1.ChangeValues,
	}
	impact := advisorv1alpha1.ImpactMedium
	if targets.RollsOut(live.GroupVersionKind().GroupKind()) {
		impact = advisorv1alpha1.ImpactHigh
	}
	if rec.Created {
		if rec.UID != "" && rec.UID == live.GetUID() {
			if !owned {
				return advisorv1alpha1.PlanItem{}, false, nil
			}
			return revertCreated(pi, live, profile, manager, mine, impact)
		}
		// The object there is not one an apply of this config is known to have created:
		// someone else created it (after a write that never happened, or after deleting
		// the one created). Nothing of it was recorded, and it is never deleted: what the
		// profile set on it is handed back.
		pi, ok, err := revertExisting(pi, advisorv1alpha1.ReplacedRecord{TargetRef: rec.TargetRef}, live, profile, manager, mine, owned, impact)
		if ok {
			pi.Message = fmt.Sprintf("keeps %s (uid %s), which this profile did not create: hands back this profile's fields and leaves its values as they are",
				describeRef(pi.TargetRef), live.GetUID())
		}
		return pi, ok, err
	}
	return revertExisting(pi, rec, live, profile, manager, mine, owned, impact)
}

// revertCreated drafts the revert of a target the profile created: its deletion, or, when
// another field manager shares the fields the profile set, the release of its ownership.
func revertCreated(pi advisorv1alpha1.PlanItem, live *unstructured.Unstructured, profile, manager string, mine map[string]any,
	impact advisorv1alpha1.ImpactSeverity) (advisorv1alpha1.PlanItem, bool, error) {
	if shared := sharedWith(live, mine, manager); len(shared) > 0 {
		var err error
		pi.Action = advisorv1alpha1.ItemActionRelease
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
		pi.Change = advisorv1alpha1.ChangeOwnershipOnly
		if pi.Diff, err = Diff(live, withoutMarks(live, profile, manager)); err != nil {
			return pi, false, err
		}
		if pi.Diff == NoChanges {
			pi.Diff = "(no value changes: releasing removes this profile's managedFields entry)"
		}
		pi.SnapshotHash = HashJSON(struct{ Target, Version string }{describeRef(pi.TargetRef), "released"})
		pi.Message = fmt.Sprintf("kept: this profile created %s, but %s set the same fields; approving hands back this profile's fields and leaves the object and its values as they are",
			describeRef(pi.TargetRef), strings.Join(shared, ", "))
		return pi, true, nil
	}
	kept := identity(live)
	paths := ManagedPaths(kept)
	if err := setDesired(&pi, kept, paths); err != nil {
		return pi, false, err
	}
	pi.Action = advisorv1alpha1.ItemActionDelete
	pi.ImpactSeverity = impact
	pi.Diff = deletionDiff(live)
	pi.SnapshotHash = valuesHash(pi.TargetRef, paths, live, true)
	pi.TargetHash = valuesHash(pi.TargetRef, paths, nil, false)
	pi.Message = fmt.Sprintf("deletes %s (uid %s), which this profile created", describeRef(pi.TargetRef), live.GetUID())
	return pi, true, nil
}

// revertExisting drafts the revert of a target that existed before the profile's first
// apply: its recorded values put back (Restore).
func revertExisting(pi advisorv1alpha1.PlanItem, rec advisorv1alpha1.ReplacedRecord, live *unstructured.Unstructured, profile, manager string,
	mine map[string]any, owned bool, impact advisorv1alpha1.ImpactSeverity) (advisorv1alpha1.PlanItem, bool, error) {
	after := withoutMarks(live, profile, manager)
	dropEmptyMetadata(after)
	var paths []FieldPath
	var restored []string
	for _, f := range rec.Fields {
		p, restore, conflict, err := revertField(f, live, after, manager, mine, owned)
		if err != nil {
			return pi, false, fmt.Errorf("%w: status.replaced of %s, %s: %v", ErrInvalidPlan, describeRef(rec.TargetRef), f.Path, err)
		}
		if !restore {
			continue
		}
		if conflict != nil {
			pi.Conflicts = append(pi.Conflicts, *conflict)
		}
		paths = append(paths, p)
		restored = append(restored, f.Path)
	}
	if len(paths) == 0 && !owned {
		return advisorv1alpha1.PlanItem{}, false, nil
	}
	if err := setDesired(&pi, identity(after), paths); err != nil {
		return pi, false, err
	}
	var err error
	pi.Action = advisorv1alpha1.ItemActionRestore
	pi.ImpactSeverity = impact
	if pi.Diff, err = Diff(live, after); err != nil {
		return pi, false, err
	}
	pi.SnapshotHash = valuesHash(rec.TargetRef, paths, live, true)
	pi.TargetHash = valuesHash(rec.TargetRef, paths, after, false)
	if len(paths) == 0 || pi.Diff == NoChanges {
		pi.Change = advisorv1alpha1.ChangeOwnershipOnly
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
		pi.Diff = "(no value changes: reverting removes this profile's managedFields entry)"
		pi.Message = fmt.Sprintf("hands back this profile's fields of %s; its values are already as before, or shared with another manager", describeRef(rec.TargetRef))
		return pi, true, nil
	}
	pi.Message = fmt.Sprintf("restores %s of %s to the values before this profile's first apply, and hands back this profile's fields",
		strings.Join(restored, ", "), describeRef(rec.TargetRef))
	if len(pi.Conflicts) > 0 {
		pi.Message += "; changed since the apply, and put back on approval: " + describeConflicts(pi.Conflicts)
	}
	return pi, true, nil
}

// revertField decides the revert of one recorded field and, when it is put back, puts it
// back on after: restore is false when the field is already as it was, or shared with
// another manager at the value the profile applied (it stays; only the ownership goes). A
// value changed since the apply is put back as a conflict.
func revertField(f advisorv1alpha1.ReplacedField, live, after *unstructured.Unstructured, manager string, mine map[string]any,
	owned bool) (FieldPath, bool, *advisorv1alpha1.FieldConflict, error) {
	p, err := ParseFieldPath(f.Path)
	if err != nil {
		return nil, false, nil, err
	}
	var prev any
	if !f.Absent {
		if err := json.Unmarshal([]byte(f.Value), &prev); err != nil {
			return nil, false, nil, err
		}
	}
	cur, present := valueAt(live.Object, p)
	if present == !f.Absent && (f.Absent || jsonEqual(cur, prev)) {
		return p, false, nil, nil
	}
	curHash := ""
	if present {
		curHash = HashJSON(cur)
	}
	others := ownersOf(live, p, manager)
	ours := owned && (ownsPath(mine, p) || ownsAtomic(mine, p))
	if ours && len(others) > 0 && curHash == f.AppliedHash {
		return p, false, nil, nil
	}
	var conflict *advisorv1alpha1.FieldConflict
	if curHash != f.AppliedHash {
		conflict = &advisorv1alpha1.FieldConflict{Path: f.Path, Manager: strings.Join(others, ", "), PlannedValue: f.Value}
		if conflict.Manager == "" {
			conflict.Manager = "unknown"
		}
		if present {
			raw, _ := json.Marshal(cur)
			conflict.LiveValue = string(raw)
		}
		if f.Absent {
			conflict.PlannedValue = "(absent)"
		}
	}
	if f.Absent {
		removeAt(after.Object, []string(p))
	} else if err := unstructured.SetNestedField(after.Object, prev, p...); err != nil {
		return nil, false, nil, err
	}
	return p, true, conflict, nil
}

// sharedWith names the other field managers that own a field manager's applied set has,
// the operator's managed-by label aside.
func sharedWith(live *unstructured.Unstructured, mine map[string]any, manager string) []string {
	var out []string
	for _, p := range leavesOf(mine, nil) {
		if len(p) == 3 && p[0] == "metadata" && p[1] == "labels" && p[2] == ManagedByLabel {
			continue
		}
		for _, o := range ownersOf(live, p, manager) {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// leavesOf lists the field paths a decoded field set names ("f:" keys only).
func leavesOf(set map[string]any, prefix FieldPath) []FieldPath {
	var out []FieldPath
	for k, v := range set {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		p := append(slices.Clone(prefix), name)
		child, _ := v.(map[string]any)
		if len(child) == 0 {
			out = append(out, p)
			continue
		}
		out = append(out, leavesOf(child, p)...)
	}
	return out
}

// identity is obj without what the server maintains and without its status: what a revert
// item shows as the object it leaves (or deletes). Empty labels and annotations are left
// out, as the API server leaves them out of an embedded object.
func identity(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: normalized(obj)}
	dropEmptyMetadata(out)
	return out
}

func dropEmptyMetadata(obj *unstructured.Unstructured) {
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"labels", "annotations"} {
			if m, ok := md[k].(map[string]any); ok && len(m) == 0 {
				delete(md, k)
			}
		}
	}
}

// deletionDiff is the unified diff from live to nothing.
func deletionDiff(live *unstructured.Unstructured) string {
	from, err := marshalYAML(normalized(live))
	if err != nil {
		return fmt.Sprintf("--- %s (live)\n+++ /dev/null\n", describe(live))
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: splitLines(string(from)), FromFile: describe(live) + " (live)", ToFile: "/dev/null", Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("--- %s (live)\n+++ /dev/null\n", describe(live))
	}
	return strings.TrimSuffix(text, "\n") + "\n"
}

// IsRevert tells whether an item belongs to a revert plan.
func IsRevert(it advisorv1alpha1.PlanItem) bool {
	return it.Action == advisorv1alpha1.ItemActionRestore || it.Action == advisorv1alpha1.ItemActionDelete
}
