package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// forecast fills status.rollouts and status.disruption for the plan just installed, and
// hashes the plan again with the pools it pauses. Pools whose pause the config still holds
// from an execution stay listed, so that the pause is given back.
func (r *VirtPlatformConfigReconciler) forecast(ctx context.Context, s *scope) error {
	st := &s.vpc.Status
	previous := map[string]advisorv1alpha1.PoolRollout{}
	for _, ro := range st.Rollouts {
		previous[ro.Pool] = ro
	}
	type poolChanges struct {
		pool    *unstructured.Unstructured
		items   []string
		changes []targets.NodeChange
	}
	var byPool []*poolChanges
	var pools []unstructured.Unstructured
	var policy *targets.DisruptionPolicy
	listed := false
	for _, it := range st.Items {
		if !rollsOut(it) || it.State != advisorv1alpha1.ItemPending || it.Change == advisorv1alpha1.ChangeNone {
			continue
		}
		if !listed {
			var err error
			if pools, _, err = targets.ListPools(ctx, r.APIReader); err != nil {
				return err
			}
			if policy, err = targets.ReadDisruptionPolicy(ctx, r.APIReader); err != nil {
				return err
			}
			listed = true
		}
		desired, err := plan.DesiredObject(it)
		if err != nil {
			return err
		}
		change, err := r.nodeChange(ctx, desired, it.Action == advisorv1alpha1.ItemActionDelete)
		if err != nil {
			return err
		}
		if change.IsEmpty() {
			continue
		}
		for i := range pools {
			if !targets.PoolRendersFrom(&pools[i], desired) {
				continue
			}
			k := slices.IndexFunc(byPool, func(pc *poolChanges) bool { return pc.pool.GetName() == pools[i].GetName() })
			if k < 0 {
				byPool = append(byPool, &poolChanges{pool: &pools[i]})
				k = len(byPool) - 1
			}
			byPool[k].items = append(byPool[k].items, it.Name)
			byPool[k].changes = append(byPool[k].changes, change)
		}
	}
	var rollouts []advisorv1alpha1.PoolRollout
	for _, pc := range byPool {
		f := targets.ForecastPool(pc.pool, pc.changes, policy)
		ro := advisorv1alpha1.PoolRollout{Pool: f.Pool, Items: pc.items, Nodes: f.Nodes, MaxUnavailable: f.MaxUnavailable,
			Waves: f.Waves, Reboot: f.Reboot, Reasons: f.Reasons, Pause: true}
		prev, had := previous[ro.Pool]
		if had && holdsPause(prev) {
			ro.PauseState, ro.PausedAt = prev.PauseState, prev.PausedAt
		}
		ro.SecondsPerNode = prev.SecondsPerNode
		ro.EstimatedDuration = r.estimate(ctx, s, ro)
		delete(previous, ro.Pool)
		rollouts = append(rollouts, ro)
	}
	for _, prev := range previous {
		if holdsPause(prev) {
			rollouts = append(rollouts, advisorv1alpha1.PoolRollout{Pool: prev.Pool, PauseState: prev.PauseState,
				PausedAt: prev.PausedAt, SecondsPerNode: prev.SecondsPerNode})
		}
	}
	sort.Slice(rollouts, func(i, j int) bool { return rollouts[i].Pool < rollouts[j].Pool })
	st.Rollouts = rollouts
	st.Disruption = describeDisruption(rollouts)
	st.PlanHash = statusPlanHash(st)
	return nil
}

// nodeChange is what applying desired changes on the nodes of its pools, against the live
// object (absent: created).
func (r *VirtPlatformConfigReconciler) nodeChange(ctx context.Context, desired *unstructured.Unstructured, deleted bool) (targets.NodeChange, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return targets.NodeChange{}, fmt.Errorf("read %s: %w", targets.Describe(desired), err)
	}
	if deleted {
		return targets.ChangeOfRemoval(live)
	}
	return targets.ChangeOfObject(live, desired)
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

// describeDisruption sums up the rollouts, e.g. "reboots 6 worker nodes once, in 6 waves".
func describeDisruption(rollouts []advisorv1alpha1.PoolRollout) string {
	var parts []string
	for _, ro := range rollouts {
		if len(ro.Items) == 0 {
			continue
		}
		what := "updates"
		if ro.Reboot {
			what = "reboots"
		}
		parts = append(parts, fmt.Sprintf("%s %d %s node(s) once, in %d wave(s)", what, ro.Nodes, ro.Pool, ro.Waves))
	}
	return strings.Join(parts, "; ")
}
