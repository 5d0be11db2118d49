package plan

import (
	"encoding/json"
	"slices"
	"strings"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appliedFields returns the field set (FieldsV1, decoded) that manager owns on obj through
// server-side apply, and whether it has such an entry.
func appliedFields(obj *unstructured.Unstructured, manager string) (map[string]any, int, bool) {
	for i, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &set); err != nil {
			return nil, i, false
		}
		return set, i, true
	}
	return nil, -1, false
}

// ownsAll tells whether manager owns, through server-side apply, every path (a path is
// owned when the field set has it, or has members under it, as for a list of type set).
func ownsAll(obj *unstructured.Unstructured, manager string, paths []FieldPath) bool {
	if obj == nil {
		return false
	}
	set, _, ok := appliedFields(obj, manager)
	if !ok {
		return false
	}
	for _, p := range paths {
		if !ownsPath(set, p) && !ownsAtomic(set, p) {
			return false
		}
	}
	return true
}

// ownsPath tells whether a decoded field set has path (or members under it).
func ownsPath(set map[string]any, p FieldPath) bool {
	cur := set
	for _, seg := range p {
		next, ok := cur["f:"+seg].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// ownsAtomic tells whether a decoded field set owns path through an atomic map or struct
// above it (x-kubernetes-map-type: atomic, as a KubeletConfig's machineConfigPoolSelector
// or a NodeHealthCheck's selector): the set has that field with no members, and owning it
// owns everything under it. Only a manager's own applied set is read this way: another
// manager's set may keep a field with no members after losing what was under it.
func ownsAtomic(set map[string]any, p FieldPath) bool {
	cur := set
	for i, seg := range p[:max(len(p)-1, 0)] {
		next, ok := cur["f:"+seg].(map[string]any)
		if !ok {
			return false
		}
		if len(next) == 0 && i < len(p)-1 {
			return true
		}
		cur = next
	}
	return false
}

// takenOver lists the managed paths that another field manager owns on live and no longer
// owns on planned, the result of a forced server-side-apply dry-run: the fields applying
// would take from that manager, because it set them to another value. Co-owned fields
// (same value) stay with both managers and are no conflict. One forced dry-run answers
// this; no request is refused with a 409.
func takenOver(live, planned, desired *unstructured.Unstructured, manager string, paths []FieldPath) []advisorv1alpha1.FieldConflict {
	if live == nil {
		return nil
	}
	after := map[string][]map[string]any{}
	for _, e := range planned.GetManagedFields() {
		if e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &set) == nil {
			after[e.Manager] = append(after[e.Manager], set)
		}
	}
	var out []advisorv1alpha1.FieldConflict
	for _, e := range live.GetManagedFields() {
		if e.Manager == manager || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &set) != nil {
			continue
		}
		seen := map[string]bool{}
		for _, p := range paths {
			q := takenPath(set, after[e.Manager], p)
			if q == nil || seen[q.String()] {
				continue
			}
			seen[q.String()] = true
			out = append(out, advisorv1alpha1.FieldConflict{
				Path: q.String(), Manager: e.Manager,
				LiveValue: jsonValue(live.Object, q), PlannedValue: jsonValue(desired.Object, q),
			})
		}
	}
	sortConflicts(out)
	return out
}

// takenPath is the field at or above managed path p that a manager owned (set, on live)
// and no longer owns once the plan is applied (after), or nil. Above p it is a field the
// manager owned whole (no members in its set): an atomic map or struct, such as a
// KubeletConfig's machineConfigPoolSelector, which whoever sets a key in it takes over as a
// whole. A field owned with no members that the manager still owns afterwards is a
// struct whose fields are owned one by one: no conflict.
func takenPath(set map[string]any, after []map[string]any, p FieldPath) FieldPath {
	cur := set
	for i, seg := range p {
		next, ok := cur["f:"+seg].(map[string]any)
		if !ok {
			return nil
		}
		q := p[:i+1]
		if (i == len(p)-1 || len(next) == 0) && !stillOwns(after, q) {
			return q
		}
		cur = next
	}
	return nil
}

func stillOwns(sets []map[string]any, p FieldPath) bool {
	for _, set := range sets {
		if ownsPath(set, p) {
			return true
		}
	}
	return false
}

// ownsOnly tells whether every field manager owns on obj through server-side apply lies
// on or under one of paths. A field the profile set before and the plan no longer sets
// (a KSM configuration turned off) is still owned until an apply drops it, so a target
// that holds the planned values but owns more is not yet as planned.
func ownsOnly(obj *unstructured.Unstructured, manager string, paths []FieldPath) bool {
	set, _, ok := appliedFields(obj, manager)
	return ok && ownedWithin(set, nil, paths)
}

func ownedWithin(node map[string]any, prefix FieldPath, paths []FieldPath) bool {
	for key, child := range node {
		if key == "." {
			continue
		}
		seg, isField := strings.CutPrefix(key, "f:")
		if !isField {
			// A list element or set member under a prefix no path covers.
			return false
		}
		p := append(append(FieldPath{}, prefix...), seg)
		switch {
		case coveredBy(p, paths), profileMark(p):
			// A profile's ownership annotation is set with every apply, and is no path.
		case leadsTo(p, paths), len(p) < 3 && slices.Equal(p, FieldPath{"metadata", "annotations"}[:len(p)]):
			m, _ := child.(map[string]any)
			if !ownedWithin(m, p, paths) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// coveredBy tells whether one of paths is p or a prefix of it.
func coveredBy(p FieldPath, paths []FieldPath) bool {
	for _, q := range paths {
		if len(q) <= len(p) && slices.Equal(q, p[:len(q)]) {
			return true
		}
	}
	return false
}

// leadsTo tells whether p is a proper prefix of one of paths.
func leadsTo(p FieldPath, paths []FieldPath) bool {
	for _, q := range paths {
		if len(p) < len(q) && slices.Equal(p, q[:len(p)]) {
			return true
		}
	}
	return false
}

// ownsExactly tells whether manager owns every path and nothing else, apart from the
// fields handed to the user (ignored), which an apply sends with their current value.
func ownsExactly(live *unstructured.Unstructured, manager string, paths []FieldPath, ignored []string) bool {
	if !ownsAll(live, manager, paths) {
		return false
	}
	allowed := append([]FieldPath(nil), paths...)
	if ptrs, err := ParsePointers(ignored); err == nil {
		for _, p := range ptrs {
			if prefix := p.fieldPrefix(live.Object); len(prefix) > 0 {
				allowed = append(allowed, prefix)
			}
		}
	}
	return ownsOnly(live, manager, allowed)
}
