package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// A revert plan (spec.revert) puts back what this config's executions changed, as
// status.replaced recorded it before each write (see plan.RecordReplaced). It is drafted,
// shown, approved and executed like the profile's plan, through the same write gate and
// batch, with one difference: it runs only on an approval given after it was shown. Once
// executed the config is Reverted: its targets are no longer managed or watched. Setting
// spec.revert back to false drafts the profile's plan again, for review.

// revertCause is why a revert plan is drafted, or why the profile's plan is drafted again
// after one; nil for any other draft.
func revertCause(s *scope) *draftCause {
	st := &s.vpc.Status
	switch {
	case s.vpc.Spec.Revert:
		return &draftCause{by: byUser, reason: advisorv1alpha1.ReasonRevertRequested,
			message: "spec.revert is true: drafting the revert plan", review: advisorv1alpha1.ReasonAwaitingApproval, showFirst: true}
	case st.Phase == advisorv1alpha1.PhaseReverted || slices.ContainsFunc(st.Items, plan.IsRevert):
		return &draftCause{by: byUser, reason: advisorv1alpha1.ReasonRevertCancelled,
			message: "spec.revert is false again: drafting the profile's plan", review: advisorv1alpha1.ReasonAwaitingApproval, showFirst: true}
	}
	return nil
}

// draftRevert drafts the revert plan from status.replaced and shows it for review.
func (r *VirtPlatformConfigReconciler) draftRevert(ctx context.Context, s *scope, cause draftCause) (outcome, error) {
	st := &s.vpc.Status
	p, replaced, err := r.Engine.DraftRevert(ctx, plan.RevertRequest{Profile: s.profileName(), Records: st.Replaced, Revision: st.PlanRevision + 1})
	if err != nil {
		return outcome{}, err
	}
	// The records as the plan was drafted from them: a Delete item is drafted again from
	// its record right before the write, and deletes only the object the record names.
	st.Replaced = replaced
	r.install(s, p, st.PlanRevision+1)
	if err := r.forecast(ctx, s, nil); err != nil {
		return outcome{}, err
	}
	cause.showFirst = true
	return outcome{then: reviewHandler, cause: cause}, nil
}

// finishRevert ends a revert plan whose items are all done (or that had nothing to do):
// the records of the targets put back are dropped, and nothing is watched any more.
func (r *VirtPlatformConfigReconciler) finishRevert(s *scope) {
	st := &s.vpc.Status
	s.noApprovalNeeded()
	var failed []string
	keep := map[plan.TargetKey]bool{}
	for _, it := range st.Items {
		if it.State != advisorv1alpha1.ItemCompleted {
			keep[plan.KeyOf(it.TargetRef)] = true
		}
		if it.State == advisorv1alpha1.ItemFailed {
			failed = append(failed, it.Name)
		}
	}
	s.ledger().ForgetApplied()
	st.Replaced = slices.DeleteFunc(st.Replaced, func(rec advisorv1alpha1.ReplacedRecord) bool { return !keep[plan.KeyOf(rec.TargetRef)] })
	if len(st.Replaced) == 0 {
		st.Replaced = nil
	}
	switch {
	case len(failed) > 0:
		s.setPhase(advisorv1alpha1.PhaseCompletedWithErrors, advisorv1alpha1.ReasonItemsFailed, fmt.Sprintf(
			"the revert finished with %d of %d item(s) failed: %s; see their messages. Touch the spec to draft the revert of what is left",
			len(failed), len(st.Items), strings.Join(failed, ", ")))
	case countState(st.Items, advisorv1alpha1.ItemCompleted) == 0:
		s.setPhase(advisorv1alpha1.PhaseReverted, advisorv1alpha1.ReasonNothingToRevert,
			"nothing to revert: no target holds a change of this config's executions; set spec.revert to false to draft the profile's plan again")
	default:
		s.setPhase(advisorv1alpha1.PhaseReverted, advisorv1alpha1.ReasonReverted, fmt.Sprintf(
			"the revert plan was executed: %d target(s) are back as they were before this profile's executions and no longer watched; "+
				"set spec.revert to false to draft the profile's plan again, for review", countState(st.Items, advisorv1alpha1.ItemCompleted)))
	}
}
