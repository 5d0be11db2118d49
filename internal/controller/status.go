package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// allConditionTypes are set on every config, so `kubectl wait --for=condition=X` works
// for each of them and exactly the ones that hold are True.
var allConditionTypes = []string{
	advisorv1alpha1.ConditionDrafting,
	advisorv1alpha1.ConditionReviewRequired,
	advisorv1alpha1.ConditionInProgress,
	advisorv1alpha1.ConditionCompleted,
	advisorv1alpha1.ConditionDrifted,
	advisorv1alpha1.ConditionFailed,
	advisorv1alpha1.ConditionPrerequisiteFailed,
	advisorv1alpha1.ConditionIgnored,
	advisorv1alpha1.ConditionUpgradeAvailable,
	advisorv1alpha1.ConditionReady,
}

// primaryCondition is the condition that carries the reason and message of a phase.
func primaryCondition(p advisorv1alpha1.Phase) string {
	switch p {
	case advisorv1alpha1.PhaseDrafting:
		return advisorv1alpha1.ConditionDrafting
	case advisorv1alpha1.PhaseReviewRequired:
		return advisorv1alpha1.ConditionReviewRequired
	case advisorv1alpha1.PhaseInProgress:
		return advisorv1alpha1.ConditionInProgress
	case advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithErrors:
		return advisorv1alpha1.ConditionCompleted
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		return advisorv1alpha1.ConditionUpgradeAvailable
	case advisorv1alpha1.PhaseDrifted:
		return advisorv1alpha1.ConditionDrifted
	case advisorv1alpha1.PhaseFailed:
		return advisorv1alpha1.ConditionFailed
	case advisorv1alpha1.PhasePrerequisiteFailed:
		return advisorv1alpha1.ConditionPrerequisiteFailed
	case advisorv1alpha1.PhaseIgnored:
		return advisorv1alpha1.ConditionIgnored
	}
	return advisorv1alpha1.ConditionReady
}

// holds tells which conditions are True in a phase.
func holds(p advisorv1alpha1.Phase) map[string]bool {
	h := map[string]bool{primaryCondition(p): true}
	switch p {
	case advisorv1alpha1.PhasePending:
		h = map[string]bool{}
	case advisorv1alpha1.PhaseCompleted:
		h[advisorv1alpha1.ConditionReady] = true
	case advisorv1alpha1.PhaseCompletedWithErrors:
		h[advisorv1alpha1.ConditionFailed] = true
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		// The targets are as approved; a newer plan waits for review.
		h[advisorv1alpha1.ConditionCompleted] = true
		h[advisorv1alpha1.ConditionReady] = true
	}
	return h
}

// syncConditions derives every condition from the phase and its reason and message.
func syncConditions(vpc *advisorv1alpha1.VirtPlatformConfig, reason, message string) {
	st := &vpc.Status
	phase := st.Phase
	if phase == "" {
		return
	}
	true_ := holds(phase)
	primary := primaryCondition(phase)
	for _, t := range allConditionTypes {
		c := metav1.Condition{
			Type:               t,
			Status:             metav1.ConditionFalse,
			Reason:             string(phase),
			ObservedGeneration: st.ObservedGeneration,
		}
		if true_[t] {
			c.Status = metav1.ConditionTrue
			c.Reason, c.Message = reason, message
			if t != primary {
				c.Reason, c.Message = secondaryReason(phase, t), message
			}
		} else if t == advisorv1alpha1.ConditionReady {
			c.Message = message
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// secondaryReason is the reason of a True condition that is not the phase's primary one.
func secondaryReason(p advisorv1alpha1.Phase, condType string) string {
	switch {
	case p == advisorv1alpha1.PhaseCompletedWithErrors && condType == advisorv1alpha1.ConditionFailed:
		return "ItemsFailed"
	case p == advisorv1alpha1.PhaseCompletedWithUpgrade && condType == advisorv1alpha1.ConditionCompleted:
		return "Applied"
	}
	return string(p)
}

// phaseReason returns the reason and message last recorded for the current phase.
func phaseReason(vpc *advisorv1alpha1.VirtPlatformConfig) (string, string) {
	c := meta.FindStatusCondition(vpc.Status.Conditions, primaryCondition(vpc.Status.Phase))
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// summarize fills the fields derived from the items: the highest impact and
// "completed/applicable".
func summarize(st *advisorv1alpha1.VirtPlatformConfigStatus) {
	if len(st.Items) == 0 {
		st.ImpactSeverity, st.ItemsSummary = "", ""
		return
	}
	rank := map[advisorv1alpha1.ImpactSeverity]int{advisorv1alpha1.ImpactLow: 1, advisorv1alpha1.ImpactMedium: 2, advisorv1alpha1.ImpactHigh: 3}
	impact := advisorv1alpha1.ImpactLow
	done, applicable := 0, 0
	for _, it := range st.Items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		applicable++
		if rank[it.ImpactSeverity] > rank[impact] {
			impact = it.ImpactSeverity
		}
		if it.State == advisorv1alpha1.ItemCompleted {
			done++
		}
	}
	st.ImpactSeverity = impact
	// Skipped items are not counted: a completed plan reads n/n.
	st.ItemsSummary = fmt.Sprintf("%d/%d", done, applicable)
}
