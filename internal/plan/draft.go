package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
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
	return p, nil
}

// mergeFragments checks the rendered items and merges the fragments of one item (same
// name) into one: one item per target, so one field manager sends all its fields at once.
func mergeFragments(items []Item) ([]Item, error) {
	var order []string
	byName := map[string][]Item{}
	targetOf := map[advisorv1alpha1.TargetReference]string{}
	for _, it := range items {
		if it.Desired == nil {
			return nil, fmt.Errorf("%w: item %q has no desired state", ErrInvalidPlan, it.Name)
		}
		t := TargetOf(it.Desired)
		if other, dup := targetOf[t]; dup && other != it.Name {
			return nil, fmt.Errorf("%w: items %q and %q both target %s", ErrInvalidPlan, other, it.Name, describe(it.Desired))
		}
		targetOf[t] = it.Name
		if prev, ok := byName[it.Name]; ok {
			if TargetOf(prev[0].Desired) != t {
				return nil, fmt.Errorf("%w: two items are named %q", ErrInvalidPlan, it.Name)
			}
			if prev[0].Component == "" || it.Component == "" {
				return nil, fmt.Errorf("%w: two items are named %q", ErrInvalidPlan, it.Name)
			}
		} else {
			order = append(order, it.Name)
		}
		byName[it.Name] = append(byName[it.Name], it)
	}
	out := make([]Item, 0, len(order))
	for _, name := range order {
		merged, err := merge(byName[name])
		if err != nil {
			return nil, err
		}
		out = append(out, merged)
	}
	return out, nil
}

// merge folds the fragments of one item into one. Fragments that set one field to two
// values are a defect of the profile.
func merge(fragments []Item) (Item, error) {
	if len(fragments) == 1 {
		return fragments[0], nil
	}
	var active, skipped []Item
	for _, f := range fragments {
		if f.SkipReason != "" {
			skipped = append(skipped, f)
		} else {
			active = append(active, f)
		}
	}
	if len(active) == 0 {
		active, skipped = fragments, nil
	}
	out := Item{Name: active[0].Name, Desired: active[0].Desired.DeepCopy(), Impact: active[0].Impact}
	var messages, reasons []string
	for i, f := range active {
		if i > 0 {
			if err := mergeInto(out.Desired.Object, f.Desired.Object, nil); err != nil {
				return Item{}, fmt.Errorf("%w: item %q: components %s and %s: %v", ErrInvalidPlan, out.Name, active[0].Component, f.Component, err)
			}
			out.Impact = maxImpact(out.Impact, f.Impact)
		}
		out.Component = strings.Trim(out.Component+","+f.Component, ",")
		messages = append(messages, f.Component+": "+f.Message)
		if f.SkipReason != "" {
			reasons = append(reasons, f.Component+": "+f.SkipReason)
		}
	}
	for _, f := range skipped {
		messages = append(messages, f.Component+": not planned: "+f.SkipReason)
	}
	out.Message = strings.Join(messages, "; ")
	if len(reasons) == len(active) {
		out.SkipReason = strings.Join(reasons, "; ")
	}
	return out, nil
}

func mergeInto(dst, src map[string]any, path FieldPath) error {
	for k, v := range src {
		p := append(append(FieldPath(nil), path...), k)
		existing, ok := dst[k]
		if !ok {
			dst[k] = runtime.DeepCopyJSONValue(v)
			continue
		}
		dm, dok := existing.(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			if err := mergeInto(dm, sm, p); err != nil {
				return err
			}
			continue
		}
		if !jsonEqual(existing, v) {
			return fmt.Errorf("both set %s, to different values", p)
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

var impactRank = map[advisorv1alpha1.ImpactSeverity]int{
	advisorv1alpha1.ImpactLow: 1, advisorv1alpha1.ImpactMedium: 2, advisorv1alpha1.ImpactHigh: 3,
}

func maxImpact(a, b advisorv1alpha1.ImpactSeverity) advisorv1alpha1.ImpactSeverity {
	if impactRank[b] > impactRank[a] {
		return b
	}
	return a
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

// RenderedItem returns the item of that name among what a profile rendered, its fragments
// merged as a draft merges them; nil when the profile no longer renders it.
func RenderedItem(items []Item, name string) (*Item, error) {
	var fragments []Item
	for _, it := range items {
		if it.Name == name {
			fragments = append(fragments, it)
		}
	}
	if len(fragments) == 0 {
		return nil, nil
	}
	merged, err := merge(fragments)
	if err != nil {
		return nil, err
	}
	return &merged, nil
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
