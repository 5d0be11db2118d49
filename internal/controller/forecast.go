package controller

import (
	"context"
	"sort"
	"time"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// forecast fills status.rollouts and status.disruption for the plan in status (only the
// pending items only selects, when set), with what draining each pool's nodes does to the
// VMs on them (vms.go), and hashes the plan again with the pools it pauses (not the VMs). Pools whose pause the config still holds from an execution stay listed, so that
// the pause is given back.
func (r *VirtPlatformConfigReconciler) forecast(ctx context.Context, s *scope, only func(advisorv1alpha1.PlanItem) bool) error {
	st := &s.vpc.Status
	previous := map[string]advisorv1alpha1.PoolRollout{}
	for _, ro := range st.Rollouts {
		previous[ro.Pool] = ro
	}
	var changes []targets.PlannedChange
	for _, it := range st.Items {
		if !plan.RollsOut(it) || it.State != advisorv1alpha1.ItemPending || it.Change == advisorv1alpha1.ChangeNone ||
			(only != nil && !only(it)) {
			continue
		}
		desired, err := plan.DesiredObject(it)
		if err != nil {
			return err
		}
		changes = append(changes, targets.PlannedChange{Item: it.Name, Desired: desired, Deleted: it.Action == advisorv1alpha1.ItemActionDelete})
	}
	forecasts, err := targets.Forecast(ctx, r.APIReader, changes)
	if err != nil {
		return err
	}
	var rollouts []advisorv1alpha1.PoolRollout
	var drained []drainedPool
	for _, f := range forecasts {
		if f.Drain && f.Waves > 0 {
			drained = append(drained, drainedPool{pool: f.Pool, maxUnavailable: f.MaxUnavailable})
		}
	}
	vms := r.forecastVMs(ctx, drained, false)
	for _, f := range forecasts {
		ro := advisorv1alpha1.PoolRollout{Pool: f.Pool, Items: f.Items, Nodes: f.Nodes, MaxUnavailable: f.MaxUnavailable,
			Waves: f.Waves, Reboot: f.Reboot, Reasons: f.Reasons, Pause: true, VMs: vms[f.Pool]}
		prev, had := previous[ro.Pool]
		if had && plan.HoldsPause(prev) {
			ro.PauseState, ro.PausedAt = prev.PauseState, prev.PausedAt
		}
		ro.SecondsPerNode = prev.SecondsPerNode
		ro.EstimatedDuration = r.estimate(ctx, s, ro)
		delete(previous, ro.Pool)
		rollouts = append(rollouts, ro)
	}
	for _, prev := range previous {
		if plan.HoldsPause(prev) {
			rollouts = append(rollouts, advisorv1alpha1.PoolRollout{Pool: prev.Pool, PauseState: prev.PauseState,
				PausedAt: prev.PausedAt, SecondsPerNode: prev.SecondsPerNode})
		}
	}
	sort.Slice(rollouts, func(i, j int) bool { return rollouts[i].Pool < rollouts[j].Pool })
	s.ledger().SetForecast(rollouts)
	return nil
}

// estimate is the expected duration of a pool's rollout from the time per node measured
// in an earlier rollout of the pool, by this config or another one.
func (r *VirtPlatformConfigReconciler) estimate(ctx context.Context, s *scope, ro advisorv1alpha1.PoolRollout) string {
	perNode := ro.SecondsPerNode
	if perNode == 0 {
		configs := &advisorv1alpha1.VirtPlatformConfigList{}
		if err := r.Client.List(ctx, configs); err == nil {
			for _, c := range configs.Items {
				for _, other := range c.Status.Rollouts {
					if other.Pool == ro.Pool && other.SecondsPerNode > 0 && c.Name != s.vpc.Name {
						perNode = other.SecondsPerNode
					}
				}
			}
		}
	}
	if perNode == 0 || ro.Waves == 0 {
		return "unknown"
	}
	// Each wave updates up to maxUnavailable nodes side by side: a wave takes what one
	// node takes.
	return "about " + (time.Duration(perNode) * time.Second * time.Duration(ro.Waves)).Round(time.Minute).String()
}
