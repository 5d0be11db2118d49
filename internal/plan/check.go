package plan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// Check is a fresh comparison of one desired state with its live target.
type Check struct {
	// Diff from live to the dry-run result, for display: NoChanges when in sync,
	// OwnershipOnly-prefixed when only the ownership of equal values would change.
	Diff string
	// Change is what applying changes; decisions read it, never Diff.
	Change advisorv1alpha1.ChangeKind
	// SnapshotHash of the live values at the managed paths and the user-control annotations.
	SnapshotHash string
	// TargetHash of the values at the managed paths the apply leaves.
	TargetHash string
	// Conflicts with other field managers.
	Conflicts []advisorv1alpha1.FieldConflict
	// ConflictsFoundOn is the resourceVersion of the target the conflicts were read from;
	// empty when the target changed between the read and the dry-run.
	ConflictsFoundOn string
	// ChangedPaths are the managed paths whose live value differs from the plan.
	ChangedPaths []string
	// MetadataOnly: the target exists and applying changes only its metadata (this
	// profile's ownership marks), nothing it configures.
	MetadataOnly bool
}

// OwnershipOnly starts the diff of an item whose target already holds the planned values
// but whose fields the profile does not own yet: applying it changes no value, it only
// makes the profile a co-owner.
const OwnershipOnly = "(no value changes: applying makes this profile a co-owner of "

// check dry-runs desired against live (already read) with force, to see what the apply
// would leave, and reads the conflicts with other field managers from the managed fields of
// that result: the fields the apply would take from them are shown, never taken silently.
func (e *Engine) check(ctx context.Context, manager string, desired, live *unstructured.Unstructured, pi advisorv1alpha1.PlanItem) (Check, error) {
	paths, err := ParseFieldPaths(pi.ManagedFields)
	if err != nil {
		return Check{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, pi.Name, err)
	}
	norms := normalizersOf(pi.IgnoredFields)
	planned := desired.DeepCopy()
	err = e.writer().Apply(ctx, client.ApplyConfigurationFromUnstructured(planned), client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll)
	if err != nil {
		return Check{}, fmt.Errorf("dry-run %s: %w", describe(desired), err)
	}
	conflicts := takenOver(live, planned, desired, manager, paths)
	diff, err := Diff(live, planned, norms...)
	if err != nil {
		return Check{}, err
	}
	target := TargetOf(desired)
	c := Check{
		Diff:         diff,
		SnapshotHash: valuesHash(target, paths, live, true, norms...),
		TargetHash:   valuesHash(target, paths, planned, false, norms...),
		Conflicts:    conflicts,
	}
	if live != nil && planned.GetResourceVersion() == live.GetResourceVersion() {
		// A dry-run writes nothing: its answer carries the version it was made on.
		c.ConflictsFoundOn = live.GetResourceVersion()
	}
	c.Change = advisorv1alpha1.ChangeNone
	if diff == NoChanges && !ownsAll(live, manager, paths) {
		c.Change = advisorv1alpha1.ChangeOwnershipOnly
		c.Diff = OwnershipOnly + strings.Join(PathStrings(paths), ", ") + ")"
	}
	if diff != NoChanges {
		c.Change = advisorv1alpha1.ChangeValues
		c.ChangedPaths = changedPaths(paths, normalized(live, norms...), normalized(planned, norms...))
		c.MetadataOnly = live != nil && jsonEqual(configured(live), configured(planned))
	}
	return c, nil
}

// configured is what an object configures: everything but its metadata and status.
func configured(obj *unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	return out
}

// changedPaths lists the managed paths whose values differ between live and planned.
func changedPaths(paths []FieldPath, live, planned map[string]any) []string {
	var out []string
	for _, p := range paths {
		pv, pok := valueAt(planned, p)
		var lv any
		lok := false
		if live != nil {
			lv, lok = valueAt(live, p)
		}
		if pok != lok || !jsonEqual(pv, lv) {
			out = append(out, p.String())
		}
	}
	sort.Strings(out)
	return out
}
