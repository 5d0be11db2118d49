package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/schedule"
)

// draftCause says why a plan is drafted: the reason and message of the Drafting
// condition, and the reason the plan then waits for review with.
type draftCause struct {
	by      drafter
	reason  string
	message string
	review  string
	// showFirst: the plan is approved only by an approval given after it was shown, even
	// when the spec already says Apply (a plan drafted after a failure).
	showFirst bool
}

// rendering is a profile's render through a recorder, done once and used by the checks
// and the draft that follows.
type rendering struct {
	rec   *plan.Recorder
	items []plan.Item
	err   error
}

// render reads the prerequisites and renders the profile through one recorder, the reads a
// draft makes, so a rendering and a draft record the same inputs.
func (r *VirtPlatformConfigReconciler) render(ctx context.Context, s *scope) *rendering {
	rec := plan.NewRecorder(r.watches.Reader(r.APIReader))
	if err := profiles.CheckPrerequisites(ctx, rec, s.profile.Prerequisites(s.opts)); err != nil {
		return &rendering{rec: rec, err: err}
	}
	items, err := s.profile.Render(ctx, rec, s.opts)
	return &rendering{rec: rec, items: items, err: err}
}

// draft renders and dry-runs a fresh plan, then hands it to review or, when the spec
// already approves it, to execution. A rendering already done by the caller is reused.
func (r *VirtPlatformConfigReconciler) draft(ctx context.Context, s *scope, cause draftCause, done *rendering) (outcome, error) {
	st := &s.vpc.Status
	s.setPhase(advisorv1alpha1.PhaseDrafting, cause.reason, cause.message)
	// Persisted with whatever this draft ends in, including a passing error: a redraft
	// the operator started needs a fresh approval, however it gets interrupted.
	s.recordDrafter(cause.by, cause.review)
	if cause.by == resumed {
		if a := s.approvalStatus(); a.OperatorDrafted && a.Cause != "" {
			// The interrupted draft was the operator's own: say why it was drafted.
			cause.review = a.Cause
		}
	}
	fail := func(phase advisorv1alpha1.Phase, reason, message string) {
		s.clearPlan()
		st.PlanSpecHash = s.specHash
		st.AppliedOptions = s.opts
		s.setPhase(phase, reason, message)
	}
	if w := s.vpc.Spec.MaintenanceWindow; w != nil {
		// Found now, not after an approval and the writes of the items before the batch.
		if _, err := schedule.Parse(w.Schedule, w.Duration.Duration, w.TimeZone); err != nil {
			fail(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonInvalidMaintenanceWindow, fmt.Sprintf(
				"spec.maintenanceWindow: %v. Nothing was drafted or applied: fix it to draft the plan", err))
			return outcome{}, nil
		}
	}
	if s.vpc.Spec.Revert {
		return r.draftRevert(ctx, s, cause)
	}
	if err := s.profile.Validate(s.opts); err != nil {
		fail(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonInvalidOptions, fmt.Sprintf("%v: fix spec.options", err))
		return outcome{}, nil
	}
	if done == nil {
		done = r.render(ctx, s)
	}
	if done.err != nil {
		if profiles.IsPrerequisiteError(done.err) {
			fail(advisorv1alpha1.PhasePrerequisiteFailed, advisorv1alpha1.ReasonPrerequisiteMissing, done.err.Error())
			return waitFor(prerequisiteRecheck), nil
		}
		return outcome{}, fmt.Errorf("render profile %s: %w", s.vpc.Spec.Profile, done.err)
	}
	p, err := r.Engine.Draft(ctx, plan.Request{
		Profile: s.profileName(), Items: done.items, Recorder: done.rec,
		Revision: st.PlanRevision + 1, Previous: st.Items,
	})
	if err != nil {
		if errors.Is(err, plan.ErrInvalidPlan) {
			fail(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonInvalidPlan, err.Error())
			return outcome{}, nil
		}
		return outcome{}, err
	}
	r.install(s, p, st.PlanRevision+1)
	if err := r.forecast(ctx, s, nil); err != nil {
		return outcome{}, err
	}
	return outcome{then: reviewHandler, cause: cause}, nil
}

// install puts a drafted plan in status (plan.Ledger.Install), with the spec and operator
// version it was drafted for.
func (r *VirtPlatformConfigReconciler) install(s *scope, p plan.Plan, revision int64) {
	st := &s.vpc.Status
	noteNewConflicts(s, st.Items, p.Items)
	s.ledger().Install(p, revision)
	st.PlanSpecHash = s.specHash
	st.AppliedOptions = s.opts
	st.OperatorVersion = r.Version
	s.drafted = true
	s.noteAll(p.Notes)
}

// noteNewConflicts records a FieldConflict Event for each conflict the plan shows that the
// plan it replaces did not show, so redrafting the same plan repeats no Event.
func noteNewConflicts(s *scope, previous, drafted []advisorv1alpha1.PlanItem) {
	shown := map[string]bool{}
	key := func(item string, c advisorv1alpha1.FieldConflict) string {
		return item + "\x00" + c.Path + "\x00" + c.Manager + "\x00" + c.LiveValue + "\x00" + c.PlannedValue
	}
	for _, it := range previous {
		for _, c := range it.Conflicts {
			shown[key(it.Name, c)] = true
		}
	}
	for _, it := range drafted {
		for _, c := range it.Conflicts {
			if !shown[key(it.Name, c)] {
				s.noteItem(it.Name, corev1.EventTypeWarning, advisorv1alpha1.EventFieldConflict,
					"item %s: %s; approving the plan takes it over", it.Name, plan.DescribeConflict(c))
			}
		}
	}
}

// review decides what a freshly drafted plan needs: nothing (rule 2: every target already
// matches), a fix (the API server refuses part of it), or an approval.
func (r *VirtPlatformConfigReconciler) review(ctx context.Context, s *scope, cause draftCause) (outcome, error) {
	st := &s.vpc.Status
	var rejected []string
	changes := 0
	for i, it := range st.Items {
		switch {
		case it.State == advisorv1alpha1.ItemFailed:
			rejected = append(rejected, fmt.Sprintf("%s: %s", it.Name, it.Message))
		case it.State == advisorv1alpha1.ItemPending && it.Change == advisorv1alpha1.ChangeNone:
			s.ledger().SetState(i, advisorv1alpha1.ItemPending, "already as planned: "+it.Message)
		case it.State == advisorv1alpha1.ItemPending:
			changes++
		}
	}
	if len(rejected) > 0 {
		s.noApprovalNeeded()
		s.setPhase(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonPlanRejected,
			"the API server refuses part of the plan, nothing was applied: "+strings.Join(rejected, "; ")+
				". Fix the cause, then change or touch the spec to draft the plan again")
		return outcome{}, nil
	}
	if changes == 0 {
		return r.nothingToApply(ctx, s)
	}
	what := "the plan"
	if s.vpc.Spec.Revert {
		what = "the revert plan"
	}
	msg := fmt.Sprintf("%s changes %d target(s) (impact %s): review status.items[].diff", what, changes, highestImpact(st.Items))
	if st.Disruption != "" {
		msg += "; " + disruptionClause(st.Disruption)
	}
	if cause.by == byOperator {
		msg = cause.message + "; " + msg
	}
	reason := cause.review
	if cause.showFirst {
		s.reviewBeforeApproval()
	}
	if owners := plan.ConflictOwners(st.Items, false); len(owners) > 0 {
		// Fields another manager (another profile, GitOps, kubectl) set to other values are
		// taken only by a plan that showed them and was approved after that: an Apply given
		// before (even at creation) does not count.
		s.reviewBeforeApproval()
		msg += fmt.Sprintf("; it takes over fields that %s set(s) to other values (status.items[].conflicts), "+
			"so only an approval given after this review applies it", strings.Join(owners, ", "))
		if !s.approvalStatus().OperatorDrafted {
			reason = advisorv1alpha1.ReasonFieldConflicts
		}
	}
	return outcome{then: decideHandler, reason: reason, message: msg}, nil
}

// nothingToApply ends a plan whose targets all match it already (rule 2). A target that
// rolls out to nodes is judged by its pools too: a plan drafted again while a pool still
// rolls the previous execution out waits for that rollout (and reports its failure)
// before it says Completed; nothing is written.
func (r *VirtPlatformConfigReconciler) nothingToApply(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	if s.vpc.Spec.Revert {
		for i := range st.Items {
			s.ledger().SetState(i, advisorv1alpha1.ItemCompleted, st.Items[i].Message)
		}
		r.finishRevert(s)
		return outcome{}, nil
	}
	waiting := 0
	for i, it := range st.Items {
		if it.State != advisorv1alpha1.ItemPending {
			continue
		}
		// Already as planned and owned by the profile: watched for drift as if applied
		// now.
		s.ledger().RecordInSync(i)
		if plan.RollsOut(it) && s.vpc.Spec.Action == advisorv1alpha1.ActionApply {
			h, err := r.Engine.CheckHealth(ctx, it, s.now.Time, 0, s.now.Time)
			if err != nil {
				return outcome{}, err
			}
			if h.State != plan.Healthy {
				t := s.now
				s.ledger().SetWaiting(i, &t)
				s.ledger().SetState(i, advisorv1alpha1.ItemInProgress, "already as planned; waiting for the rollout: "+h.Message)
				waiting++
				continue
			}
		}
		s.ledger().SetState(i, advisorv1alpha1.ItemCompleted, it.Message)
	}
	s.noApprovalNeeded()
	if waiting > 0 {
		s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonAwaitingRollout, fmt.Sprintf(
			"every target already matches the plan; %d item(s) wait for their MachineConfigPools to run them on every node", waiting))
		return nextStep, nil
	}
	s.setPhase(advisorv1alpha1.PhaseCompleted, advisorv1alpha1.ReasonNoChanges, "every target already matches the plan")
	return outcome{}, nil
}

// inputsChanged renders the profile again and tells whether the plan it renders now differs
// from the plan in status because what it was rendered from changed. Inputs that changed
// without changing any desired state (a pool that rolled out, a status update) are only
// recorded. The rendering is returned for the redraft.
func (r *VirtPlatformConfigReconciler) inputsChanged(ctx context.Context, s *scope) (bool, *rendering, error) {
	st := &s.vpc.Status
	done := r.render(ctx, s)
	if done.err != nil {
		if profiles.IsPrerequisiteError(done.err) {
			// A prerequisite went away: the redraft reports it.
			return true, done, nil
		}
		return false, nil, fmt.Errorf("render profile %s: %w", s.vpc.Spec.Profile, done.err)
	}
	inputs, hash := done.rec.Inputs(targetsOf(st.Items))
	if hash == st.InputsHash {
		return false, done, nil
	}
	same, err := r.Engine.RendersSame(ctx, done.rec, s.profileName(), done.items, st.Items)
	if err != nil {
		return false, nil, err
	}
	if same {
		s.ledger().RecordInputs(inputs, hash)
		return false, done, nil
	}
	return true, done, nil
}

func targetsOf(items []advisorv1alpha1.PlanItem) []advisorv1alpha1.TargetReference {
	out := make([]advisorv1alpha1.TargetReference, 0, len(items))
	for _, it := range items {
		out = append(out, it.TargetRef)
	}
	return out
}

func highestImpact(items []advisorv1alpha1.PlanItem) advisorv1alpha1.ImpactSeverity {
	st := advisorv1alpha1.VirtPlatformConfigStatus{Items: items}
	st.Summarize()
	return st.ImpactSeverity
}
