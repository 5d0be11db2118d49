package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// ErrInvalidPlan marks a plan a profile rendered wrongly (for example two items for one
// target); drafting it again gives the same result.
var ErrInvalidPlan = errors.New("invalid plan")

// Engine drafts and applies plans. Targets are always read uncached: a plan must see the
// object as it is now, not as an informer last saw it.
type Engine struct {
	// Reader reads targets from the API server, bypassing any cache.
	Reader client.Reader
	// Writer sends the server-side applies (dry-run and real).
	Writer client.Writer
}

// Draft reads every target, dry-runs its desired state and returns the plan items in
// render order, each Pending with its diff and snapshot, or Skipped, or Failed when the
// API server rejects the desired state (a rejection never hides the other items).
func (e *Engine) Draft(ctx context.Context, profile string, items []Item) ([]advisorv1alpha1.PlanItem, error) {
	if err := checkUnique(items); err != nil {
		return nil, err
	}
	out := make([]advisorv1alpha1.PlanItem, 0, len(items))
	for _, it := range items {
		pi, err := e.draftItem(ctx, profile, it)
		if err != nil {
			return nil, err
		}
		out = append(out, pi)
	}
	return out, nil
}

// checkUnique refuses two items with one name or one target: with a single field manager,
// a second apply to the same target would drop the fields of the first.
func checkUnique(items []Item) error {
	names := map[string]bool{}
	targets := map[advisorv1alpha1.TargetReference]string{}
	for _, it := range items {
		if it.Desired == nil {
			return fmt.Errorf("%w: item %q has no desired state", ErrInvalidPlan, it.Name)
		}
		if names[it.Name] {
			return fmt.Errorf("%w: two items are named %q", ErrInvalidPlan, it.Name)
		}
		names[it.Name] = true
		t := TargetOf(it.Desired)
		if other, dup := targets[t]; dup {
			return fmt.Errorf("%w: items %q and %q both target %s", ErrInvalidPlan, other, it.Name, describe(it.Desired))
		}
		targets[t] = it.Name
	}
	return nil
}

func (e *Engine) draftItem(ctx context.Context, profile string, it Item) (advisorv1alpha1.PlanItem, error) {
	desired, err := withOwnershipMarks(it.Desired, profile)
	if err != nil {
		return advisorv1alpha1.PlanItem{}, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, it.Name, err)
	}
	raw, err := json.Marshal(desired.Object)
	if err != nil {
		return advisorv1alpha1.PlanItem{}, fmt.Errorf("encode desired state of item %s: %w", it.Name, err)
	}
	pi := advisorv1alpha1.PlanItem{
		Name:           it.Name,
		TargetRef:      TargetOf(desired),
		ImpactSeverity: it.Impact,
		DesiredState:   &runtime.RawExtension{Raw: raw},
		ManagedFields:  PathStrings(ManagedPaths(desired)),
		State:          advisorv1alpha1.ItemPending,
		Message:        it.Message,
	}
	if it.SkipReason != "" {
		pi.State = advisorv1alpha1.ItemSkipped
		pi.Message = it.SkipReason
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
		pi.ManagedFields = nil
		return pi, nil
	}
	check, err := e.check(ctx, desired)
	if err != nil {
		if rejected, msg := asRejection(desired, "dry-run", err); rejected {
			pi.State = advisorv1alpha1.ItemFailed
			pi.Message = msg
			return pi, nil
		}
		return advisorv1alpha1.PlanItem{}, err
	}
	pi.Diff = check.Diff
	pi.SnapshotHash = check.SnapshotHash
	if check.Diff == NoChanges {
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
	}
	return pi, nil
}

// Check is a fresh comparison of one desired state with its live target.
type Check struct {
	// Diff from live to the dry-run result; NoChanges when in sync.
	Diff string
	// SnapshotHash of the live values at the managed paths.
	SnapshotHash string
	// ChangedPaths are the managed paths whose live value differs from the plan.
	ChangedPaths []string
}

// Recheck compares a drafted item's desired state with its target as it is now: the
// drift check. A Skipped item or one without desired state has nothing to compare.
func (e *Engine) Recheck(ctx context.Context, item advisorv1alpha1.PlanItem) (Check, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return Check{}, err
	}
	return e.check(ctx, desired)
}

// Snapshot is the SnapshotHash of a drafted item's target as it is now.
func (e *Engine) Snapshot(ctx context.Context, item advisorv1alpha1.PlanItem) (string, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return "", err
	}
	live, err := e.readLive(ctx, desired)
	if err != nil {
		return "", err
	}
	return SnapshotHash(desired, live), nil
}

func (e *Engine) check(ctx context.Context, desired *unstructured.Unstructured) (Check, error) {
	live, err := e.readLive(ctx, desired)
	if err != nil {
		return Check{}, err
	}
	planned := desired.DeepCopy()
	if err := e.Writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(planned),
		client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return Check{}, fmt.Errorf("dry-run %s: %w", describe(desired), err)
	}
	diff, err := Diff(live, planned)
	if err != nil {
		return Check{}, err
	}
	c := Check{Diff: diff, SnapshotHash: SnapshotHash(desired, live)}
	if diff != NoChanges {
		c.ChangedPaths = changedPaths(desired, live, planned)
	}
	return c, nil
}

// changedPaths lists the managed paths whose values differ between live and planned.
func changedPaths(desired, live, planned *unstructured.Unstructured) []string {
	var out []string
	for _, p := range ManagedPaths(desired) {
		pv, pok := valueAt(planned.Object, p)
		var lv any
		lok := false
		if live != nil {
			lv, lok = valueAt(live.Object, p)
		}
		if pok != lok || !jsonEqual(pv, lv) {
			out = append(out, p.String())
		}
	}
	return out
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// readLive reads the target uncached; nil means it does not exist.
func (e *Engine) readLive(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := e.Reader.Get(ctx, types.NamespacedName{Namespace: desired.GetNamespace(), Name: desired.GetName()}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", describe(desired), err)
	}
	return live, nil
}

// ApplyOutcome is what executing one item did.
type ApplyOutcome struct {
	// Stale is set when the target changed since the plan was drafted; nothing was applied.
	Stale bool
	// Applied is set when a real apply was sent.
	Applied bool
	// HealthBaseline is what the item's health check compares against.
	HealthBaseline string
	// SnapshotHash is the snapshot of the target as the item left it, so a later retry
	// of the item only calls it stale if somebody else changed it since.
	SnapshotHash string
}

// ApplyItem executes one Pending item: it re-reads the target and, when checkSnapshot is
// set, refuses (Stale) if the managed values changed since the plan was drafted; it records
// the health baseline and sends the real server-side apply, unless the target already
// matches. A returned error that IsPermanent fails the item; any other is worth a retry.
func (e *Engine) ApplyItem(ctx context.Context, item advisorv1alpha1.PlanItem, checkSnapshot bool) (ApplyOutcome, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return ApplyOutcome{}, err
	}
	live, err := e.readLive(ctx, desired)
	if err != nil {
		return ApplyOutcome{}, err
	}
	unchanged := SnapshotHash(desired, live) == item.SnapshotHash
	if checkSnapshot && !unchanged {
		return ApplyOutcome{Stale: true}, nil
	}
	baseline, err := e.healthBaseline(ctx, desired)
	if err != nil {
		return ApplyOutcome{}, err
	}
	if unchanged && item.Diff == NoChanges {
		return ApplyOutcome{SnapshotHash: item.SnapshotHash}, nil
	}
	applied := desired.DeepCopy()
	if checkSnapshot && live != nil {
		// Apply only to the version just checked: a change between the check and the
		// apply is a conflict, and the item is stale rather than overwritten.
		applied.SetResourceVersion(live.GetResourceVersion())
	}
	if err := e.Writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if checkSnapshot && apierrors.IsConflict(err) {
			return ApplyOutcome{Stale: true}, nil
		}
		return ApplyOutcome{}, fmt.Errorf("apply %s: %w", describe(desired), err)
	}
	if live != nil && jsonEqual(live.Object["spec"], applied.Object["spec"]) {
		// Only metadata changed: nothing will roll out, so there is nothing to wait for
		// beyond the target being healthy.
		baseline = ""
	}
	return ApplyOutcome{Applied: true, HealthBaseline: baseline, SnapshotHash: SnapshotHash(desired, applied)}, nil
}

// DesiredObject decodes an item's desired state.
func DesiredObject(item advisorv1alpha1.PlanItem) (*unstructured.Unstructured, error) {
	if item.DesiredState == nil || len(item.DesiredState.Raw) == 0 {
		return nil, fmt.Errorf("%w: item %q has no desired state", ErrInvalidPlan, item.Name)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(item.DesiredState.Raw); err != nil {
		return nil, fmt.Errorf("%w: decode desired state of item %q: %v", ErrInvalidPlan, item.Name, err)
	}
	return obj, nil
}

// IsPermanent tells API errors that will not go away by retrying (the request itself is
// refused) from passing ones (timeouts, throttling, unavailable servers).
func IsPermanent(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrInvalidPlan), meta.IsNoMatchError(err):
		return true
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "field not declared in schema"):
		// Server-side apply reports a desired state that does not fit the served schema
		// as an internal error; it fails the same way every time.
		return true
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		return true
	}
	return false
}

// asRejection turns a permanent error into an item message that names the target.
func asRejection(desired *unstructured.Unstructured, verb string, err error) (bool, string) {
	if !IsPermanent(err) {
		return false, ""
	}
	if meta.IsNoMatchError(err) {
		return true, fmt.Sprintf("the cluster does not serve %s (%s): install the operator that provides it", desired.GetKind(), desired.GetAPIVersion())
	}
	reason := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		reason = status.Status().Message
	}
	return true, fmt.Sprintf("the API server refused the %s of %s: %s", verb, describe(desired), reason)
}

// FailureMessage is the item message for a failed apply.
func FailureMessage(item advisorv1alpha1.PlanItem, err error) string {
	desired, derr := DesiredObject(item)
	if derr != nil {
		return derr.Error()
	}
	_, msg := asRejection(desired, "apply", err)
	if msg == "" {
		msg = err.Error()
	}
	return msg
}
