package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// RevertFieldManager writes restored values that had no single previous owner.
const RevertFieldManager = "virt-advisor-operator"

// revert executes a Restore or Delete item: the item is drafted again from rec and the
// target as it is now, and written only when that is the item approved (otherwise it is
// Stale, when the target changed since the review, or Outdated).
func (e *Engine) revert(ctx context.Context, profile, manager string, item advisorv1alpha1.PlanItem, rec *advisorv1alpha1.ReplacedRecord, checkSnapshot bool) (ApplyOutcome, error) {
	if rec == nil {
		return ApplyOutcome{}, fmt.Errorf("%w: item %s reverts %s, which status.replaced does not record", ErrInvalidPlan, item.Name, describeRef(item.TargetRef))
	}
	paths, err := ParseFieldPaths(item.ManagedFields)
	if err != nil {
		return ApplyOutcome{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	key := types.NamespacedName{Namespace: item.TargetRef.Namespace, Name: item.TargetRef.Name}
	live, err := e.readLive(ctx, probeOf(item.TargetRef), key)
	if err != nil {
		return ApplyOutcome{}, err
	}
	if optedOut(live) {
		return ApplyOutcome{Unmanaged: true}, nil
	}
	if live == nil {
		// Gone: deleted before a restart, or nothing is left to put back.
		return ApplyOutcome{AlreadyApplied: true}, nil
	}
	_, index, owned := appliedFields(live, manager)
	if valuesHash(item.TargetRef, paths, live, false) == item.TargetHash && !owned {
		// Reverted already (the write happened before a restart).
		return ApplyOutcome{AlreadyApplied: true}, nil
	}
	if checkSnapshot && !snapshotMatches(item.SnapshotHash, item.TargetRef, paths, live) {
		return ApplyOutcome{Stale: true, StaleReason: "changed since the revert plan was reviewed"}, nil
	}
	fresh, ok, err := e.revertItem(ctx, profile, manager, *rec)
	if err != nil {
		return ApplyOutcome{}, err
	}
	if !ok || fresh.Action != item.Action || !jsonEqual(rawJSON(fresh.DesiredState), rawJSON(item.DesiredState)) ||
		!slices.Equal(fresh.ManagedFields, item.ManagedFields) {
		return ApplyOutcome{Outdated: true}, nil
	}
	if item.Action == advisorv1alpha1.ItemActionDelete {
		return e.deleteTarget(ctx, live, rec.UID)
	}
	after, err := DesiredObject(item)
	if err != nil {
		return ApplyOutcome{}, err
	}
	raw, err := json.Marshal(restoreOps(live, after, profile, owned, index))
	if err != nil {
		return ApplyOutcome{}, err
	}
	if err := e.writer().Patch(ctx, live, client.RawPatch(types.JSONPatchType, raw), client.FieldOwner(restoringManager(*rec, paths))); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return ApplyOutcome{}, fmt.Errorf("revert %s: it changed while being reverted, retrying: %v", describe(live), err)
		}
		return ApplyOutcome{}, fmt.Errorf("revert %s: %w", describe(live), err)
	}
	return ApplyOutcome{Applied: true, SpecChanged: !jsonEqual(live.Object["spec"], after.Object["spec"])}, nil
}

// deleteTarget deletes live, the object a record names by uid, guarded by that uid and the
// resourceVersion read: an object created again under the name, by anyone, is never
// deleted.
func (e *Engine) deleteTarget(ctx context.Context, live *unstructured.Unstructured, uid types.UID) (ApplyOutcome, error) {
	if uid == "" || uid != live.GetUID() {
		return ApplyOutcome{}, fmt.Errorf("%w: delete %s: it is not the object status.replaced records as created (uid %q)", ErrInvalidPlan, describe(live), uid)
	}
	rv := live.GetResourceVersion()
	err := e.writer().Delete(ctx, live, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return ApplyOutcome{AlreadyApplied: true}, nil
	case apierrors.IsConflict(err):
		return ApplyOutcome{Stale: true, StaleReason: "changed while being reverted"}, nil
	case err != nil:
		return ApplyOutcome{}, fmt.Errorf("delete %s: %w", describe(live), err)
	}
	return ApplyOutcome{Applied: true, SpecChanged: true}, nil
}

// restoreOps is the JSON patch that turns live into after: guarded by live's
// resourceVersion, each top-level part that differs replaced whole, the labels and the
// annotations (other profiles' ownership annotations kept), and the profile's
// managedFields entry (index) removed when it has one.
func restoreOps(live, after *unstructured.Unstructured, profile string, owned bool, index int) []map[string]any {
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()}}
	for k, v := range after.Object {
		if k == "metadata" || k == "status" || k == "apiVersion" || k == "kind" || jsonEqual(v, live.Object[k]) {
			continue
		}
		ops = append(ops, map[string]any{"op": "add", "path": "/" + escapeToken(k), "value": v})
	}
	for k := range live.Object {
		if _, kept := after.Object[k]; !kept && k != "metadata" && k != "status" {
			ops = append(ops, map[string]any{"op": "remove", "path": "/" + escapeToken(k)})
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		want, _, _ := unstructured.NestedStringMap(after.Object, "metadata", field)
		have, _, _ := unstructured.NestedStringMap(live.Object, "metadata", field)
		if want == nil {
			want = map[string]string{}
		}
		if field == "annotations" {
			// Ownership annotations are not part of what a revert item shows; the
			// profile's own goes, the others stay.
			for k, v := range have {
				if strings.HasPrefix(k, ProfileAnnotationPrefix) && k != ProfileAnnotation(profile) {
					want[k] = v
				}
			}
		}
		if !jsonEqual(toAny(want), toAny(have)) {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/" + field, "value": want})
		}
	}
	switch {
	case !owned:
	case len(live.GetManagedFields()) == 1:
		// The API server reads an empty managedFields list as "unchanged"; one empty entry
		// is how a request clears them.
		ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/managedFields", "value": []any{map[string]any{}}})
	default:
		ops = append(ops, map[string]any{"op": "remove", "path": fmt.Sprintf("/metadata/managedFields/%d", index)})
	}
	return ops
}

// restoringManager is the field manager the restored values of paths are written under:
// the one manager that owned all of them before, or RevertFieldManager.
func restoringManager(rec advisorv1alpha1.ReplacedRecord, paths []FieldPath) string {
	owner := ""
	for _, p := range paths {
		for _, f := range rec.Fields {
			if f.Path != p.String() || f.Absent {
				continue
			}
			if len(f.Managers) != 1 || owner != "" && owner != f.Managers[0] {
				return RevertFieldManager
			}
			owner = f.Managers[0]
		}
	}
	if owner == "" {
		return RevertFieldManager
	}
	return owner
}

func rawJSON(r *runtime.RawExtension) any {
	if r == nil {
		return nil
	}
	var v any
	_ = json.Unmarshal(r.Raw, &v)
	return v
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
