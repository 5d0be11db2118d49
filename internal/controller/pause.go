package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/batch"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// A pool pause is held by the configs the pool names in targets.PausedByAnnotation; see
// docs/design-decisions.md, "One reboot per node per approval".

// pausePool takes the pause of rollout k's pool for the batch: a pool paused by the
// operator for other configs' batches is shared, a pool paused by somebody else is left
// to them (the rollout waits until they resume it). The pause is recorded before it is
// written.
func (r *VirtPlatformConfigReconciler) pausePool(ctx context.Context, s *scope, k int) (ctrl.Result, error) {
	st := &s.vpc.Status
	ro := &st.Rollouts[k]
	pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	holders := targets.PausedBy(pool)
	switch {
	case slices.Contains(holders, s.vpc.Name):
		ro.PauseState = advisorv1alpha1.PausePaused
		return ctrl.Result{RequeueAfter: immediately}, nil
	case targets.PoolPaused(pool) && len(holders) == 0:
		ro.PauseState = advisorv1alpha1.PauseExternal
		s.note(corev1.EventTypeNormal, advisorv1alpha1.ReasonAwaitingPool,
			"MachineConfigPool %s was paused by somebody else: the batch is applied and rolls out once they resume it", ro.Pool)
		return ctrl.Result{RequeueAfter: immediately}, nil
	}
	ro.PauseState = advisorv1alpha1.PausePausing
	t := s.now
	ro.PausedAt = &t
	if why, err := r.writePool(ctx, s, s.vpc.Name, pool, append(holders, s.vpc.Name), true); why != nil || err != nil {
		if why != nil {
			return r.refusePoolWrite(s, ro.Pool, why), nil
		}
		return ctrl.Result{}, err
	}
	ro = &s.vpc.Status.Rollouts[k]
	ro.PauseState = advisorv1alpha1.PausePaused
	metrics.PoolPaused(ro.Pool, ro.PausedAt.Time)
	s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolPaused,
		"paused MachineConfigPool %s to roll out %s at once", ro.Pool, strings.Join(ro.Items, ", "))
	return ctrl.Result{RequeueAfter: immediately}, nil
}

// releasePauses gives back the pauses the config holds when its batch no longer needs
// them: every item applied, or the execution ended (completed, failed, paused, redrafted,
// ignored). A pool stays paused while another config's approved batch still needs it.
func (r *VirtPlatformConfigReconciler) releasePauses(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if batchPending(s) {
		return ctrl.Result{}, false, nil
	}
	for k, ro := range s.vpc.Status.Rollouts {
		if !batch.HoldsPause(ro) {
			continue
		}
		res, err := r.resumePool(ctx, s, k)
		return res, true, err
	}
	return ctrl.Result{}, false, nil
}

// resumePool gives back rollout k's pause: the pool is resumed unless another config
// still needs it paused.
func (r *VirtPlatformConfigReconciler) resumePool(ctx context.Context, s *scope, k int) (ctrl.Result, error) {
	st := &s.vpc.Status
	ro := &st.Rollouts[k]
	pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	holders := targets.PausedBy(pool)
	if !slices.Contains(holders, s.vpc.Name) {
		ro.PauseState = advisorv1alpha1.PauseResumed
		metrics.PoolResumed(ro.Pool)
		return ctrl.Result{RequeueAfter: immediately}, nil
	}
	others, err := r.othersNeedingPause(ctx, s.vpc.Name, ro.Pool, holders)
	if err != nil {
		return ctrl.Result{}, err
	}
	ro.PauseState = advisorv1alpha1.PauseResuming
	if why, err := r.writePool(ctx, s, s.vpc.Name, pool, others, len(others) > 0); why != nil || err != nil {
		if why != nil {
			return r.refusePoolWrite(s, ro.Pool, why), nil
		}
		return ctrl.Result{}, err
	}
	ro = &s.vpc.Status.Rollouts[k]
	ro.PauseState = advisorv1alpha1.PauseResumed
	if len(others) > 0 {
		s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolResumed,
			"MachineConfigPool %s stays paused for the batch of %s", ro.Pool, strings.Join(others, ", "))
	} else {
		metrics.PoolResumed(ro.Pool)
		s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolResumed, "resumed MachineConfigPool %s", ro.Pool)
	}
	return ctrl.Result{RequeueAfter: immediately}, nil
}

// othersNeedingPause are the configs, other than name, whose approved batch still needs the
// pool paused: the ones the pool names that still exist, and the ones approved to roll
// out in it that have not applied their batch yet.
func (r *VirtPlatformConfigReconciler) othersNeedingPause(ctx context.Context, name, pool string, holders []string) ([]string, error) {
	configs := &advisorv1alpha1.VirtPlatformConfigList{}
	if err := r.APIReader.List(ctx, configs); err != nil {
		return nil, fmt.Errorf("list VirtPlatformConfigs: %w", err)
	}
	var out []string
	for _, c := range configs.Items {
		if c.Name == name || !c.DeletionTimestamp.IsZero() {
			continue
		}
		needs := slices.Contains(holders, c.Name)
		if !needs && c.Spec.Action == advisorv1alpha1.ActionApply {
			switch c.Status.Phase {
			case advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.PhaseInProgress:
				needs = batch.WaitsToRollOut(&c.Status, pool)
			}
		}
		if needs {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// releaseDeleted gives back the pauses a deleted config held: every pool that names it is
// resumed, unless another config still needs it paused.
func (r *VirtPlatformConfigReconciler) releaseDeleted(ctx context.Context, name string) error {
	pools, _, err := targets.ListPools(ctx, r.APIReader)
	if err != nil {
		return err
	}
	for i := range pools {
		pool := &pools[i]
		holders := targets.PausedBy(pool)
		if !slices.Contains(holders, name) {
			continue
		}
		others, err := r.othersNeedingPause(ctx, name, pool.GetName(), holders)
		if err != nil {
			return err
		}
		if _, err := r.writePool(ctx, nil, name, pool, others, len(others) > 0); err != nil {
			return err
		}
		if len(others) == 0 {
			metrics.PoolResumed(pool.GetName())
		}
		logf.FromContext(ctx).Info("gave back the pause of a deleted config", "config", name, "pool", pool.GetName(), "stillPausedFor", others)
	}
	return nil
}

// observePauses exports the pauses a config holds, with the time they were taken (also
// after a restart), for the alert on pools paused too long.
func observePauses(vpc *advisorv1alpha1.VirtPlatformConfig) {
	for _, ro := range vpc.Status.Rollouts {
		if ro.PauseState == advisorv1alpha1.PausePaused && ro.PausedAt != nil {
			metrics.PoolPaused(ro.Pool, ro.PausedAt.Time)
		}
	}
}
