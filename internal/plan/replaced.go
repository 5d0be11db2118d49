package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// RecordReplaced returns records with what applying item replaces on its target, read now.
// A path recorded by an earlier apply keeps its first value; only the hash of the value
// applied moves on. Paths the profile already owned before any record (an apply by an
// operator version that did not record) are not recorded: a revert releases them.
//
// The record follows the object the write meets. An absent target is recorded as created
// (without a UID until an apply is known to have created it: RecordCreated), whatever was
// recorded of an object there before: whoever deleted that object left absence as the
// state to go back to. An object found where the record says created is the one an apply
// created when its UID is the one recorded, or, with no UID recorded, when it looks
// created by the profile's own write (an apply whose answer was lost in a crash, see
// createdByProfile); any other object was created by someone else, and is recorded as a
// target that existed, with the values it holds now.
func (e *Engine) RecordReplaced(ctx context.Context, profile string, item advisorv1alpha1.PlanItem, records []advisorv1alpha1.ReplacedRecord) ([]advisorv1alpha1.ReplacedRecord, error) {
	if item.Action != "" && item.Action != advisorv1alpha1.ItemActionApply {
		return records, nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return nil, err
	}
	paths, err := ParseFieldPaths(item.ManagedFields)
	if err != nil {
		return nil, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return nil, err
	}
	out := make([]advisorv1alpha1.ReplacedRecord, len(records))
	for i := range records {
		records[i].DeepCopyInto(&out[i])
	}
	key := KeyOf(item.TargetRef)
	k := slices.IndexFunc(out, func(r advisorv1alpha1.ReplacedRecord) bool { return KeyOf(r.TargetRef) == key })
	if k < 0 {
		out = append(out, advisorv1alpha1.ReplacedRecord{TargetRef: item.TargetRef})
		k = len(out) - 1
	}
	rec := &out[k]
	manager := FieldManagerFor(profile)
	switch {
	case live == nil:
		*rec = advisorv1alpha1.ReplacedRecord{TargetRef: item.TargetRef, Created: true}
		return out, nil
	case rec.Created:
		settleCreated(rec, live, manager)
		if rec.UID == live.GetUID() {
			return out, nil
		}
		*rec = advisorv1alpha1.ReplacedRecord{TargetRef: item.TargetRef}
	}
	mine, _, owned := appliedFields(live, manager)
	for _, p := range absentRoots(paths, live) {
		applied, _ := valueAt(desired.Object, p)
		appliedHash := HashJSON(applied)
		if i := slices.IndexFunc(rec.Fields, func(f advisorv1alpha1.ReplacedField) bool { return f.Path == p.String() }); i >= 0 {
			rec.Fields[i].AppliedHash = appliedHash
			continue
		}
		if owned && (ownsPath(mine, p) || ownsAtomic(mine, p)) {
			continue
		}
		f := advisorv1alpha1.ReplacedField{Path: p.String(), AppliedHash: appliedHash, Managers: ownersOf(live, p, manager)}
		if prev, ok := valueAt(live.Object, p); ok {
			raw, err := json.Marshal(prev)
			if err != nil {
				return nil, err
			}
			f.Value = string(raw)
		} else {
			f.Absent = true
		}
		rec.Fields = append(rec.Fields, f)
	}
	// A path recorded while its parent map was missing is the root of what the applies
	// added there; a later apply that sets paths below it (the map exists now) moves the
	// value applied at that root on too.
	for i := range rec.Fields {
		root, err := ParseFieldPath(rec.Fields[i].Path)
		if err != nil {
			return nil, fmt.Errorf("%w: status.replaced of %s: %v", ErrInvalidPlan, describeRef(rec.TargetRef), err)
		}
		if slices.ContainsFunc(paths, func(p FieldPath) bool { return len(p) > len(root) && slices.Equal(p[:len(root)], root) }) {
			applied, _ := valueAt(desired.Object, root)
			rec.Fields[i].AppliedHash = HashJSON(applied)
		}
	}
	return out, nil
}

// RecordCreated returns records with the record of ref naming uid as the object an apply
// created: a revert deletes that object, and no other one of the same name.
func RecordCreated(records []advisorv1alpha1.ReplacedRecord, ref advisorv1alpha1.TargetReference, uid types.UID) []advisorv1alpha1.ReplacedRecord {
	out := make([]advisorv1alpha1.ReplacedRecord, len(records), len(records)+1)
	for i := range records {
		records[i].DeepCopyInto(&out[i])
	}
	created := advisorv1alpha1.ReplacedRecord{TargetRef: ref, Created: true, UID: uid}
	if rec := RecordOf(out, ref); rec != nil {
		*rec = created
		return out
	}
	return append(out, created)
}

// settleCreated names live in rec when rec records a created target whose creating apply
// is not known to have happened and live looks created by the profile's own write.
func settleCreated(rec *advisorv1alpha1.ReplacedRecord, live *unstructured.Unstructured, manager string) {
	if rec.Created && rec.UID == "" && live != nil && createdByProfile(live, manager) {
		rec.UID = live.GetUID()
	}
}

// createdByProfile tells whether obj looks created by a server-side apply of the profile's
// field manager: that manager applied it and no other field manager owns any field of it
// (status writers aside). An object someone else created carries its creator's entry
// (kubectl, a GitOps tool, another profile). An object the profile created and someone
// changed since reads as someone else's too: its revert then hands it back instead of
// deleting it, which errs on the side of keeping an object.
func createdByProfile(obj *unstructured.Unstructured, manager string) bool {
	if _, _, owned := appliedFields(obj, manager); !owned {
		return false
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager && e.Subresource == "" {
			return false
		}
	}
	return true
}

// absentRoots is paths with each path whose parent map is missing on live replaced by its
// shallowest missing ancestor, once: what the apply adds there is removed whole by a revert.
func absentRoots(paths []FieldPath, live *unstructured.Unstructured) []FieldPath {
	var out []FieldPath
	for _, p := range paths {
		root := p
		for i := 1; i < len(p); i++ {
			if _, ok := valueAt(live.Object, p[:i]); !ok {
				root = p[:i]
				break
			}
		}
		if !slices.ContainsFunc(out, func(q FieldPath) bool { return slices.Equal(q, root) }) {
			out = append(out, root)
		}
	}
	return out
}

// ownersOf names the field managers other than except that own p on obj (status entries
// left out), sorted.
func ownersOf(obj *unstructured.Unstructured, p FieldPath, except string) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == except || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &set) != nil {
			continue
		}
		if ownsPath(set, p) && !slices.Contains(out, e.Manager) {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return out
}

// RecordOf is the record of a target in records, or nil.
func RecordOf(records []advisorv1alpha1.ReplacedRecord, ref advisorv1alpha1.TargetReference) *advisorv1alpha1.ReplacedRecord {
	key := KeyOf(ref)
	for i := range records {
		if KeyOf(records[i].TargetRef) == key {
			return &records[i]
		}
	}
	return nil
}
