package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// refusal is why the write gate did not write an item's target.
type refusal struct {
	// reason is the condition reason the config waits with: ApprovalMismatch,
	// AwaitingApproval, or PlanIntegrity when the plan in status cannot be trusted.
	reason string
	// condition names the gate condition that failed, for the item message and the Event.
	condition string
}

// writeItem is the one place the operator writes an object that is not its own: every
// apply, release, drift correction and retry of an item passes here, and nowhere else
// calls the plan engine's ApplyItem. Right before the write it refuses unless
//   - spec.action is Apply and a pinned spec.approvedPlanHash is the plan's hash;
//   - the plan in status still hashes to status.planHash, and status.approval records an
//     approval of that hash given after the plan was shown (approval.minGeneration), or,
//     for an execution started by bypassOptimisticLock (approval.correctionsOnly), the item
//     restores exactly what an earlier approved execution applied to that target;
//   - the target is of a kind the profile manages and is the object the item's desired
//     state names, and the content is the operator's own: rendered, the item as the profile
//     renders it now, leads to exactly the desired state in status, or the item is a drift
//     correction that restores exactly what an approved execution applied (its applied
//     record); a release writes no content;
//
// and the status as it is now (the item marked as being written) is persisted first,
// guarded by the resourceVersion it was read at: a stale or deposed reconcile stops there.
// The plan engine then reads the target right before the write and writes nothing when
// its user-control annotations opt it out (Unmanaged) or the rendering no longer matches
// (Outdated).
func (r *VirtPlatformConfigReconciler) writeItem(ctx context.Context, s *scope, i int, rendered *plan.Item) (plan.ApplyOutcome, *refusal, error) {
	item := s.vpc.Status.Items[i]
	if why := authorize(s, item, rendered); why != nil {
		return plan.ApplyOutcome{}, why, nil
	}
	st := &s.vpc.Status
	if !s.vpc.Spec.Revert {
		// What the write replaces is recorded before it, for a revert.
		replaced, err := r.Engine.RecordReplaced(ctx, s.profileName(), item, st.Replaced)
		if err != nil {
			return plan.ApplyOutcome{}, nil, err
		}
		st.Replaced = replaced
	}
	if err := r.writeStatus(ctx, s); err != nil {
		return plan.ApplyOutcome{}, nil, err
	}
	out, err := r.Engine.ApplyItem(ctx, item, plan.ApplyOptions{
		Profile:       s.profileName(),
		CheckSnapshot: !s.vpc.Spec.BypassOptimisticLock,
		Force:         s.vpc.Spec.BypassOptimisticLock,
		Rendered:      rendered,
		Revert:        plan.RecordOf(st.Replaced, item.TargetRef),
	})
	if err == nil && out.CreatedUID != "" {
		// The write created the target: its record names the object, the one a revert
		// deletes, and is persisted with the next status write. Lost in a crash before
		// then, it is found again from the object (see plan.RecordReplaced).
		st.Replaced = plan.RecordCreated(st.Replaced, item.TargetRef, out.CreatedUID)
	}
	return out, nil, err
}

// authorizeExecution checks what every write of an execution needs, on a config as it is
// (the scope's, or another config's as read): an Apply, a matching pin, an intact plan and
// a recorded approval of it.
func authorizeExecution(vpc *advisorv1alpha1.VirtPlatformConfig) *refusal {
	spec, st := vpc.Spec, &vpc.Status
	a := st.Approval
	switch {
	case spec.Action != advisorv1alpha1.ActionApply:
		return &refusal{advisorv1alpha1.ReasonAwaitingApproval, fmt.Sprintf("spec.action is %s, not Apply", spec.Action)}
	case spec.ApprovedPlanHash != "" && spec.ApprovedPlanHash != st.PlanHash:
		return &refusal{advisorv1alpha1.ReasonApprovalMismatch, fmt.Sprintf(
			"spec.approvedPlanHash %s is not the plan's hash %s", spec.ApprovedPlanHash, st.PlanHash)}
	case spec.ApprovedPlanHash == "" && spec.ApprovedContent != nil && !contentApproved(spec, st):
		return &refusal{advisorv1alpha1.ReasonContentMismatch, fmt.Sprintf(
			"spec.approvedContent.hash %s is not the plan's content hash, or the approval recorded another", spec.ApprovedContent.Hash)}
	case !plan.Intact(st):
		return &refusal{advisorv1alpha1.ReasonPlanIntegrity, "the plan in status no longer hashes to status.planHash"}
	case a == nil || a.ApprovedPlanHash != st.PlanHash:
		return &refusal{advisorv1alpha1.ReasonAwaitingApproval, "no approval of this plan is recorded"}
	case !a.CorrectionsOnly && a.ApprovedGeneration < a.MinGeneration &&
		(a.ApprovedContentHash == "" || awaitsRetryApproval(a, a.ApprovedGeneration)):
		return &refusal{advisorv1alpha1.ReasonAwaitingApproval, "the approval was given before the plan was shown"}
	}
	return nil
}

// contentApproved tells whether spec.approvedContent approves the plan in status: it names
// the plan's content, the plan takes no field from another manager, and the execution's
// recorded approval is that of this content.
func contentApproved(spec advisorv1alpha1.VirtPlatformConfigSpec, st *advisorv1alpha1.VirtPlatformConfigStatus) bool {
	return st.Content != nil && spec.ApprovedContent.Hash == st.Content.Hash && !hasConflicts(st.Items) &&
		st.Approval != nil && st.Approval.ApprovedContentHash == st.Content.Hash
}

// authorize checks the gate's conditions on the status and spec read by this reconcile.
func authorize(s *scope, item advisorv1alpha1.PlanItem, rendered *plan.Item) *refusal {
	if why := authorizeExecution(s.vpc); why != nil {
		return why
	}
	spec, a := s.vpc.Spec, s.vpc.Status.Approval
	switch {
	case a.CorrectionsOnly && !restoresApplied(spec, item):
		return &refusal{advisorv1alpha1.ReasonAwaitingApproval, fmt.Sprintf(
			"item %s does not restore what an approved execution applied, and bypassOptimisticLock approves only such corrections", item.Name)}
	}
	if !manages(s, item.TargetRef) {
		return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf(
			"profile %s does not manage %s %s", s.vpc.Spec.Profile, item.TargetRef.Kind, item.TargetRef.Name)}
	}
	if s.vpc.Spec.Revert || plan.IsRevert(item) {
		// A revert item is drafted again from status.replaced right before its write
		// (see plan.ApplyOptions.Revert); it needs the record it is drafted from.
		if !s.vpc.Spec.Revert || plan.RecordOf(s.vpc.Status.Replaced, item.TargetRef) == nil {
			return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf(
				"item %s reverts %s %s, which is no target of the revert asked for in status.replaced", item.Name, item.TargetRef.Kind, item.TargetRef.Name)}
		}
		return nil
	}
	if item.Action == advisorv1alpha1.ItemActionRelease {
		if item.Applied == nil {
			return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf("item %s releases a target it never applied", item.Name)}
		}
		return nil
	}
	desired, err := plan.DesiredObject(item)
	if err != nil || plan.TargetOf(desired) != item.TargetRef {
		return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf("item %s's desired state is not its target %s %s",
			item.Name, item.TargetRef.Kind, item.TargetRef.Name)}
	}
	if rendered == nil && !plan.IsCorrection(item) {
		return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf(
			"item %s was neither rendered again before its write nor restores what an approved execution applied", item.Name)}
	}
	return nil
}

// restoresApplied tells whether, in aggressive mode, item writes back exactly what an
// approved execution applied to its target.
func restoresApplied(spec advisorv1alpha1.VirtPlatformConfigSpec, item advisorv1alpha1.PlanItem) bool {
	return spec.BypassOptimisticLock && plan.IsCorrection(item) && item.Applied.PlanHash != ""
}

// manages tells whether a target is of a kind the config's profile manages.
func manages(s *scope, ref advisorv1alpha1.TargetReference) bool {
	kind, known := targets.ByGroupKind(plan.KeyOf(ref).GroupKind())
	return known && s.profile != nil && slices.Contains(s.profile.WatchedCRDs(), kind.CRD)
}

// writePool takes a MachineConfigPool's pause for config's batch (take: the pool is
// paused, naming holders, config among them) or gives config's pause back (holders are the
// configs that still need it: the pool stays paused for them, and is resumed when there
// are none). It is the one place the operator writes a pool. Taking a pause needs what an
// item's write needs (an Apply, a matching pin, an intact plan, an approval given after the
// plan was shown) and a plan that shows the pause; giving one back needs only that the pool
// names the config, so a pool is resumed on every way out. The status is persisted first,
// and the write is guarded by the resourceVersion just read. A config deleted while it
// held a pause has no status: s is nil, and only the pause is given back.
func (r *VirtPlatformConfigReconciler) writePool(ctx context.Context, s *scope, config string, pool *unstructured.Unstructured, holders []string, take bool) (*refusal, error) {
	if why := authorizePool(s, config, pool, take); why != nil {
		return why, nil
	}
	if s != nil {
		if err := r.writeStatus(ctx, s); err != nil {
			return nil, err
		}
	}
	return nil, r.patchPool(ctx, pool, holders, take, s)
}

// authorizePool checks the gate's conditions for a write of pool.
func authorizePool(s *scope, config string, pool *unstructured.Unstructured, take bool) *refusal {
	if !take || s == nil {
		if !slices.Contains(targets.PausedBy(pool), config) {
			return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf(
				"MachineConfigPool %s is not paused for this config", pool.GetName())}
		}
		return nil
	}
	if why := authorizeExecution(s.vpc); why != nil {
		return why
	}
	if !slices.Contains(plan.PausedPools(s.vpc.Status.Rollouts), pool.GetName()) {
		return &refusal{advisorv1alpha1.ReasonPlanIntegrity, fmt.Sprintf(
			"the approved plan does not pause MachineConfigPool %s", pool.GetName())}
	}
	return nil
}

// patchPool writes the pool's holders and its pause, guarded by its resourceVersion: a
// pause taken (take) pauses it, recording when a pool that ran was paused; a pause given
// back leaves it paused while holders remain and resumes it otherwise. A spec.paused that
// somebody else wrote after the operator is theirs (an administrator who paused or resumed
// the pool meanwhile): a pause given back then leaves it as it is.
func (r *VirtPlatformConfigReconciler) patchPool(ctx context.Context, pool *unstructured.Unstructured, holders []string, take bool, s *scope) error {
	var holdersValue any
	if len(holders) > 0 {
		sorted := slices.Clone(holders)
		slices.Sort(sorted)
		holdersValue = strings.Join(slices.Compact(sorted), ",")
	}
	annotations := map[string]any{targets.PausedByAnnotation: holdersValue}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": pool.GetResourceVersion(), "annotations": annotations}}
	switch {
	case take:
		if !targets.PoolPaused(pool) {
			now := time.Now()
			if s != nil {
				now = s.now.Time
			}
			annotations[targets.PausedAtAnnotation] = pausedAtValue(now)
		}
		patch["spec"] = map[string]any{"paused": true}
	case len(holders) == 0:
		annotations[targets.PausedAtAnnotation] = nil
		if owner := targets.PauseWrittenBy(pool); owner == "" || owner == poolFieldManager {
			patch["spec"] = map[string]any{"paused": false}
		}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, pool, client.RawPatch(types.MergePatchType, body), client.FieldOwner(poolFieldManager)); err != nil {
		if apierrors.IsConflict(err) {
			// The Machine Config Operator writes the pool all the time: the pause is
			// decided again on a fresh read.
			return fmt.Errorf("write the pause of MachineConfigPool %s: %w: %w", pool.GetName(), errPoolConflict, err)
		}
		return fmt.Errorf("write the pause of MachineConfigPool %s: %w", pool.GetName(), err)
	}
	return nil
}

// errPoolConflict: a pool changed between its read and the write of its pause.
var errPoolConflict = errors.New("the MachineConfigPool changed since it was read")

// poolFieldManager is the field manager of the operator's pool pauses, shared by every
// profile: a pause is shared by the configs that need it.
const poolFieldManager = "virt-advisor-operator"
