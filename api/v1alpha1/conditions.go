package v1alpha1

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
