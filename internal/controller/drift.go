package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// watchApplied keeps an applied plan in place, in every phase after an apply
// (Completed, CompletedWithErrors, CompletedWithUpgrade, Drifted, and PrerequisiteFailed
// when a target's kind went away): it offers the plan of a newer operator version
// (rule 10), detects drift and its reversal (rule 7), redrafts when an input of the plan
// changed, and applies approved or aggressive corrections.
func (r *VirtPlatformConfigReconciler) watchApplied(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	if st.OperatorVersion != r.Version && (st.Phase == advisorv1alpha1.PhaseCompleted || st.Phase == advisorv1alpha1.PhaseCompletedWithErrors) {
		return r.checkUpgrade(ctx, s)
	}
	d, err := r.refreshDrift(ctx, s)
	if err != nil {
		return outcome{}, err
	}
	return outcome{then: judgeHandler, drift: d}, nil
}

// judgeApplied puts an applied plan in the phase what refreshDrift found calls for.
func (r *VirtPlatformConfigReconciler) judgeApplied(ctx context.Context, s *scope, d driftFindings) (outcome, error) {
	if d.unavailable != "" {
		s.note(corev1.EventTypeWarning, advisorv1alpha1.ReasonTargetUnavailable, "%s", d.unavailable)
		s.noApprovalNeeded()
		s.setPhase(advisorv1alpha1.PhasePrerequisiteFailed, advisorv1alpha1.ReasonTargetUnavailable, d.unavailable)
		return waitFor(prerequisiteRecheck), nil
	}
	if why, redraft := d.redraft(); redraft {
		return redraftInputs(why, nil), nil
	}
	if len(d.drifted) == 0 {
		// A drifted target is settled first (its correction is the plan shown); the inputs
		// are compared once the targets are as applied, since a profile may render from
		// its own targets too.
		if changed, done, err := r.inputsChanged(ctx, s); err != nil || changed {
			if err != nil {
				return outcome{}, err
			}
			if done.err != nil {
				// The profile cannot be rendered any more (a CRD went away): the applied
				// plan is kept, so drift is still judged against it when it is back.
				s.noApprovalNeeded()
				s.setPhase(advisorv1alpha1.PhasePrerequisiteFailed, advisorv1alpha1.ReasonPrerequisiteMissing,
					done.err.Error()+"; the applied plan is kept and checked again when it is back")
				return waitFor(prerequisiteRecheck), nil
			}
			return redraftInputs("an object the plan was rendered from changed", done), nil
		}
	}
	return outcome{then: settleHandler, drifted: d.drifted}, nil
}

// redraftInputs drafts the plan again because what it was rendered from changed. A plan
// that comes out the same only records the new inputs; a different one needs a fresh
// approval (reason InputDependencyDrift); one whose targets all already match is Completed.
func redraftInputs(why string, done *rendering) outcome {
	return redraft(draftCause{by: byOperator, reason: advisorv1alpha1.ReasonInputDependencyDrift,
		message: why + "; drafted the plan again", review: advisorv1alpha1.ReasonInputDependencyDrift}, done)
}

// driftFindings is what refreshDrift found.
type driftFindings struct {
	drifted         []string
	unavailable     string
	controlsChanged bool
	// refused names the items whose correction the API server refuses because of their
	// target's patch annotation.
	refused []string
}

// redraft tells whether the findings call for a fresh draft, and why.
func (d driftFindings) redraft() (string, bool) {
	switch {
	case d.controlsChanged:
		return "the user-control annotations of a target changed", true
	case len(d.refused) > 0:
		return "the API server refuses what a target's patch annotation makes (" + strings.Join(d.refused, "; ") + ")", true
	}
	return "", false
}

// refreshDrift rechecks every applied item against what it applied. A drifted item goes
// back to Pending with the correction as its diff; an item whose drift was reverted is
// Completed again. The plan shown changes with it (a new revision and hash).
func (r *VirtPlatformConfigReconciler) refreshDrift(ctx context.Context, s *scope) (driftFindings, error) {
	st := &s.vpc.Status
	var d driftFindings
	var unavailable []string
	changed := false
	served := map[string]bool{}
	for i, it := range st.Items {
		if it.Action == advisorv1alpha1.ItemActionRelease || (it.Applied == nil && it.ControlsHash == "") {
			continue
		}
		ok, err := r.kindServed(ctx, it.TargetRef, served)
		if err != nil {
			return d, err
		}
		var dc plan.DriftCheck
		switch {
		case !ok:
			err = &meta.NoKindMatchError{GroupKind: plan.KeyOf(it.TargetRef).GroupKind()}
		case it.State == advisorv1alpha1.ItemSkipped:
			// Nothing of a Skipped item is written or watched for drift (the user took its
			// target back, or its annotation is wrong and its message says so): only a
			// change of the annotations counts, which drafts the plan again. Its desired
			// state is never dry-run here: one a refused patch made is refused every time.
			dc.InSync = true
			dc.ControlsChanged, err = r.Engine.ControlsChanged(ctx, it)
		default:
			dc, err = r.Engine.CheckDrift(ctx, s.profileName(), it)
		}
		if meta.IsNoMatchError(err) {
			gk := plan.KeyOf(it.TargetRef)
			unavailable = append(unavailable, fmt.Sprintf("the cluster no longer serves %s, the kind of item %s's target: reinstall %s",
				it.TargetRef.Kind, it.Name, targets.OperatorOf(gk.GroupKind())))
			continue
		}
		if err != nil {
			return d, err
		}
		if dc.ControlsChanged {
			d.controlsChanged = true
			continue
		}
		if dc.Refused != "" {
			// The draft makes the refusal the item's message and its Event.
			d.refused = append(d.refused, fmt.Sprintf("item %s: %s", it.Name, dc.Refused))
			continue
		}
		if it.Applied == nil {
			continue
		}
		if dc.InSync {
			if it.State == advisorv1alpha1.ItemPending && plan.IsCorrection(it) && it.Change != advisorv1alpha1.ChangeNone {
				s.ledger().MarkInSync(i, "back in sync: the out-of-band change was reverted")
				changed = true
			}
			continue
		}
		d.drifted = append(d.drifted, fmt.Sprintf("%s (%s %s: %s)", it.Name, it.TargetRef.Kind, it.TargetRef.Name, strings.Join(dc.ChangedPaths, ", ")))
		if it.State != advisorv1alpha1.ItemPending || it.Diff != dc.Diff {
			s.ledger().MarkDrifted(i, dc, fmt.Sprintf(
				"drifted: %s changed out of band; the diff shows the correction", strings.Join(dc.ChangedPaths, ", ")))
			changed = true
		}
	}
	if len(unavailable) > 0 {
		d.unavailable = strings.Join(unavailable, "; ")
	}
	if changed {
		// The plan shown is now the correction: a new plan, with its own forecast of what it
		// does to the nodes, approved anew.
		s.ledger().Rehash()
		if err := r.forecast(ctx, s, nil); err != nil {
			return d, err
		}
		s.recordDrafter(byOperator, advisorv1alpha1.ReasonDriftDetected)
	}
	return d, nil
}

// kindServed tells, from its CRD, whether the cluster serves the version of a target's
// kind (seen remembers the answers of this check). Kinds outside the third-party registry
// are assumed served: their reads say otherwise.
func (r *VirtPlatformConfigReconciler) kindServed(ctx context.Context, ref advisorv1alpha1.TargetReference, seen map[string]bool) (bool, error) {
	kind, known := targets.ByGroupKind(plan.KeyOf(ref).GroupKind())
	if !known {
		return true, nil
	}
	key := kind.CRD + "/" + ref.APIVersion
	if ok, done := seen[key]; done {
		return ok, nil
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	served, err := kind.Serves(ctx, r.APIReader, gv.Version)
	seen[key] = served
	return served, err
}

// settle puts an applied plan in the phase its targets call for.
func (r *VirtPlatformConfigReconciler) settle(ctx context.Context, s *scope, drifted []string) (outcome, error) {
	st := &s.vpc.Status
	aggressive := s.vpc.Spec.BypassOptimisticLock && s.vpc.Spec.Action == advisorv1alpha1.ActionApply
	if len(drifted) > 0 {
		if st.Phase != advisorv1alpha1.PhaseDrifted {
			metrics.DriftDetected()
		}
		if others := plan.ConflictOwners(st.Items, true); aggressive && len(others) > 0 {
			// Forcing a field back from another profile would start a fight between the
			// two: someone decides which profile keeps it.
			msg := "drifted from the plan: " + strings.Join(drifted, "; ") + ". Not re-applied: " +
				strings.Join(others, ", ") + " set(s) these fields to other values (status.items[].conflicts); " +
				"decide which profile keeps them, and approve the correction if it is this one: " + s.requireApproval()
			s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonDriftDetected, msg)
			return outcome{}, nil
		}
		if aggressive && s.approval() != mismatched {
			s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonDriftDetected,
				"drifted from the plan: "+strings.Join(drifted, "; ")+". Re-applying (bypassOptimisticLock)")
			s.correcting = true
			return r.correctDrift(ctx, s, drifted)
		}
		if s.approval() == approved {
			return outcome{then: startHandler, lock: true}, nil
		}
		// VMs move while the correction waits: what approving it does to them is shown as
		// they run now.
		r.refreshVMs(ctx, s)
		msg := "drifted from the plan: " + strings.Join(drifted, "; ") +
			". Revert the change, or review the correction in status.items[].diff and approve it"
		if st.Disruption != "" {
			msg += "; " + disruptionClause(st.Disruption)
		}
		if upgrades := upgradeNames(st.Items); len(upgrades) > 0 {
			msg += fmt.Sprintf(" (the approval also applies the pending change(s) of item(s) %s)", strings.Join(upgrades, ", "))
		}
		msg += ": " + s.requireApproval()
		if s.approval() == mismatched {
			s.noteMismatch()
			reason, why := s.mismatch()
			s.setPhase(advisorv1alpha1.PhaseDrifted, reason, "drifted from the plan: "+strings.Join(drifted, "; ")+". "+why)
			return outcome{}, nil
		}
		s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonDriftDetected, msg)
		return outcome{}, nil
	}
	r.throttle().InSync(s.vpc.Name)
	if st.DriftCorrection != nil {
		st.DriftCorrection = nil
	}
	if len(upgradeNames(st.Items)) > 0 {
		if s.approval() == approved {
			return outcome{then: startHandler, lock: true}, nil
		}
		cmd := s.requireApproval()
		s.setPhase(advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.ReasonUpgradeAvailable, fmt.Sprintf(
			"operator %s plans differently for %s: review status.items[].diff, then approve: %s",
			st.OperatorVersion, strings.Join(pendingNames(st.Items), ", "), cmd))
		return outcome{}, nil
	}
	s.noApprovalNeeded()
	switch {
	case countState(st.Items, advisorv1alpha1.ItemFailed) > 0:
		if st.Phase != advisorv1alpha1.PhaseCompletedWithErrors {
			s.setPhase(advisorv1alpha1.PhaseCompletedWithErrors, advisorv1alpha1.ReasonInSync, "the targets are back as applied; some items had failed: see their messages")
		}
	case st.Phase != advisorv1alpha1.PhaseCompleted:
		s.setPhase(advisorv1alpha1.PhaseCompleted, advisorv1alpha1.ReasonInSync, "the targets are back as planned")
	}
	return outcome{}, nil
}

// upgradeNames names the pending items that propose something new rather than correct drift.
func upgradeNames(items []advisorv1alpha1.PlanItem) []string {
	var out []string
	for _, it := range items {
		if it.State == advisorv1alpha1.ItemPending && !plan.IsCorrection(it) {
			out = append(out, it.Name)
		}
	}
	return out
}

func pendingNames(items []advisorv1alpha1.PlanItem) []string {
	var out []string
	for _, it := range items {
		if it.State == advisorv1alpha1.ItemPending {
			out = append(out, it.Name)
		}
	}
	return out
}

// correctDrift re-applies drifted items in aggressive mode, at most as often as each
// target's token bucket allows: an execution of the corrections only (pending upgrades
// and failed items still wait for review). Three throttle episodes in a row (a correction
// that does not hold) stop it (Thrashing) until the spec changes; that stop is persisted.
func (r *VirtPlatformConfigReconciler) correctDrift(ctx context.Context, s *scope, drifted []string) (outcome, error) {
	st := &s.vpc.Status
	if dc := st.DriftCorrection; dc != nil {
		if dc.StoppedAtGeneration == s.vpc.Generation {
			s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonThrashing, dc.Message)
			return outcome{}, nil
		}
		// The spec changed since: correct again, from a clean slate.
		st.DriftCorrection = nil
		r.throttle().Forget(s.vpc.Name)
	}
	var keys []string
	for _, it := range st.Items {
		if it.State == advisorv1alpha1.ItemPending && plan.IsCorrection(it) {
			keys = append(keys, plan.KeyOf(it.TargetRef).String())
		}
	}
	v := r.throttle().Allow(s.vpc.Name, keys, s.now.Time)
	if v.Allowed {
		return r.startCorrections(ctx, s, len(keys))
	}
	if v.NewEpisode {
		metrics.Throttled()
		s.note(corev1.EventTypeWarning, advisorv1alpha1.EventThrottled, "re-apply of %s held back by the rate limit (%s); retrying in %s",
			strings.Join(keys, ", "), r.throttle(), v.Wait.Round(time.Second))
	}
	if v.Streak >= r.throttle().MaxStreak() {
		msg := fmt.Sprintf("stopped correcting drift: corrections were throttled %d times in a row without one holding, so something keeps changing %s. "+
			"Find and stop the other writer, then change the spec to resume", v.Streak, strings.Join(drifted, "; "))
		st.DriftCorrection = &advisorv1alpha1.DriftCorrectionStatus{StoppedAtGeneration: s.vpc.Generation, Message: msg}
		s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonThrashing, msg)
		if st.Phase != s.startPhase || s.before.Status.DriftCorrection == nil {
			s.note(corev1.EventTypeWarning, advisorv1alpha1.ReasonThrashing, "%s", msg)
		}
		return outcome{}, nil
	}
	s.setPhase(advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ReasonDriftDetected,
		"drifted from the plan: "+strings.Join(drifted, "; ")+". Re-applying (bypassOptimisticLock) once the rate limit allows")
	s.correcting = true
	return waitFor(v.Wait), nil
}

// startCorrections enters InProgress to re-apply the drifted items (bypassOptimisticLock).
// The approval record says so (correctionsOnly): the write gate then writes only items
// that restore what an approved execution applied. The corrections that roll out to nodes
// are forecast on their own and form the batch, which its gates hold and its pauses cover
// as any approved batch.
func (r *VirtPlatformConfigReconciler) startCorrections(ctx context.Context, s *scope, n int) (outcome, error) {
	if err := r.forecast(ctx, s, plan.IsCorrection); err != nil {
		return outcome{}, err
	}
	s.approvalGiven()
	s.approvalStatus().CorrectionsOnly = true
	beginExecution(s)
	msg := fmt.Sprintf("re-applying %d drifted item(s) (bypassOptimisticLock); nothing else is applied without review", n)
	if d := s.vpc.Status.Disruption; d != "" {
		msg += "; the correction " + d
	}
	s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonExecuting, msg)
	return nextStep, nil
}

// retry leaves Failed. A failed item is retried once the retry is approved; a plan that
// could not be drafted or was refused is drafted again when the spec is touched, and
// shown before it runs. The targets applied before the failure are still watched for drift.
func (r *VirtPlatformConfigReconciler) retry(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	if hasApplied(st.Items) {
		before := st.PlanHash
		d, err := r.refreshDrift(ctx, s)
		if err != nil {
			return outcome{}, err
		}
		if st.PlanHash != before {
			r.failedDrift(s, d.drifted)
			return outcome{}, nil
		}
	}
	if s.approvalStatus().Required {
		switch s.approval() {
		case approved:
			return outcome{then: startHandler, lock: true}, nil
		case mismatched:
			s.noteMismatch()
		}
		return outcome{}, nil
	}
	if !s.newGeneration {
		return outcome{}, nil
	}
	return redraft(draftCause{by: byUser, reason: advisorv1alpha1.ReasonRetry,
		message: "the spec was touched: drafting a fresh plan", review: advisorv1alpha1.ReasonAwaitingApproval, showFirst: true}, nil), nil
}

// failedDrift reports drift (or its reversal) of targets a failed execution applied: the
// config stays Failed, and the retry it offers now also carries the corrections.
func (r *VirtPlatformConfigReconciler) failedDrift(s *scope, drifted []string) {
	what := "the out-of-band change of an applied target was reverted"
	if len(drifted) > 0 {
		metrics.DriftDetected()
		what = "applied target(s) drifted: " + strings.Join(drifted, "; ")
		s.note(corev1.EventTypeWarning, advisorv1alpha1.ReasonDriftDetected, "while Failed, %s", what)
	}
	var failed []string
	for _, it := range s.vpc.Status.Items {
		if it.State == advisorv1alpha1.ItemFailed {
			failed = append(failed, it.Name)
		}
	}
	cmd := s.requireApproval()
	s.setPhase(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonItemFailed, fmt.Sprintf(
		"item(s) %s failed (see their messages), and since then %s; status.items[].diff shows the corrections. "+
			"Fix the cause, then approve the retry, which applies them too: %s", strings.Join(failed, ", "), what, cmd))
}
