package plan

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// ApplyOptions say how one item is executed.
type ApplyOptions struct {
	// Profile whose field manager applies the item.
	Profile string
	// CheckSnapshot refuses the item (Stale) when its target changed since the plan was
	// drafted, and guards the apply with the resourceVersion it checked.
	CheckSnapshot bool
	// Force takes over fields other managers own even when the plan did not show them
	// (bypassOptimisticLock: the administrator chose to win every conflict).
	Force bool
	// Rendered is the item as the profile renders it now. When set, the item is applied
	// only if that render leads to exactly the approved desired state (the status is not
	// trusted as what to apply); otherwise the outcome is Outdated and nothing is written.
	Rendered *Item
	// Revert is the record (status.replaced) a Restore or Delete item is drafted from: the
	// item is drafted again from it right before the write and written only when that
	// gives the item approved.
	Revert *advisorv1alpha1.ReplacedRecord
}

// ApplyOutcome is what executing one item did.
type ApplyOutcome struct {
	// Stale is set when the target changed since the plan was drafted (or another manager
	// took a field the plan did not show); nothing was written. StaleReason says what.
	Stale       bool
	StaleReason string
	// Applied is set when a real write was sent.
	Applied bool
	// AlreadyApplied is set when the target already held the approved values, owned by
	// the profile: the apply happened before (a crash between it and its status write), so
	// it is not sent twice.
	AlreadyApplied bool
	// Released is set when a Release item handed its target back.
	Released bool
	// Unmanaged is set when the target carries ModeAnnotation "unmanaged", read right
	// before the write: the user took it back, nothing was written.
	Unmanaged bool
	// Outdated is set when what the profile renders now differs from the approved desired
	// state; nothing was written.
	Outdated bool
	// SpecChanged is set when the apply changed the target's spec (something rolls out),
	// not only its metadata.
	SpecChanged bool
	// Record is what the item left on the target.
	Record *advisorv1alpha1.AppliedRecord
	// Written is the target as the apply's answer showed it, when Applied.
	Written *unstructured.Unstructured
	// CreatedUID is the UID of the target when this apply created it: it did not exist
	// right before, and the apply's answer shows no field manager but the profile's (see
	// createdByProfile). The caller records it (RecordCreated): a revert deletes that
	// object, and no other.
	CreatedUID types.UID
}

// ApplyItem executes one item. It re-reads the target; when the target already holds the
// approved values and the profile owns them, it records the item as applied without a
// second write (idempotent resume). Otherwise, with CheckSnapshot, it refuses (Stale) if
// the managed values changed since the plan was drafted, then sends the real server-side
// apply: without force, unless every conflicting field was shown in the approved plan. A
// returned error that IsPermanent fails the item; any other is worth a retry.
func (e *Engine) ApplyItem(ctx context.Context, item advisorv1alpha1.PlanItem, o ApplyOptions) (ApplyOutcome, error) {
	manager := FieldManagerFor(o.Profile)
	switch item.Action {
	case advisorv1alpha1.ItemActionRelease:
		return e.release(ctx, o.Profile, manager, item)
	case advisorv1alpha1.ItemActionRestore, advisorv1alpha1.ItemActionDelete:
		return e.revert(ctx, o.Profile, manager, item, o.Revert, o.CheckSnapshot)
	}
	// The apply is made to the version of the target its checks read. Another writer in
	// between (another profile applying its own fields of a shared target, a controller
	// updating its object) makes the API server refuse it with a 409, which says only that
	// the object changed, not that a value the plan manages did: the checks are made again
	// on a fresh read, and they decide.
	for attempt := 1; ; attempt++ {
		out, err := e.applyOnce(ctx, item, o, manager)
		if !errors.Is(err, errChangedWhileApplied) || attempt == maxApplyAttempts {
			return out, err
		}
	}
}

// maxApplyAttempts bounds how often ApplyItem reads and checks a target that keeps
// changing between its read and its write; then the conflict is returned, and the
// reconcile is retried with a backoff.
const maxApplyAttempts = 3

// errChangedWhileApplied wraps the 409 of an apply made to a version of its target that is
// no longer the latest.
var errChangedWhileApplied = errors.New("the target changed between its read and the apply")

// applyOnce is one attempt of ApplyItem, from a fresh read of the target.
func (e *Engine) applyOnce(ctx context.Context, item advisorv1alpha1.PlanItem, o ApplyOptions, manager string) (ApplyOutcome, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return ApplyOutcome{}, err
	}
	paths, err := ParseFieldPaths(item.ManagedFields)
	if err != nil {
		return ApplyOutcome{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	norms := normalizersOf(item.IgnoredFields)
	target := TargetOf(desired)
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return ApplyOutcome{}, err
	}
	if optedOut(live) {
		return ApplyOutcome{Unmanaged: true}, nil
	}
	if o.Rendered != nil {
		same, err := rendersTo(*o.Rendered, o.Profile, live, desired, item.IgnoredFields)
		if err != nil {
			return ApplyOutcome{}, err
		}
		if !same {
			return ApplyOutcome{Outdated: true}, nil
		}
	}
	if item.TargetHash != "" && valuesHash(target, paths, live, false, norms...) == item.TargetHash &&
		ownsExactly(live, manager, paths, item.IgnoredFields) {
		return ApplyOutcome{AlreadyApplied: true, Record: record(item, item.TargetHash)}, nil
	}
	if len(item.IgnoredFields) > 0 {
		// Fields handed to the user are sent with their value as it is now, never with the
		// value they had when the plan was drafted: the apply keeps them as they are.
		ptrs, err := ParsePointers(item.IgnoredFields)
		if err != nil {
			return ApplyOutcome{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
		}
		if desired, _, err = (Controls{Ignore: ptrs}).apply(desired, live); err != nil {
			return ApplyOutcome{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
		}
	}
	if o.CheckSnapshot && !snapshotMatches(item.SnapshotHash, target, paths, live, norms...) && !movedToward(item, target, paths, live, norms) {
		return ApplyOutcome{Stale: true, StaleReason: "changed since the plan was reviewed"}, nil
	}
	opts := []client.ApplyOption{client.FieldOwner(manager)}
	force, stale, err := e.takesOver(ctx, item, o, desired, live, manager, paths)
	switch {
	case err != nil:
		return ApplyOutcome{}, err
	case stale != "":
		return ApplyOutcome{Stale: true, StaleReason: stale}, nil
	case force:
		opts = append(opts, client.ForceOwnership)
	}
	applied := desired.DeepCopy()
	if live != nil {
		// Apply only to the version just checked, its user-control annotations included: a
		// change between the check and the apply is a conflict, after which the checks are
		// made again on a fresh read (see ApplyItem), which sees a change of the managed
		// values (Stale) or an opt-out set in between.
		applied.SetResourceVersion(live.GetResourceVersion())
	}
	if err := e.writer().Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), opts...); err != nil {
		if now, isConflict := fieldConflicts(err, live, desired); isConflict {
			return ApplyOutcome{Stale: true, StaleReason: "another field manager owns a field the plan sets: " + describeConflicts(now)}, nil
		}
		if live != nil && apierrors.IsConflict(err) {
			return ApplyOutcome{}, fmt.Errorf("apply %s: %w: %w", describe(desired), errChangedWhileApplied, err)
		}
		return ApplyOutcome{}, fmt.Errorf("apply %s: %w", describe(desired), err)
	}
	out := ApplyOutcome{Applied: true, Record: record(item, valuesHash(target, paths, applied, false, norms...)), Written: applied}
	out.SpecChanged = live == nil || !jsonEqual(live.Object["spec"], applied.Object["spec"])
	if live == nil && createdByProfile(applied, manager) {
		out.CreatedUID = applied.GetUID()
	}
	return out, nil
}

// takesOver tells whether the apply takes fields over from other field managers (force):
// always when the optimistic lock is bypassed, and when the approved plan showed conflicts
// and the fields another manager owns now are among them. A field another manager took
// since the review is a new conflict nobody reviewed: stale says so.
func (e *Engine) takesOver(ctx context.Context, item advisorv1alpha1.PlanItem, o ApplyOptions, desired, live *unstructured.Unstructured,
	manager string, paths []FieldPath) (force bool, stale string, err error) {
	switch {
	case o.Force:
		return true, "", nil
	case len(item.Conflicts) == 0:
		return false, "", nil
	case o.CheckSnapshot && live != nil && item.ConflictsFoundOn == live.GetResourceVersion():
		// The target is the very version the approved plan's conflicts were found on, and
		// the apply is made to that version only: it takes over exactly those.
		return true, "", nil
	}
	probe := desired.DeepCopy()
	if err := e.writer().Apply(ctx, client.ApplyConfigurationFromUnstructured(probe), client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll); err != nil {
		return false, "", fmt.Errorf("dry-run %s: %w", describe(desired), err)
	}
	if now := takenOver(live, probe, desired, manager, paths); !conflictsCovered(now, item.Conflicts) {
		return false, "another field manager took a field since the review: " + describeConflicts(now), nil
	}
	return true, "", nil
}

// rendersTo tells whether the item the profile renders now, marked and adjusted by the
// target's user-control annotations as a draft does, is exactly desired.
func rendersTo(rendered Item, profile string, live, desired *unstructured.Unstructured, ignored []string) (bool, error) {
	if rendered.Desired == nil || rendered.SkipReason != "" {
		return false, nil
	}
	now, err := withOwnershipMarks(rendered.Desired, profile)
	if err != nil {
		return false, err
	}
	controls, err := ReadControls(live)
	if err != nil || controls.Unmanaged {
		return false, nil
	}
	if now, _, err = controls.apply(now, live); err != nil {
		return false, nil
	}
	// Fields handed to the user carry their live value, which may have changed since the
	// draft: they are no part of what was approved.
	norms := normalizersOf(ignored)
	return jsonEqual(normalized(now, norms...), normalized(desired, norms...)), nil
}

// movedToward tells whether a target changed since the draft only toward the plan: it now
// holds exactly the values applying the item leaves, with the user-control annotations it
// had. The profile's own earlier apply (before a crash) or a co-owner (another profile, an
// administrator) setting the same values does not make the plan stale: what the item
// writes is still what was approved.
func movedToward(item advisorv1alpha1.PlanItem, target advisorv1alpha1.TargetReference, paths []FieldPath, live *unstructured.Unstructured, norms []Normalizer) bool {
	return item.TargetHash != "" && live != nil && valuesHash(target, paths, live, false, norms...) == item.TargetHash &&
		controlsHash(live) == item.ControlsHash
}

// optedOut tells whether the user took the target back with ModeAnnotation; nil (the
// target does not exist) carries no annotation.
func optedOut(live *unstructured.Unstructured) bool {
	return live != nil && live.GetAnnotations()[ModeAnnotation] == ModeUnmanaged
}

// InSyncRecord is the record of an item whose draft found its target already as planned
// and owned by the profile (diff NoChanges): what its apply would record without a write.
// A plan that completes with no changes keeps watching those targets for drift through
// it. nil for any other item.
func InSyncRecord(item advisorv1alpha1.PlanItem) *advisorv1alpha1.AppliedRecord {
	if item.Action == advisorv1alpha1.ItemActionRelease || item.Change != advisorv1alpha1.ChangeNone || item.TargetHash == "" {
		return nil
	}
	return record(item, item.TargetHash)
}

func record(item advisorv1alpha1.PlanItem, hash string) *advisorv1alpha1.AppliedRecord {
	return &advisorv1alpha1.AppliedRecord{Fields: append([]string(nil), item.ManagedFields...), Hash: hash}
}

// readLive reads the target uncached; nil means it does not exist.
func (e *Engine) readLive(ctx context.Context, like *unstructured.Unstructured, key types.NamespacedName) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(like.GroupVersionKind())
	err := e.reader().Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", like.GetKind(), key, err)
	}
	return live, nil
}

// DriftCheck is what a target looks like against what its item applied.
type DriftCheck struct {
	// InSync: the values the item applied are still there (or it applied nothing).
	InSync bool
	// ControlsChanged: the target's user-control annotations changed since the plan was
	// drafted; the plan must be drafted again, and nothing else was checked.
	ControlsChanged bool
	// Refused, when set, is why the API server refuses the correction's dry-run because of
	// the target's patch annotation (the desired state it made no longer fits the served
	// schema): the item's to report, by a fresh draft, never a reconcile error to retry.
	Refused string
	// Check is the correction (set when not in sync): the diff that re-applying shows.
	Check
}

// ControlsChanged tells whether the user-control annotations of an item's target differ
// from those the item was drafted with (one uncached read of the target).
func (e *Engine) ControlsChanged(ctx context.Context, item advisorv1alpha1.PlanItem) (bool, error) {
	if item.TargetRef.Kind == "" || item.DesiredState == nil {
		return false, nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return false, err
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return false, err
	}
	if live == nil {
		return item.ControlsHash != "", nil
	}
	return controlsHash(live) != item.ControlsHash, nil
}

// CheckDrift compares an applied item's target with what the item applied: a read and a
// hash when it is in sync; a dry-run of the correction only when it is not. A target whose
// user-control annotations changed is only reported so (its plan is drafted again, and
// the draft judges the annotations), and an item that applied nothing is only checked for
// them: neither is dry-run, so an annotation the API server refuses is reported once, by
// the draft, as its item's message.
func (e *Engine) CheckDrift(ctx context.Context, profile string, item advisorv1alpha1.PlanItem) (DriftCheck, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return DriftCheck{}, err
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return DriftCheck{}, err
	}
	var dc DriftCheck
	if live != nil {
		dc.ControlsChanged = controlsHash(live) != item.ControlsHash
	} else {
		dc.ControlsChanged = item.ControlsHash != ""
	}
	if dc.ControlsChanged || item.Applied == nil {
		dc.InSync = true
		return dc, nil
	}
	paths, err := ParseFieldPaths(item.Applied.Fields)
	if err != nil {
		return DriftCheck{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	if valuesHash(TargetOf(desired), paths, live, false, normalizersOf(item.IgnoredFields)...) == item.Applied.Hash {
		dc.InSync = true
		return dc, nil
	}
	dc.Check, err = e.check(ctx, FieldManagerFor(profile), desired, live, item)
	if err != nil {
		if controls, cerr := ReadControls(live); cerr == nil && len(controls.Patch) > 0 && refusesObject(err) {
			dc.InSync, dc.Refused = true, refusedPatch(err).Error()
			return dc, nil
		}
		return DriftCheck{}, err
	}
	dc.InSync = dc.Change != advisorv1alpha1.ChangeValues
	return dc, nil
}

// Recheck compares a drafted item's desired state with its target as it is now.
func (e *Engine) Recheck(ctx context.Context, profile string, item advisorv1alpha1.PlanItem) (Check, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return Check{}, err
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return Check{}, err
	}
	return e.check(ctx, FieldManagerFor(profile), desired, live, item)
}

// Snapshot is the snapshot hash of a drafted item's target as it is now. An item whose
// target moved toward the approved plan reports its drafted snapshot (see movedToward).
func (e *Engine) Snapshot(ctx context.Context, profile string, item advisorv1alpha1.PlanItem) (string, error) {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return item.SnapshotHash, nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return "", err
	}
	paths, err := ParseFieldPaths(item.ManagedFields)
	if err != nil {
		return "", fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return "", err
	}
	norms := normalizersOf(item.IgnoredFields)
	target := TargetOf(desired)
	if snapshotMatches(item.SnapshotHash, target, paths, live, norms...) || movedToward(item, target, paths, live, norms) {
		return item.SnapshotHash, nil
	}
	return valuesHash(target, paths, live, true, norms...), nil
}

// Holds tells whether an item's target already holds the values applying the item leaves,
// owned by the profile: applying it again would change nothing.
func (e *Engine) Holds(ctx context.Context, profile string, item advisorv1alpha1.PlanItem) (bool, error) {
	if item.Action == advisorv1alpha1.ItemActionRelease || item.TargetHash == "" {
		return false, nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return false, err
	}
	paths, err := ParseFieldPaths(item.ManagedFields)
	if err != nil {
		return false, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, item.Name, err)
	}
	live, err := e.readLive(ctx, desired, client.ObjectKeyFromObject(desired))
	if err != nil {
		return false, err
	}
	return valuesHash(TargetOf(desired), paths, live, false, normalizersOf(item.IgnoredFields)...) == item.TargetHash &&
		ownsExactly(live, FieldManagerFor(profile), paths, item.IgnoredFields), nil
}
