package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PhaseCondition is the condition that carries the reason and message of a phase; "" for
// a phase that has none (a config not reconciled yet).
func PhaseCondition(p Phase) string {
	switch p {
	case PhaseDrafting:
		return ConditionDrafting
	case PhaseReviewRequired:
		return ConditionReviewRequired
	case PhaseInProgress:
		return ConditionInProgress
	case PhaseCompleted, PhaseCompletedWithErrors:
		return ConditionCompleted
	case PhaseCompletedWithUpgrade:
		return ConditionUpgradeAvailable
	case PhaseDrifted:
		return ConditionDrifted
	case PhaseFailed:
		return ConditionFailed
	case PhasePrerequisiteFailed:
		return ConditionPrerequisiteFailed
	case PhaseIgnored:
		return ConditionIgnored
	case PhaseReverted:
		return ConditionReverted
	}
	return ""
}

// allConditionTypes are set on every config, so `kubectl wait --for=condition=X` works
// for each of them and exactly the ones that hold are True.
var allConditionTypes = []string{
	ConditionDrafting,
	ConditionReviewRequired,
	ConditionInProgress,
	ConditionCompleted,
	ConditionDrifted,
	ConditionFailed,
	ConditionPrerequisiteFailed,
	ConditionIgnored,
	ConditionUpgradeAvailable,
	ConditionReverted,
	ConditionReady,
	ConditionReconciling,
	ConditionStalled,
}

// Progress is what a config's phase means to a reader that only knows the kstatus
// conventions (Flux, kpt, cli-utils): the operator moves it on by itself
// (Reconciling=True), it waits for someone (Stalled=True), or neither (it is where its
// spec asks, or the user set it aside).
type Progress int

// The kinds of progress a phase makes.
const (
	// ProgressSettled: neither Reconciling nor Stalled is True.
	ProgressSettled Progress = iota
	// ProgressReconciling: the operator moves the config on without anyone acting.
	ProgressReconciling
	// ProgressStalled: the config stays where it is until someone acts.
	ProgressStalled
)

// ProgressOf tells the progress of a phase under a spec.action; correcting is set when a
// Drifted config re-applies its plan by itself (bypassOptimisticLock, not stopped).
func ProgressOf(p Phase, action Action, correcting bool) Progress {
	switch p {
	case PhasePending, PhaseDrafting, PhaseInProgress:
		return ProgressReconciling
	case PhaseReviewRequired:
		// Under DryRun the plan shown is what the spec asks for; under Apply it waits for an
		// approval (a pin that does not match, a plan drafted by the operator, a conflict).
		if action == ActionApply {
			return ProgressStalled
		}
	case PhaseDrifted:
		if correcting {
			return ProgressReconciling
		}
		return ProgressStalled
	case PhaseFailed, PhaseCompletedWithErrors, PhasePrerequisiteFailed:
		return ProgressStalled
	}
	return ProgressSettled
}

// primaryCondition is the condition that carries the reason and message of a phase; Ready
// for a phase that has none of its own.
func primaryCondition(p Phase) string {
	if c := PhaseCondition(p); c != "" {
		return c
	}
	return ConditionReady
}

// trueConditions tells which conditions are True in a phase.
func trueConditions(p Phase) map[string]bool {
	h := map[string]bool{primaryCondition(p): true}
	switch p {
	case PhasePending:
		h = map[string]bool{}
	case PhaseCompleted:
		h[ConditionReady] = true
	case PhaseCompletedWithErrors:
		h[ConditionFailed] = true
	case PhaseCompletedWithUpgrade:
		// The targets are as approved; a newer plan waits for review.
		h[ConditionCompleted] = true
		h[ConditionReady] = true
	}
	return h
}

// SetConditions derives every condition from the phase, its progress and its reason and
// message: the phase's own condition carries them, Ready summarizes, and Reconciling or
// Stalled (kstatus) repeat them when the progress says so.
func (st *VirtPlatformConfigStatus) SetConditions(reason, message string, progress Progress) {
	phase := st.Phase
	if phase == "" {
		return
	}
	isTrue := trueConditions(phase)
	switch progress {
	case ProgressReconciling:
		isTrue[ConditionReconciling] = true
	case ProgressStalled:
		isTrue[ConditionStalled] = true
	case ProgressSettled:
	}
	primary := primaryCondition(phase)
	for _, t := range allConditionTypes {
		c := metav1.Condition{
			Type:               t,
			Status:             metav1.ConditionFalse,
			Reason:             string(phase),
			ObservedGeneration: st.ObservedGeneration,
		}
		if isTrue[t] {
			c.Status = metav1.ConditionTrue
			c.Reason, c.Message = reason, message
			if c.Reason == "" {
				c.Reason = string(phase)
			}
			// Reconciling and Stalled repeat the phase's reason: kstatus shows theirs.
			if t != primary && t != ConditionReconciling && t != ConditionStalled {
				c.Reason, c.Message = secondaryReason(phase, t), message
			}
		} else if t == ConditionReady {
			c.Message = message
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// secondaryReason is the reason of a True condition that is not the phase's primary one.
func secondaryReason(p Phase, condType string) string {
	switch {
	case p == PhaseCompletedWithErrors && condType == ConditionFailed:
		return ReasonItemsFailed
	case p == PhaseCompletedWithUpgrade && condType == ConditionCompleted:
		return ReasonApplied
	}
	return string(p)
}

// ShownReason returns the reason and message the current phase's condition shows, so a
// reconcile that does not move the config keeps showing them. Display only: nothing is
// decided from them.
func (st *VirtPlatformConfigStatus) ShownReason() (string, string) {
	c := meta.FindStatusCondition(st.Conditions, primaryCondition(st.Phase))
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// Summarize fills the fields derived from the items: the highest impact and
// "completed/applicable".
func (st *VirtPlatformConfigStatus) Summarize() {
	if len(st.Items) == 0 {
		st.ImpactSeverity, st.ItemsSummary = "", ""
		return
	}
	rank := map[ImpactSeverity]int{ImpactLow: 1, ImpactMedium: 2, ImpactHigh: 3}
	impact := ImpactLow
	done, applicable := 0, 0
	for _, it := range st.Items {
		if it.State == ItemSkipped {
			continue
		}
		applicable++
		if rank[it.ImpactSeverity] > rank[impact] {
			impact = it.ImpactSeverity
		}
		if it.State == ItemCompleted {
			done++
		}
	}
	st.ImpactSeverity = impact
	// Skipped items are not counted: a completed plan reads n/n.
	st.ItemsSummary = fmt.Sprintf("%d/%d", done, applicable)
}
