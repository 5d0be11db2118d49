package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// defaultConcurrency bounds the items drafted at once.
const defaultConcurrency = 8

// Engine drafts and applies plans. Targets are always read uncached: a plan must see the
// object as it is now, not as an informer last saw it.
type Engine struct {
	// Reader reads targets from the API server, bypassing any cache.
	Reader client.Reader
	// Writer sends the server-side applies (dry-run and real) and the releases.
	Writer client.Writer
	// Concurrency bounds how many items of one plan are read and dry-run at once; 0 means 8.
	// Execution is always sequential.
	Concurrency int
}

// Request is one draft.
type Request struct {
	// Profile whose plan this is; its field manager applies the plan.
	Profile string
	// Items as the profile rendered them, in execution order.
	Items []Item
	// Recorder is the reader the profile rendered through; the engine reads targets through
	// it too and reports the other objects it read as the plan's inputs. nil: a fresh one.
	Recorder *Recorder
	// Revision of the plan; it is part of the plan hash.
	Revision int64
	// Previous are the items of the plan this one replaces: a target an earlier plan applied
	// that this one no longer renders gets a Release item.
	Previous []advisorv1alpha1.PlanItem
}

// Plan is a drafted plan: its items and the hashes that identify it.
type Plan struct {
	// Items in execution order: Pending with a diff, Skipped, or Failed when the API server
	// refuses the dry-run (a refusal never hides the other items); Release items last.
	Items []advisorv1alpha1.PlanItem
	// PlanHash identifies the plan shown (revision, desired states, diffs, conflicts).
	PlanHash string
	// SnapshotHash combines the items' snapshots: the optimistic lock.
	SnapshotHash string
	// Inputs are the objects the plan read but does not write, and InputsHash what counted
	// of them.
	Inputs     []advisorv1alpha1.InputReference
	InputsHash string
	// FieldManager applies the plan.
	FieldManager string
	// Content is what the plan would write, independent of the cluster.
	Content *advisorv1alpha1.PlanContent
	// Notes are Events the draft asks for: refused dry-runs, conflicts, bad annotations.
	Notes []Note
}

// Note is an Event a draft or apply asks the caller to record, about one item.
type Note struct {
	Type, Reason, Message string
	// Item names the plan item the Event is about.
	Item string
}

// Draft reads every target (through the recorder), honours its user-control annotations,
// dry-runs its desired state without force and returns the plan. Items draft concurrently.
func (e *Engine) Draft(ctx context.Context, req Request) (Plan, error) {
	items, err := mergeFragments(req.Items)
	if err != nil {
		return Plan{}, err
	}
	rec := req.Recorder
	if rec == nil {
		rec = NewRecorder(e.reader())
	}
	manager := FieldManagerFor(req.Profile)
	out := make([]advisorv1alpha1.PlanItem, len(items))
	notes := make([][]Note, len(items))
	errs := make([]error, len(items))
	limit := e.Concurrency
	if limit <= 0 {
		limit = defaultConcurrency
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], notes[i], errs[i] = e.draftItem(ctx, rec, req.Profile, manager, items[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Plan{}, err
		}
	}
	p := Plan{Items: out, FieldManager: manager}
	for _, n := range notes {
		p.Notes = append(p.Notes, n...)
	}
	releases, err := e.releases(ctx, rec, req.Profile, manager, out, req.Previous)
	if err != nil {
		return Plan{}, err
	}
	p.Items = append(p.Items, releases...)
	var refs []advisorv1alpha1.TargetReference
	for _, it := range p.Items {
		refs = append(refs, it.TargetRef)
	}
	p.Inputs, p.InputsHash = rec.Inputs(refs)
	p.PlanHash = PlanHash(req.Revision, p.Items)
	p.SnapshotHash = CombinedSnapshotHash(p.Items)
	impacts := make(map[string]advisorv1alpha1.ImpactSeverity, len(items))
	for _, it := range items {
		impacts[it.Name] = it.Impact
	}
	p.Content = ContentOf(p.Items, impacts)
	return p, nil
}

// draftItem drafts one item. Errors that are the cluster's answer about this item (a
// refused dry-run, a bad annotation) become its state and message; only passing errors are
// returned.
func (e *Engine) draftItem(ctx context.Context, rec *Recorder, profile, manager string, it Item) (advisorv1alpha1.PlanItem, []Note, error) {
	desired, err := withOwnershipMarks(it.Desired, profile)
	if err != nil {
		return advisorv1alpha1.PlanItem{}, nil, fmt.Errorf("%w: item %s: %v", ErrInvalidPlan, it.Name, err)
	}
	pi := advisorv1alpha1.PlanItem{
		Name:           it.Name,
		TargetRef:      TargetOf(desired),
		ImpactSeverity: it.Impact,
		State:          advisorv1alpha1.ItemPending,
		Message:        it.Message,
	}
	if it.Component != "" {
		pi.Components = strings.Split(it.Component, ",")
	}
	if err := setDesired(&pi, desired, ManagedPaths(desired)); err != nil {
		return pi, nil, err
	}
	if it.SkipReason != "" {
		return skipped(pi, it.SkipReason), nil, nil
	}
	live, err := rec.live(ctx, desired)
	if err != nil {
		if rejected, msg := asRejection(desired, "read", err); rejected {
			pi.State, pi.Message = advisorv1alpha1.ItemFailed, msg
			return pi, []Note{{corev1.EventTypeWarning, advisorv1alpha1.EventItemRejected, fmt.Sprintf("item %s: %s", it.Name, msg), it.Name}}, nil
		}
		return pi, nil, err
	}
	if live != nil {
		pi.ControlsHash = controlsHash(live)
	}
	rendered := desired
	controls, err := ReadControls(live)
	if err == nil && !controls.Unmanaged {
		var adjusted *unstructured.Unstructured
		var paths []FieldPath
		if adjusted, paths, err = controls.apply(desired, live); err == nil {
			desired = adjusted
			err = setDesired(&pi, desired, paths)
		}
	}
	if err != nil {
		if !IsControlError(err) {
			return pi, nil, err
		}
		return badAnnotation(pi, desired, err.(*ControlError))
	}
	if controls.Unmanaged {
		return skipped(pi, fmt.Sprintf("left alone: %s is annotated %s: %s", describe(desired), ModeAnnotation, ModeUnmanaged)), nil, nil
	}
	pi.IgnoredFields = controls.IgnoredFieldStrings()
	c, err := e.check(ctx, manager, desired, live, pi)
	if err != nil {
		if refusesObject(err) && controls.patchChanges(rendered, live, desired) {
			// The object refused is the annotation's doing: only its item is not planned.
			return badAnnotation(pi, desired, refusedPatch(err))
		}
		if rejected, msg := asRejection(desired, "dry-run", err); rejected {
			pi.State = advisorv1alpha1.ItemFailed
			pi.Message = msg
			return pi, []Note{{corev1.EventTypeWarning, advisorv1alpha1.EventItemRejected, fmt.Sprintf("item %s: %s", it.Name, msg), it.Name}}, nil
		}
		return pi, nil, err
	}
	pi.Diff, pi.Change, pi.SnapshotHash, pi.TargetHash, pi.Conflicts = c.Diff, c.Change, c.SnapshotHash, c.TargetHash, c.Conflicts
	if len(c.Conflicts) > 0 {
		pi.ConflictsFoundOn = c.ConflictsFoundOn
	}
	if len(c.Conflicts) > 0 {
		pi.Message += "; approving it takes over fields another manager owns: " + describeConflicts(c.Conflicts)
	}
	switch {
	case c.Change == advisorv1alpha1.ChangeNone:
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
	case (c.MetadataOnly || c.Change == advisorv1alpha1.ChangeOwnershipOnly) && pi.ImpactSeverity != advisorv1alpha1.ImpactLow:
		// Marking a target as co-owned changes nothing it configures: nothing rolls out.
		pi.ImpactSeverity = advisorv1alpha1.ImpactLow
		pi.Message += "; only this profile's ownership marks change, so nothing rolls out"
	}
	return pi, nil, nil
}

func describeConflicts(cs []advisorv1alpha1.FieldConflict) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = DescribeConflict(c)
	}
	return strings.Join(parts, "; ")
}

func skipped(pi advisorv1alpha1.PlanItem, reason string) advisorv1alpha1.PlanItem {
	pi.State = advisorv1alpha1.ItemSkipped
	pi.Message = reason
	pi.ImpactSeverity = advisorv1alpha1.ImpactLow
	pi.ManagedFields = nil
	return pi
}

func setDesired(pi *advisorv1alpha1.PlanItem, desired *unstructured.Unstructured, paths []FieldPath) error {
	raw, err := json.Marshal(desired.Object)
	if err != nil {
		return fmt.Errorf("encode desired state of item %s: %w", pi.Name, err)
	}
	pi.DesiredState = &runtime.RawExtension{Raw: raw}
	pi.ManagedFields = PathStrings(paths)
	return nil
}

func controlsHash(live *unstructured.Unstructured) string {
	c := controlAnnotations(live)
	if len(c) == 0 {
		return ""
	}
	return HashJSON(c)
}

// RendersSame tells whether what a profile rendered is exactly the plan in items: the same
// items in the same order, each with the desired state it shows (ownership marks and the
// target's user-control annotations applied, as a draft applies them) or skipped for the
// same reason. Messages and impacts do not count: when only they differ (for example a
// reboot that is no longer expected), the plan is still the one that was reviewed. Targets
// are read through rec.
func (e *Engine) RendersSame(ctx context.Context, rec *Recorder, profile string, rendered []Item, items []advisorv1alpha1.PlanItem) (bool, error) {
	merged, err := mergeFragments(rendered)
	if err != nil {
		return false, nil
	}
	var planned []advisorv1alpha1.PlanItem
	for _, it := range items {
		if it.Action != advisorv1alpha1.ItemActionRelease {
			planned = append(planned, it)
		}
	}
	if len(merged) != len(planned) {
		return false, nil
	}
	for i, m := range merged {
		it := planned[i]
		if m.Name != it.Name {
			return false, nil
		}
		if m.SkipReason != "" {
			if it.State != advisorv1alpha1.ItemSkipped || it.Message != m.SkipReason {
				return false, nil
			}
			continue
		}
		if it.State == advisorv1alpha1.ItemSkipped && it.ControlsHash == "" {
			// It was skipped by the profile, and is not any more.
			return false, nil
		}
		desired, err := DesiredObject(it)
		if err != nil {
			return false, nil
		}
		live, err := rec.live(ctx, desired)
		if err != nil {
			return false, err
		}
		same, err := rendersTo(m, profile, live, desired, it.IgnoredFields)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}
