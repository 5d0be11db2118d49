package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// Who drafted a plan decides what approves it (rule 13).
type drafter int

const (
	// byUser: the user changed the spec (or created the config); spec.action Apply of that
	// generation approves the plan drafted for it ("apply before review", rule 3).
	byUser drafter = iota
	// byOperator: the operator redrafted on its own (a target changed after review, drift,
	// an input change, an upgrade, a retry); only a spec change made after the plan was
	// shown, or an approvedPlanHash equal to its hash, approves it.
	byOperator
	// resumed: an interrupted draft (a missing prerequisite, a passing API error, a
	// restart) is drafted again; what approves it stays what it was.
	resumed
)

type approvalState int

const (
	notApproved approvalState = iota
	approved
	mismatched
)

func (s *scope) approvalStatus() *advisorv1alpha1.ApprovalStatus {
	if s.vpc.Status.Approval == nil {
		s.vpc.Status.Approval = &advisorv1alpha1.ApprovalStatus{MinGeneration: s.vpc.Generation}
	}
	return s.vpc.Status.Approval
}

// recordDrafter persists, with the plan, which spec generations may approve it and, for a
// plan the operator drafted on its own, why.
func (s *scope) recordDrafter(d drafter, cause string) {
	a := s.approvalStatus()
	switch d {
	case byUser:
		a.MinGeneration = s.vpc.Generation
		a.OperatorDrafted, a.Cause = false, ""
	case byOperator:
		a.MinGeneration = s.vpc.Generation + 1
		a.OperatorDrafted, a.Cause = true, cause
	}
}

// shown notes that the plan drafted in this reconcile is about to be shown: a plan the
// operator drafted on its own is approved only by a spec change made after now, even when
// the spec changed while it was being drafted (an API error, a restart, a missing CRD
// kept it in Drafting).
func (s *scope) shown() {
	if a := s.approvalStatus(); a.OperatorDrafted && a.MinGeneration <= s.vpc.Generation {
		a.MinGeneration = s.vpc.Generation + 1
	}
}

// reviewBeforeApproval makes the plan about to be shown approvable only by a spec change
// made after now (or a pin of its hash), whoever drafted it.
func (s *scope) reviewBeforeApproval() {
	if a := s.approvalStatus(); a.MinGeneration <= s.vpc.Generation {
		a.MinGeneration = s.vpc.Generation + 1
	}
}

// approval tells whether the spec approves the plan in status. The decision reads typed
// status fields only: approval.minGeneration (persisted with every plan) and planHash.
func (s *scope) approval() approvalState {
	spec, st := s.vpc.Spec, s.vpc.Status
	switch {
	case spec.Action != advisorv1alpha1.ActionApply || st.PlanHash == "":
		return notApproved
	case spec.ApprovedPlanHash != "" && spec.ApprovedPlanHash == st.PlanHash:
		// The hash covers the plan's revision: it was copied from this very plan.
		return approved
	case spec.ApprovedPlanHash != "":
		return mismatched
	case spec.ApprovedContent != nil:
		switch {
		case st.Content == nil || spec.ApprovedContent.Hash != st.Content.Hash:
			return mismatched
		case contentConflicts(st.Items):
			// A field another manager owns is this cluster's live state, not the content:
			// taking it needs a local approval given after the conflict was shown.
			return notApproved
		case !contentCovers(s.approvalStatus()):
			return s.approvedByGeneration()
		}
		// The content was approved, for this cluster or a fleet: whatever plan revision
		// carries it, and whoever drafted it (a target changed since review, an input
		// change that renders the same content).
		return approved
	}
	return s.approvedByGeneration()
}

// approvedByGeneration approves the plan in status when the spec's generation is one that
// may approve it (rule 13): a plan the operator drafted on its own needs a spec change made
// after it was shown.
func (s *scope) approvedByGeneration() approvalState {
	if s.vpc.Generation >= s.approvalStatus().MinGeneration {
		return approved
	}
	return notApproved
}

// contentCovers tells whether an approval of content covers the plan the operator drafted:
// not the retry of a failed item (approving content again would retry it for ever) nor a
// drift correction, which fights whoever changed the target; bypassOptimisticLock corrects
// drift, throttled, and the content approval covers those corrections.
func contentCovers(a *advisorv1alpha1.ApprovalStatus) bool {
	return !a.OperatorDrafted || (a.Cause != advisorv1alpha1.ReasonItemFailed && a.Cause != advisorv1alpha1.ReasonDriftDetected)
}

// approveCommand is the exact command that approves the plan in status: it pins the
// approval to the plan's hash, and it is always a spec change, so it also approves a plan
// the operator drafted on its own. It drops a pin of the content, which may not be set
// together with the plan's.
func (s *scope) approveCommand() string {
	dropContent := ""
	if s.vpc.Spec.ApprovedContent != nil {
		dropContent = `,"approvedContent":null`
	}
	return fmt.Sprintf(`kubectl patch vpc %s --type merge -p '{"spec":{"action":"Apply","approvedPlanHash":"%s"%s}}'`,
		s.vpc.Name, s.vpc.Status.PlanHash, dropContent)
}

// contentNotCovered says why spec.approvedContent, which names the plan's content, does not
// approve it: the plan takes fields from other managers in a way an approval of content does
// not cover. "" when it does, or when no content is pinned.
func (s *scope) contentNotCovered() string {
	spec, st := s.vpc.Spec, s.vpc.Status
	if spec.Action != advisorv1alpha1.ActionApply || spec.ApprovedPlanHash != "" || spec.ApprovedContent == nil ||
		spec.ApprovedContent.Hash != st.ContentHash || !contentConflicts(st.Items) {
		return ""
	}
	return "spec.approvedContent approves this plan's content, but the plan takes over fields another manager owns " +
		"with other values (status.items[].conflicts): that is this cluster's live state, which an approval of content " +
		"does not cover. Review the conflicts, and approve this cluster's plan"
}

// contentConflicts tells whether the plan takes a field from another manager in a way an
// approval of content does not cover: a field another profile of this operator owns (the
// two would fight over it), or one any other manager owns where the item proposes
// something new on this cluster. Restoring what an approved execution applied (a drift
// correction) takes back the drifted fields: that is the approved content.
func contentConflicts(items []advisorv1alpha1.PlanItem) bool {
	if len(plan.ConflictOwners(items, true)) > 0 {
		return true
	}
	for _, it := range items {
		if len(it.Conflicts) > 0 && it.State == advisorv1alpha1.ItemPending && !plan.IsCorrection(it) {
			return true
		}
	}
	return false
}

// requireApproval marks the plan in status as waiting for an approval, with the command
// that gives it.
func (s *scope) requireApproval() string {
	a := s.approvalStatus()
	a.Required = true
	a.Command = s.approveCommand()
	return a.Command
}

// approvalGiven clears the wait and records what approved the execution that starts.
func (s *scope) approvalGiven() {
	a := s.approvalStatus()
	s.approvalObserved(a.ApprovedPlanHash != s.vpc.Status.PlanHash || a.ApprovedGeneration != s.vpc.Generation)
	a.Required, a.Command = false, ""
	a.ApprovedPlanHash = s.vpc.Status.PlanHash
	a.ApprovedGeneration = s.vpc.Generation
	a.ApprovedContentHash = ""
	if s.vpc.Spec.ApprovedPlanHash == "" && s.vpc.Spec.ApprovedContent != nil {
		a.ApprovedContentHash = s.vpc.Spec.ApprovedContent.Hash
	}
	a.CorrectionsOnly = false
}

// approvalObserved records when the operator observed the approval that starts an
// execution (approval.approvedAt, its own clock), unless it is recorded already: fresh
// says the approval is another one than the one recorded (another plan or spec
// generation), whose time is then not kept.
func (s *scope) approvalObserved(fresh bool) {
	a := s.approvalStatus()
	if fresh {
		a.ApprovedAt = nil
	}
	if a.ApprovedAt == nil {
		t := s.now
		a.ApprovedAt = &t
	}
}

// noApprovalNeeded clears the wait (the plan in status has nothing to approve).
func (s *scope) noApprovalNeeded() {
	if a := s.vpc.Status.Approval; a != nil {
		a.Required, a.Command = false, ""
	}
}

// decide executes a plan the spec already approves and otherwise waits in ReviewRequired
// with reason and message (the message is completed with the approving command).
func (r *VirtPlatformConfigReconciler) decide(s *scope, reason, message string) outcome {
	if s.drafted {
		s.shown()
	}
	switch s.approval() {
	case approved:
		return outcome{then: startHandler, lock: !s.drafted}
	case mismatched:
		if reason != advisorv1alpha1.ReasonAwaitingApproval {
			// Say why the plan changed under the pin, then what approves it.
			return r.awaitMatchingPin(s, message)
		}
		return r.awaitMatchingPin(s, "")
	}
	return r.awaitApproval(s, reason, message)
}

// mismatch is the reason and message of a pin that names another plan, or other content,
// than the plan shown.
func (s *scope) mismatch() (reason, message string) {
	spec, st := s.vpc.Spec, s.vpc.Status
	if spec.ApprovedPlanHash == "" && spec.ApprovedContent != nil {
		here := st.ContentHash
		if here == "" {
			here = "(no plan)"
		}
		return advisorv1alpha1.ReasonContentMismatch, fmt.Sprintf(
			"spec.approvedContent.hash %s is not status.contentHash %s: this cluster's plan would write other content "+
				"than the approved one, so it is not executed. What differs: %s. Review status.items[].diff; to approve "+
				"the plan of this cluster: %s",
			spec.ApprovedContent.Hash, here, plan.DescribeContentDiff(spec.ApprovedContent, st.Content), s.approveCommand())
	}
	return advisorv1alpha1.ReasonApprovalMismatch, fmt.Sprintf(
		"spec.approvedPlanHash %s is not status.planHash %s: the plan shown is not the one that was approved. "+
			"Review status.items[].diff; to approve the plan shown: %s", spec.ApprovedPlanHash, st.PlanHash, s.approveCommand())
}

// awaitApproval waits in ReviewRequired. The message ends with the command that approves
// the plan shown.
func (r *VirtPlatformConfigReconciler) awaitApproval(s *scope, reason, message string) outcome {
	cmd := s.requireApproval()
	s.setPhase(advisorv1alpha1.PhaseReviewRequired, reason, message+". To approve it: "+cmd)
	return outcome{}
}

// awaitMatchingPin waits in ReviewRequired because spec.approvedPlanHash names another
// plan (reason ApprovalMismatch) or spec.approvedContent other content (ContentMismatch),
// with an Event naming both hashes. why, when set, says first why the plan changed under
// the pin.
func (r *VirtPlatformConfigReconciler) awaitMatchingPin(s *scope, why string) outcome {
	s.requireApproval()
	s.noteMismatch()
	reason, msg := s.mismatch()
	if why != "" {
		msg = why + ". " + msg
	}
	s.setPhase(advisorv1alpha1.PhaseReviewRequired, reason, msg)
	return outcome{}
}

// noteMismatch records the mismatch Event when the pin or the plan is new in this
// reconcile, so a config waiting with a wrong pin does not repeat it.
func (s *scope) noteMismatch() {
	if s.newGeneration || s.before.Status.PlanHash != s.vpc.Status.PlanHash {
		reason, msg := s.mismatch()
		s.note(corev1.EventTypeWarning, reason, "%s", msg)
	}
}
