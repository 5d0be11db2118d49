package cli

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// activeCondition is the True condition that explains the phase: the phase's own condition,
// else the first True one.
func activeCondition(vpc *advisorv1alpha1.VirtPlatformConfig) *metav1.Condition {
	if t := advisorv1alpha1.PhaseCondition(vpc.Status.Phase); t != "" {
		if c := meta.FindStatusCondition(vpc.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	for i := range vpc.Status.Conditions {
		if c := &vpc.Status.Conditions[i]; c.Status == metav1.ConditionTrue && c.Type != advisorv1alpha1.ConditionReady {
			return c
		}
	}
	return nil
}

func reasonAndMessage(vpc *advisorv1alpha1.VirtPlatformConfig) (string, string) {
	if c := activeCondition(vpc); c != nil {
		return c.Reason, c.Message
	}
	return "", ""
}

// itemCounts counts the completed items against the items that apply (all but Skipped).
func itemCounts(items []advisorv1alpha1.PlanItem) (done, total int) {
	for _, it := range items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		total++
		if it.State == advisorv1alpha1.ItemCompleted {
			done++
		}
	}
	return done, total
}

// changes tells whether executing the item still writes to its target: it has a diff (or
// hands back fields) and is in a state that will be applied.
func changes(it advisorv1alpha1.PlanItem) bool {
	switch it.State {
	case advisorv1alpha1.ItemPending, advisorv1alpha1.ItemFailed, "":
	default:
		return false
	}
	if it.Action == advisorv1alpha1.ItemActionRelease {
		return true
	}
	return it.Change == advisorv1alpha1.ChangeValues || it.Change == advisorv1alpha1.ChangeOwnershipOnly
}

// isRevertItem tells whether an item belongs to a revert plan: it deletes a target the
// profile created, or restores the values it replaced.
func isRevertItem(it advisorv1alpha1.PlanItem) bool {
	return it.Action == advisorv1alpha1.ItemActionRestore || it.Action == advisorv1alpha1.ItemActionDelete
}

// revertPlan tells whether the plan in status is a revert plan (spec.revert): it has a
// Restore or Delete item, the config is Reverted, or the operator has acted on a spec that
// asks for the revert.
func revertPlan(vpc *advisorv1alpha1.VirtPlatformConfig) bool {
	return slices.ContainsFunc(vpc.Status.Items, isRevertItem) || vpc.Status.Phase == advisorv1alpha1.PhaseReverted ||
		(vpc.Spec.Revert && fresh(vpc))
}

// fresh tells whether the operator has acted on the latest spec.
func fresh(vpc *advisorv1alpha1.VirtPlatformConfig) bool {
	return vpc.Status.ObservedGeneration >= vpc.Generation
}

// approvalRequired tells whether a plan waits for an approval.
func approvalRequired(vpc *advisorv1alpha1.VirtPlatformConfig) bool {
	return vpc.Status.PlanHash != "" && vpc.Status.Approval != nil && vpc.Status.Approval.Required
}

func describeTarget(ref advisorv1alpha1.TargetReference) string {
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + ref.Name
	}
	return fmt.Sprintf("%s %s (%s)", ref.Kind, name, ref.APIVersion)
}
