package controller

import (
	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// status.history is the config's audit trail: one entry per execution, newest first, at
// most advisorv1alpha1.MaxHistory. An entry is added when the execution applies its first
// item (or resumes with items applied), so an approval that lapsed or was withdrawn before
// anything was written adds none; it is completed when the execution leaves InProgress,
// with the phase the step that ended it ends in. It is status, outside the plan and its
// hash: it survives restarts and the expiry of Events.

// executionStarted tells whether the execution under way applied something: status.history
// lists it first, not finished yet.
func executionStarted(st *advisorv1alpha1.VirtPlatformConfigStatus) bool {
	return len(st.History) > 0 && st.History[0].FinishedAt == nil
}

// startHistory adds the execution under way to status.history, once: with the plan it
// executes and the approval that approved it, as status.approval records them.
func (s *scope) startHistory() {
	st := &s.vpc.Status
	if executionStarted(st) {
		return
	}
	a := s.approvalStatus()
	started := s.now
	e := advisorv1alpha1.Execution{
		PlanHash:    a.ApprovedPlanHash,
		Profile:     s.vpc.Spec.Profile,
		RequestedBy: a.RequestedBy,
		ApprovedBy:  a.ApprovedBy,
		Via:         a.Via,
		StartedAt:   &started,
	}
	if a.ApprovedAt != nil {
		at := *a.ApprovedAt
		e.ApprovedAt = &at
	}
	st.History = append([]advisorv1alpha1.Execution{e}, st.History...)
	if len(st.History) > advisorv1alpha1.MaxHistory {
		st.History = st.History[:advisorv1alpha1.MaxHistory]
	}
	s.ended = false
}

// endExecution completes the execution status.history lists first, if it is under way,
// as the config leaves InProgress for phase: what its rollouts did is counted now, while
// status.rollouts are still the execution's.
func (s *scope) endExecution(phase advisorv1alpha1.Phase) {
	st := &s.vpc.Status
	if !executionStarted(st) {
		return
	}
	e := &st.History[0]
	finished := s.now
	e.FinishedAt = &finished
	e.Outcome = phase
	e.Reboots, e.VMMigrations = rolloutCounts(st.Rollouts)
	s.ended = true
}

// settleHistory gives the execution this step ended the phase the step ends in: an
// execution that ended in a redraft ended in the review that followed it, not in Drafting.
func (s *scope) settleHistory() {
	st := &s.vpc.Status
	if s.ended && st.Phase != advisorv1alpha1.PhaseInProgress && len(st.History) > 0 {
		st.History[0].Outcome = st.Phase
	}
}

// rolloutCounts sums what the batch's rollouts did: the nodes of the pools that rebooted
// rolling it out, and the VM live migrations counted where what the rollout did to the VMs
// is known (nil when it is known for none).
func rolloutCounts(rollouts []advisorv1alpha1.PoolRollout) (int32, *int32) {
	var reboots int32
	var migrations *int32
	for _, ro := range rollouts {
		if len(ro.Items) == 0 || ro.RolloutStartedAt == nil {
			continue
		}
		if ro.Reboot {
			reboots += ro.Nodes
		}
		if ro.VMsActual != nil && ro.VMsActual.UnknownReason == "" {
			if migrations == nil {
				migrations = new(int32)
			}
			*migrations += ro.VMsActual.Migrations
		}
	}
	return reboots, migrations
}
