package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

// startExecution enters InProgress (rule 4): unless the lock is bypassed (or the plan was
// drafted in this very reconcile), every item about to be applied must find its target as
// it was when the plan was drafted; otherwise the plan is drafted again for review.
// Failed items are retried. The execution goes on in the same step: the write gate
// persists the transition with the first write it authorizes, before that write.
func (r *VirtPlatformConfigReconciler) startExecution(ctx context.Context, s *scope, checkLock bool) (outcome, error) {
	st := &s.vpc.Status
	for i, it := range st.Items {
		switch it.State {
		case advisorv1alpha1.ItemFailed:
			s.ledger().SetState(i, advisorv1alpha1.ItemPending, "retrying: "+it.Message)
		case advisorv1alpha1.ItemInProgress:
			// Resuming after a pause: the wait for this item starts again.
			t := s.now
			s.ledger().SetWaiting(i, &t)
		}
	}
	resumed := countState(st.Items, advisorv1alpha1.ItemInProgress) > 0
	if checkLock && !s.vpc.Spec.BypassOptimisticLock {
		stale, err := r.staleItems(ctx, s)
		if err != nil {
			return outcome{}, err
		}
		if len(stale) > 0 {
			return redraftStale(s, strings.Join(stale, ", ")), nil
		}
	}
	s.approvalGiven()
	if err := r.recordApprover(ctx, s); err != nil {
		return outcome{}, err
	}
	beginExecution(s)
	s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonExecuting,
		fmt.Sprintf("applying %d item(s) in order%s", countState(st.Items, advisorv1alpha1.ItemPending), s.approvedByNote()))
	if resumed {
		// Items of it are applied already: the execution is under way.
		s.startHistory()
	}
	return goOn(executeHandler), nil
}

// beginExecution starts an execution's batch afresh, for an approved plan and for drift
// corrections alike: the batch passes its gates and takes its own pauses again, and its
// rollouts are timed anew.
func beginExecution(s *scope) {
	for k := range s.vpc.Status.Rollouts {
		ro := &s.vpc.Status.Rollouts[k]
		if !plan.HoldsPause(*ro) {
			ro.PauseState, ro.PausedAt = "", nil
		}
		ro.RolloutStartedAt, ro.VMsActual = nil, nil
	}
}

// refuseAltered stops a plan whose status was changed outside the operator.
func (r *VirtPlatformConfigReconciler) refuseAltered(s *scope) outcome {
	s.noApprovalNeeded()
	s.setPhase(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonPlanIntegrity,
		"the plan in status no longer hashes to the plan that was approved (status.items was changed outside the operator); "+
			"nothing more is applied. Change or touch the spec to draft a fresh plan")
	return outcome{}
}

// refuseWrite stops the execution at item i because the write gate refused its write: the
// item says which condition failed, an Event says it too, and the config waits for what
// the condition needs (an approval of the plan shown, a matching pin) or, when the plan in
// status cannot be trusted, fails.
func (r *VirtPlatformConfigReconciler) refuseWrite(s *scope, i int, why *refusal) outcome {
	it := s.vpc.Status.Items[i]
	s.ledger().SetState(i, advisorv1alpha1.ItemPending, "not written: "+why.condition)
	s.noteItem(it.Name, corev1.EventTypeWarning, advisorv1alpha1.EventWriteRefused, "%s %s of item %s was not written: %s",
		it.TargetRef.Kind, it.TargetRef.Name, it.Name, why.condition)
	switch why.reason {
	case advisorv1alpha1.ReasonPlanIntegrity:
		return r.refuseAltered(s)
	case advisorv1alpha1.ReasonApprovalMismatch:
		return r.awaitMatchingPin(s, "not written: "+why.condition)
	}
	return r.awaitApproval(s, advisorv1alpha1.ReasonAwaitingApproval,
		fmt.Sprintf("item %s was not written (%s): review status.items[].diff", it.Name, why.condition))
}

// staleItems names the Pending items whose target changed (or appeared or disappeared)
// since the plan was drafted. A target that already holds the item's approved values,
// owned by the profile, is the profile's own earlier apply, not a change.
func (r *VirtPlatformConfigReconciler) staleItems(ctx context.Context, s *scope) ([]string, error) {
	var stale []string
	for _, it := range s.vpc.Status.Items {
		if it.State != advisorv1alpha1.ItemPending {
			continue
		}
		current, err := r.Engine.Snapshot(ctx, s.profileName(), it)
		if err != nil {
			return nil, err
		}
		if current != it.SnapshotHash {
			stale = append(stale, describeItem(it))
		}
	}
	return stale, nil
}

func describeItem(it advisorv1alpha1.PlanItem) string {
	return fmt.Sprintf("%s (%s %s)", it.Name, it.TargetRef.Kind, it.TargetRef.Name)
}

// redraftStale drafts the plan again because targets changed after review (rule 4).
func redraftStale(s *scope, what string) outcome {
	msg := fmt.Sprintf("target(s) changed since the plan was reviewed: %s; drafted a fresh plan", what)
	s.note(corev1.EventTypeWarning, advisorv1alpha1.ReasonPlanStale, "%s", msg)
	return redraft(draftCause{by: byOperator, reason: advisorv1alpha1.ReasonPlanStale, message: msg,
		review: advisorv1alpha1.ReasonPlanStale}, nil)
}

// execute takes one step of the plan (rule 5): apply or check the health of the first
// unfinished item in execution order (rule 6; see plan.Order), or a step of the batch
// of items that roll out to nodes. Each step is persisted before the next one acts.
func (r *VirtPlatformConfigReconciler) execute(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	i := plan.NextItem(&s.vpc.Status)
	if i < 0 {
		return goOn(finishHandler), nil
	}
	if s.vpc.Spec.Action != advisorv1alpha1.ActionApply {
		// The approval was withdrawn: stop before anything else is written.
		return r.pause(s, i), nil
	}
	if lapsed, err := r.expireApproval(ctx, s); lapsed || err != nil {
		return outcome{}, err
	}
	item := &st.Items[i]
	if plan.RollsOut(*item) {
		return r.executeBatch(ctx, s)
	}
	if item.State == advisorv1alpha1.ItemPending {
		// Persisted by the write gate before the write; the item is InProgress once its
		// target was written.
		s.ledger().SetState(i, advisorv1alpha1.ItemPending, "applying")
	}
	if !appliedInThisExecution(s, *item) {
		if res, stop, err := r.applyItem(ctx, s, i); stop || err != nil {
			return res, err
		}
	}
	return r.checkItemHealth(ctx, s, i)
}

// appliedInThisExecution tells whether an item's target was written (or found as planned)
// in the execution under way: only its health is left to check.
func appliedInThisExecution(s *scope, it advisorv1alpha1.PlanItem) bool {
	if it.WaitingSince == nil {
		return false
	}
	return it.Change == advisorv1alpha1.ChangeNone && it.State == advisorv1alpha1.ItemInProgress ||
		it.Applied != nil && it.Applied.PlanHash == s.approvalStatus().ApprovedPlanHash
}

// applyItem writes item i through the write gate, with the item as the profile renders it
// now (a release and a drift correction are not rendered, see below). stop is set when the
// step ends here (stale, failed, refused, redrafted).
func (r *VirtPlatformConfigReconciler) applyItem(ctx context.Context, s *scope, i int) (outcome, bool, error) {
	item := &s.vpc.Status.Items[i]
	var rendered *plan.Item
	// A drift correction restores what an approved execution applied (its desired state
	// hashes to the applied record) and is not rendered again: a profile that renders from
	// its own target (load-aware honours the KubeDescheduler's mode) renders the drift.
	if item.Action != advisorv1alpha1.ItemActionRelease && !plan.IsRevert(*item) && !plan.IsCorrection(*item) {
		done := r.render(ctx, s)
		if done.err != nil {
			if profiles.IsPrerequisiteError(done.err) {
				return redraftInputs("the profile cannot be rendered any more: "+done.err.Error(), done), true, nil
			}
			return outcome{}, true, fmt.Errorf("render profile %s before applying %s: %w", s.vpc.Spec.Profile, item.Name, done.err)
		}
		var err error
		if rendered, err = plan.RenderedItem(done.items, item.Name); err != nil {
			return outcome{}, true, err
		}
		if rendered == nil {
			return redraftInputs(fmt.Sprintf("the profile no longer renders item %s", item.Name), done), true, nil
		}
	}
	out, refused, err := r.writeItem(ctx, s, i, rendered)
	// The status written before the write is the config as the API server answered it:
	// the item is taken from it again.
	item = &s.vpc.Status.Items[i]
	if refused != nil {
		return r.refuseWrite(s, i, refused), true, nil
	}
	if err != nil {
		if plan.IsPermanent(err) {
			metrics.Applied(false)
			return r.failItem(s, i, plan.FailureMessage(*item, err)), true, nil
		}
		return outcome{}, true, err
	}
	switch {
	case out.Unmanaged:
		s.ledger().SetState(i, advisorv1alpha1.ItemSkipped, fmt.Sprintf("not written: %s %s carries %s: %s, set right before the write",
			item.TargetRef.Kind, item.TargetRef.Name, plan.ModeAnnotation, plan.ModeUnmanaged))
		s.noteItem(item.Name, corev1.EventTypeNormal, advisorv1alpha1.EventItemUnmanaged, "item %s: %s", item.Name, item.Message)
		return nextStep, true, nil
	case out.Outdated:
		return redraftInputs(fmt.Sprintf("what the profile renders for item %s now differs from the approved plan", item.Name), nil), true, nil
	case out.Stale:
		return redraftStale(s, fmt.Sprintf("%s: %s", describeItem(*item), out.StaleReason)), true, nil
	case out.Released:
		s.noteItem(item.Name, corev1.EventTypeNormal, advisorv1alpha1.EventItemReleased, "released %s %s: its values are left as they are, this profile's fields are handed back and it is no longer watched",
			item.TargetRef.Kind, item.TargetRef.Name)
	case out.AlreadyApplied:
		s.noteItem(item.Name, corev1.EventTypeNormal, advisorv1alpha1.EventItemAlreadyApplied,
			"%s %s already holds the approved values of item %s (applied before a restart): not applied again", item.TargetRef.Kind, item.TargetRef.Name, item.Name)
	case out.Applied && (plan.IsRevert(*item) || s.vpc.Spec.Revert):
		metrics.Applied(true)
		s.noteItem(item.Name, corev1.EventTypeNormal, advisorv1alpha1.EventItemReverted, "reverted %s %s (item %s, %s)",
			item.TargetRef.Kind, item.TargetRef.Name, item.Name, strings.ToLower(string(item.Action)))
	case out.Applied:
		metrics.Applied(true)
		s.noteItem(item.Name, corev1.EventTypeNormal, advisorv1alpha1.EventItemApplied, "applied item %s to %s %s", item.Name, item.TargetRef.Kind, item.TargetRef.Name)
	}
	s.ledger().SetState(i, advisorv1alpha1.ItemInProgress, item.Message)
	if item.Change != advisorv1alpha1.ChangeNone || item.Action == advisorv1alpha1.ItemActionRelease {
		// The target changed: the execution is under way (an item already as planned
		// changes nothing, and does not start it).
		s.startHistory()
	}
	// A released target is no longer the plan's: nothing is recorded to judge drift by.
	s.ledger().RecordApplied(i, out.Record, s.approvalStatus().ApprovedPlanHash)
	t := s.now
	s.ledger().SetWaiting(i, &t)
	return outcome{}, false, nil
}

// checkItemHealth waits for an applied item to take effect; a healthy item is Completed
// and the next one prepared in the same step.
func (r *VirtPlatformConfigReconciler) checkItemHealth(ctx context.Context, s *scope, i int) (outcome, error) {
	st := &s.vpc.Status
	item := &st.Items[i]
	var timeout time.Duration
	if s.vpc.Spec.WaitTimeout != nil {
		timeout = s.vpc.Spec.WaitTimeout.Duration
	}
	since := item.WaitingSince.Time
	h, err := r.Engine.CheckHealth(ctx, *item, since, timeout, s.now.Time)
	if err != nil {
		return outcome{}, err
	}
	switch h.State {
	case plan.Healthy:
		metrics.ItemSettled(s.now.Sub(since).Seconds())
		s.ledger().SetState(i, advisorv1alpha1.ItemCompleted, h.Message)
		return goOn(executeHandler), nil
	case plan.Unhealthy:
		metrics.ItemSettled(s.now.Sub(since).Seconds())
		return r.failItem(s, i, h.Message), nil
	}
	s.ledger().SetMessage(i, h.Message)
	wait := r.pollInterval()
	if timeout > 0 {
		if left := since.Add(timeout).Sub(s.now.Time); left < wait {
			wait = max(left, time.Millisecond)
		}
	}
	return waitFor(wait), nil
}

// pause stops execution before item i because the approval was withdrawn.
func (r *VirtPlatformConfigReconciler) pause(s *scope, i int) outcome {
	st := &s.vpc.Status
	return r.awaitApproval(s, advisorv1alpha1.ReasonPaused, fmt.Sprintf(
		"spec.action is %s: execution paused at item %s with %d of %d items completed; set spec.action to Apply to resume",
		s.vpc.Spec.Action, st.Items[i].Name, countState(st.Items, advisorv1alpha1.ItemCompleted), len(st.Items)))
}

// failItem fails item i; under Abort the plan stops there and its retry needs a fresh
// approval, under Continue it goes on.
func (r *VirtPlatformConfigReconciler) failItem(s *scope, i int, message string) outcome {
	it := s.vpc.Status.Items[i]
	s.ledger().SetState(i, advisorv1alpha1.ItemFailed, message)
	s.noteItem(it.Name, corev1.EventTypeWarning, advisorv1alpha1.EventItemFailed, "item %s failed: %s", it.Name, message)
	if s.vpc.Spec.FailurePolicy == advisorv1alpha1.FailurePolicyContinue {
		return nextStep
	}
	// The retry is a plan of its own: an approval given for the failed run does not
	// approve running it again.
	s.ledger().Rehash()
	s.recordDrafter(byOperator, advisorv1alpha1.ReasonItemFailed)
	cmd := s.requireApproval()
	s.setPhase(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonItemFailed, fmt.Sprintf(
		"item %s failed: %s. The items after it were not applied (failurePolicy Abort). "+
			"Fix the cause, then approve the retry: %s", it.Name, message, cmd))
	return outcome{}
}

// finishExecution ends an execution. An applied target may have been changed out of band
// while a later item was waiting for its rollout: the applied targets are checked once
// more, and a drifted one makes the config Drifted (or redrafted, or PrerequisiteFailed,
// as for a completed plan), never Completed first. What the plan was rendered from may
// have changed too (a pool rolling out changes the pool): the inputs are compared now, so
// the completed config starts idle, or redrafts when the profile renders differently.
func (r *VirtPlatformConfigReconciler) finishExecution(ctx context.Context, s *scope) (outcome, error) {
	if s.vpc.Spec.Revert {
		r.finishRevert(s)
		return outcome{}, nil
	}
	d, err := r.refreshDrift(ctx, s)
	if err != nil {
		return outcome{}, err
	}
	if _, redraft := d.redraft(); redraft || d.unavailable != "" || len(d.drifted) > 0 {
		return outcome{then: judgeHandler, drift: d}, nil
	}
	if s.approvalStatus().CorrectionsOnly {
		// Items that propose something new were passed over: they still wait for review.
		return outcome{then: settleHandler, drifted: nil}, nil
	}
	changed, _, err := r.inputsChanged(ctx, s)
	if err != nil {
		return outcome{}, err
	}
	r.completeExecution(s)
	if changed {
		// Judged by the completed plan's watch, which looks at drift first, in the next
		// step.
		return nextStep, nil
	}
	return outcome{}, nil
}

func (r *VirtPlatformConfigReconciler) completeExecution(s *scope) {
	s.noApprovalNeeded()
	var failed []string
	for _, it := range s.vpc.Status.Items {
		if it.State == advisorv1alpha1.ItemFailed {
			failed = append(failed, it.Name)
		}
	}
	if len(failed) > 0 {
		s.setPhase(advisorv1alpha1.PhaseCompletedWithErrors, advisorv1alpha1.ReasonItemsFailed, fmt.Sprintf(
			"%d of %d item(s) failed: %s; see their messages", len(failed), len(s.vpc.Status.Items), strings.Join(failed, ", ")))
		return
	}
	s.setPhase(advisorv1alpha1.PhaseCompleted, advisorv1alpha1.ReasonApplied, "every item is applied and took effect; watching the targets for drift")
}

func countState(items []advisorv1alpha1.PlanItem, state advisorv1alpha1.ItemState) int {
	n := 0
	for _, it := range items {
		if it.State == state {
			n++
		}
	}
	return n
}
