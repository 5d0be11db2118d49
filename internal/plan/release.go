package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// releases drafts a Release item for every target an earlier plan applied that the new
// plan no longer writes, so leaving the plan is shown and approved like any other change,
// instead of the target being silently orphaned with the profile still owning its fields.
func (e *Engine) releases(ctx context.Context, rec *Recorder, profile, manager string, drafted, previous []advisorv1alpha1.PlanItem) ([]advisorv1alpha1.PlanItem, error) {
	kept := map[TargetKey]bool{}
	names := map[string]bool{}
	for _, it := range drafted {
		kept[KeyOf(it.TargetRef)] = true
		names[it.Name] = true
	}
	var out []advisorv1alpha1.PlanItem
	for _, prev := range previous {
		if prev.Action == advisorv1alpha1.ItemActionRelease || prev.Applied == nil || kept[KeyOf(prev.TargetRef)] {
			continue
		}
		kept[KeyOf(prev.TargetRef)] = true
		pi, ok, err := e.draftRelease(ctx, rec, profile, manager, prev)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if names[pi.Name] {
			pi.Name += "-previous-target"
		}
		names[pi.Name] = true
		out = append(out, pi)
	}
	return out, nil
}

// draftRelease shows what releasing prev's target does: its values stay, the profile's
// ownership marks go, and the profile's managedFields entry is removed. ok is false when
// there is nothing to release (the target is gone, or the profile owns nothing on it).
func (e *Engine) draftRelease(ctx context.Context, rec *Recorder, profile, manager string, prev advisorv1alpha1.PlanItem) (advisorv1alpha1.PlanItem, bool, error) {
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(prev.TargetRef.APIVersion)
	probe.SetKind(prev.TargetRef.Kind)
	probe.SetNamespace(prev.TargetRef.Namespace)
	probe.SetName(prev.TargetRef.Name)
	live, err := rec.live(ctx, probe)
	if err != nil {
		if IsPermanent(err) {
			return advisorv1alpha1.PlanItem{}, false, nil
		}
		return advisorv1alpha1.PlanItem{}, false, err
	}
	if live == nil {
		return advisorv1alpha1.PlanItem{}, false, nil
	}
	if _, _, owned := appliedFields(live, manager); !owned {
		return advisorv1alpha1.PlanItem{}, false, nil
	}
	after := withoutMarks(live, profile, manager)
	diff, err := Diff(live, after)
	if err != nil {
		return advisorv1alpha1.PlanItem{}, false, err
	}
	change := advisorv1alpha1.ChangeValues
	if diff == NoChanges {
		change = advisorv1alpha1.ChangeOwnershipOnly
		diff = "(no value changes: releasing removes this profile's managedFields entry)"
	}
	return advisorv1alpha1.PlanItem{
		Name:           prev.Name,
		TargetRef:      prev.TargetRef,
		Action:         advisorv1alpha1.ItemActionRelease,
		ImpactSeverity: advisorv1alpha1.ImpactLow,
		State:          advisorv1alpha1.ItemPending,
		Diff:           diff,
		Change:         change,
		SnapshotHash:   HashJSON(struct{ Target, Version string }{describeRef(prev.TargetRef), "released"}),
		Message: fmt.Sprintf("released: the plan no longer writes %s with the current options. Approving leaves every value as it is, "+
			"hands back the fields this profile set (%s) and stops watching the object", describeRef(prev.TargetRef), strings.Join(prev.Applied.Fields, ", ")),
	}, true, nil
}

// withoutMarks is live without the profile's ownership annotation and, when no other
// profile manages the object, without the managed-by label.
func withoutMarks(live *unstructured.Unstructured, profile, manager string) *unstructured.Unstructured {
	out := live.DeepCopy()
	ann := out.GetAnnotations()
	delete(ann, ProfileAnnotation(profile))
	out.SetAnnotations(ann)
	if !otherProfileManages(live, manager) {
		labels := out.GetLabels()
		delete(labels, ManagedByLabel)
		out.SetLabels(labels)
	}
	return out
}

func otherProfileManages(obj *unstructured.Unstructured, manager string) bool {
	for _, e := range obj.GetManagedFields() {
		if _, ours := ProfileOfManager(e.Manager); ours && e.Manager != manager {
			return true
		}
	}
	return false
}

// release hands a target back: one JSON patch, guarded by the resourceVersion read, that
// removes the profile's managedFields entry and its ownership marks and changes no value.
func (e *Engine) release(ctx context.Context, profile, manager string, item advisorv1alpha1.PlanItem) (ApplyOutcome, error) {
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(item.TargetRef.APIVersion)
	probe.SetKind(item.TargetRef.Kind)
	live, err := e.readLive(ctx, probe, types.NamespacedName{Namespace: item.TargetRef.Namespace, Name: item.TargetRef.Name})
	if err != nil {
		return ApplyOutcome{}, err
	}
	if live == nil {
		return ApplyOutcome{Released: true}, nil
	}
	if optedOut(live) {
		return ApplyOutcome{Unmanaged: true}, nil
	}
	_, index, owned := appliedFields(live, manager)
	if !owned {
		return ApplyOutcome{Released: true}, nil
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
		{"op": "remove", "path": fmt.Sprintf("/metadata/managedFields/%d", index)},
	}
	if len(live.GetManagedFields()) == 1 {
		// The API server reads an empty managedFields list as "unchanged"; one empty entry
		// is how a request clears them.
		ops[1] = map[string]any{"op": "replace", "path": "/metadata/managedFields", "value": []any{map[string]any{}}}
	}
	if _, ok := live.GetAnnotations()[ProfileAnnotation(profile)]; ok {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + escapeToken(ProfileAnnotation(profile))})
	}
	if _, ok := live.GetLabels()[ManagedByLabel]; ok && !otherProfileManages(live, manager) {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/" + escapeToken(ManagedByLabel)})
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return ApplyOutcome{}, err
	}
	// Sent without the profile's field manager: a patch attributed to it would give it an
	// entry again.
	if err := e.writer().Patch(ctx, live, client.RawPatch(types.JSONPatchType, raw)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			// The target changed since it was read (the test op failed): look again.
			return ApplyOutcome{}, fmt.Errorf("release %s: it changed while being released, retrying: %v", describe(live), err)
		}
		return ApplyOutcome{}, fmt.Errorf("release %s: %w", describe(live), err)
	}
	return ApplyOutcome{Released: true, Applied: true}, nil
}
