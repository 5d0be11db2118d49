package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// A pool pause is held by the configs the pool names in targets.PausedByAnnotation; see
// docs/design-decisions.md, "One reboot per node per approval". A pool names a config only
// while that config needs the pause (needsPause): it executes an approved plan and its
// status records the pause. Every other name (left by an earlier version, or by a config
// whose execution ended between the two writes) is given back: by the config itself when
// its spec changes, it leaves its execution or its batch waits at a gate, by the batches
// that give their own pause back, and by a manager that starts.

// pausePool takes the pause of rollout k's pool for the batch: a pool paused by the
// operator for other configs' batches is shared, a pool paused by somebody else is left
// to them (the rollout waits until they resume it). The pause is recorded before it is
// written. A pool that does not exist holds no pause: the rollout's check fails its items.
func (r *VirtPlatformConfigReconciler) pausePool(ctx context.Context, s *scope, k int) (outcome, error) {
	st := &s.vpc.Status
	ro := &st.Rollouts[k]
	pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
	if apierrors.IsNotFound(err) {
		ro.PauseState = advisorv1alpha1.PauseResumed
		return nextStep, nil
	}
	if err != nil {
		return outcome{}, err
	}
	holders := targets.PausedBy(pool)
	switch {
	case slices.Contains(holders, s.vpc.Name):
		// Named already (a pause taken before a restart that lost its status write).
		ro.PauseState = advisorv1alpha1.PausePaused
		if ro.PausedAt == nil {
			t := s.now
			ro.PausedAt = &t
		}
		return nextStep, nil
	case targets.PoolPaused(pool) && len(holders) == 0:
		ro.PauseState = advisorv1alpha1.PauseExternal
		s.note(corev1.EventTypeNormal, advisorv1alpha1.ReasonAwaitingPool,
			"MachineConfigPool %s was paused by somebody else: the batch is applied and rolls out once they resume it", ro.Pool)
		return nextStep, nil
	}
	others, err := r.othersNeedingPause(ctx, s.vpc.Name, ro.Pool)
	if err != nil {
		return outcome{}, err
	}
	ro.PauseState = advisorv1alpha1.PausePausing
	t := s.now
	ro.PausedAt = &t
	if why, err := r.writePool(ctx, s, s.vpc.Name, pool, append(others, s.vpc.Name), true); why != nil || err != nil {
		if why != nil {
			return r.refusePoolWrite(s, ro.Pool, why), nil
		}
		return outcome{}, err
	}
	ro = &s.vpc.Status.Rollouts[k]
	ro.PauseState = advisorv1alpha1.PausePaused
	metrics.PoolPaused(ro.Pool, ro.PausedAt.Time)
	s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolPaused,
		"paused MachineConfigPool %s to roll out %s at once", ro.Pool, strings.Join(ro.Items, ", "))
	return nextStep, nil
}

// releasePauses gives back a pause the config holds when the execution is not at its batch
// any more (completed, failed, paused, redrafted, ignored): the batch gives its pauses back
// itself (giveBackPauses). acted is set when it gave one back; it is called again until it
// gives none.
func (r *VirtPlatformConfigReconciler) releasePauses(ctx context.Context, s *scope) (outcome, bool, error) {
	if inBatch(s) {
		return outcome{}, false, nil
	}
	return r.giveBackPauses(ctx, s)
}

// giveBackPauses gives back a pause the config holds, unless items of its batch are still
// to be applied.
func (r *VirtPlatformConfigReconciler) giveBackPauses(ctx context.Context, s *scope) (outcome, bool, error) {
	if batchPending(s) {
		return outcome{}, false, nil
	}
	for k, ro := range s.vpc.Status.Rollouts {
		if !plan.HoldsPause(ro) {
			continue
		}
		res, err := r.resumePool(ctx, s, k)
		return res, true, err
	}
	return outcome{}, false, nil
}

// owesPause tells whether the config holds a pause its batch no longer needs: the step
// that left the batch (a refused write, a failure, a redraft, a withdrawn approval) is
// followed by the give-back in the same reconcile, since nothing may wake it later.
func owesPause(s *scope) bool {
	return !inBatch(s) && slices.ContainsFunc(s.vpc.Status.Rollouts, plan.HoldsPause)
}

// resumePool gives back rollout k's pause: the pool is resumed unless another config
// still needs it paused. A pool that no longer exists holds no pause.
func (r *VirtPlatformConfigReconciler) resumePool(ctx context.Context, s *scope, k int) (outcome, error) {
	st := &s.vpc.Status
	ro := &st.Rollouts[k]
	pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
	if err != nil && !apierrors.IsNotFound(err) {
		return outcome{}, err
	}
	if pool == nil || !slices.Contains(targets.PausedBy(pool), s.vpc.Name) {
		ro.PauseState = advisorv1alpha1.PauseResumed
		metrics.PoolResumed(ro.Pool)
		return nextStep, nil
	}
	ro.PauseState = advisorv1alpha1.PauseResuming
	if _, err := r.givePauseBack(ctx, s, s.vpc.Name, pool); err != nil {
		return outcome{}, err
	}
	s.vpc.Status.Rollouts[k].PauseState = advisorv1alpha1.PauseResumed
	return nextStep, nil
}

// givePauseBack removes config from the configs pool names and resumes the pool unless
// another config still needs it paused; s is the config's scope (nil when the config is
// gone). A pool whose spec.paused somebody else wrote after the operator is theirs: only
// the name is given back.
func (r *VirtPlatformConfigReconciler) givePauseBack(ctx context.Context, s *scope, config string, pool *unstructured.Unstructured) ([]string, error) {
	others, err := r.othersNeedingPause(ctx, config, pool.GetName())
	if err != nil {
		return nil, err
	}
	if why, err := r.writePool(ctx, s, config, pool, others, false); why != nil || err != nil {
		if why != nil {
			return nil, fmt.Errorf("give back the pause of MachineConfigPool %s: %s", pool.GetName(), why.condition)
		}
		return nil, err
	}
	name := pool.GetName()
	switch owner := targets.PauseWrittenBy(pool); {
	case owner != "" && owner != poolFieldManager:
		metrics.PoolResumed(name)
		note := fmt.Sprintf("MachineConfigPool %s's spec.paused was last written by %s, not the operator: it is theirs, and left as it is", name, owner)
		if s != nil {
			s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolResumed, "%s", note)
		}
	case len(others) > 0:
		if s != nil {
			s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolResumed,
				"MachineConfigPool %s stays paused for the batch of %s", name, strings.Join(others, ", "))
		}
	default:
		metrics.PoolResumed(name)
		if s != nil {
			s.note(corev1.EventTypeNormal, advisorv1alpha1.EventPoolResumed, "resumed MachineConfigPool %s", name)
		}
	}
	return others, nil
}

// releaseUnheld gives back the pauses that pools name the config for while its status
// holds none of them and it does not need them (see needsPause). When held is set the
// config's batch waits at a gate: it gives back such a name whatever it needs, and takes
// its own pause once it may start. Only the given pools are read.
func (r *VirtPlatformConfigReconciler) releaseUnheld(ctx context.Context, s *scope, pools []string, held bool) error {
	for _, name := range pools {
		if holdsPauseOf(s.vpc, name) {
			continue
		}
		pool, err := targets.GetPool(ctx, r.APIReader, name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !slices.Contains(targets.PausedBy(pool), s.vpc.Name) || (!held && needsPause(s.vpc, name)) {
			continue
		}
		if _, err := r.givePauseBack(ctx, s, s.vpc.Name, pool); err != nil {
			return err
		}
	}
	return nil
}

// poolsOf are the pools the rollouts of the given statuses name.
func poolsOf(statuses ...*advisorv1alpha1.VirtPlatformConfigStatus) []string {
	var out []string
	for _, st := range statuses {
		for _, ro := range st.Rollouts {
			if !slices.Contains(out, ro.Pool) {
				out = append(out, ro.Pool)
			}
		}
	}
	return out
}

// settlePauses runs after the last step of a reconcile. A step that left the batch holding
// a pause (a refused write, a failure, a redraft, a withdrawn approval), or left the
// execution while a pool may name it, is followed by the give-back in the same reconcile:
// nothing may wake the config later, since pools are watched only while it executes.
func (r *VirtPlatformConfigReconciler) settlePauses(ctx context.Context, s *scope) error {
	left := s.startPhase == advisorv1alpha1.PhaseInProgress && s.vpc.Status.Phase != advisorv1alpha1.PhaseInProgress
	if !left && !owesPause(s) {
		return nil
	}
	pools := append(slices.Clone(s.startPools), poolsOf(&s.vpc.Status)...)
	n := r.newScope(s.vpc)
	for range n.vpc.Status.Rollouts {
		_, acted, err := r.releasePauses(ctx, n)
		if err != nil {
			return err
		}
		if !acted {
			break
		}
	}
	if left {
		if err := r.releaseUnheld(ctx, n, pools, false); err != nil {
			return err
		}
	}
	return r.persist(ctx, n, true)
}

// needsPause tells whether config c needs pool kept paused for its batch: it executes a
// plan whose approval the write gate accepts, and holds the pool's pause (its status
// records it). A config that has not taken the pause yet takes it itself when its batch
// starts, past its gates (a pool that renders a batch stays paused long enough for the
// batches approved with it to join); handing a pause to it would keep the pool paused
// while it waits at a gate.
func needsPause(c *advisorv1alpha1.VirtPlatformConfig, pool string) bool {
	if c.Status.Phase != advisorv1alpha1.PhaseInProgress || !c.DeletionTimestamp.IsZero() || authorizeExecution(c) != nil {
		return false
	}
	return slices.ContainsFunc(c.Status.Rollouts, func(ro advisorv1alpha1.PoolRollout) bool {
		return ro.Pool == pool && ro.Pause && plan.HoldsPause(ro)
	})
}

// othersNeedingPause are the configs, other than name, that need pool kept paused.
func (r *VirtPlatformConfigReconciler) othersNeedingPause(ctx context.Context, name, pool string) ([]string, error) {
	configs := &advisorv1alpha1.VirtPlatformConfigList{}
	if err := r.APIReader.List(ctx, configs); err != nil {
		return nil, fmt.Errorf("list VirtPlatformConfigs: %w", err)
	}
	var out []string
	for i := range configs.Items {
		if c := &configs.Items[i]; c.Name != name && needsPause(c, pool) {
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
		if !slices.Contains(targets.PausedBy(pool), name) {
			continue
		}
		others, err := r.givePauseBack(ctx, nil, name, pool)
		if err != nil {
			return err
		}
		logf.FromContext(ctx).Info("gave back the pause of a deleted config", "config", name, "pool", pool.GetName(), "stillPausedFor", others)
	}
	return nil
}

// releaseOrphanedPauses runs when the manager becomes the leader. It gives back the pauses
// of configs deleted while no manager ran, and of configs a pool names that neither hold
// its pause nor need it; it exports the pauses that stay, with the time the pool was
// paused, for the alert on pools paused too long.
func (r *VirtPlatformConfigReconciler) releaseOrphanedPauses(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("pauses")
	pools, _, err := targets.ListPools(ctx, r.APIReader)
	if err != nil {
		log.Error(err, "cannot look for pauses of deleted configs")
		return nil
	}
	for i := range pools {
		pool := &pools[i]
		for _, name := range targets.PausedBy(pool) {
			// The pool's write is guarded by the resourceVersion read, and the Machine
			// Config Operator writes the pool too: read it again and retry on a conflict.
			err := retry.RetryOnConflict(retry.DefaultBackoff, func() error { return r.releaseOrphaned(ctx, pool, name) })
			if err != nil {
				log.Error(err, "cannot give back the pause of a config", "config", name, "pool", pool.GetName())
			}
		}
		if latest, err := targets.GetPool(ctx, r.APIReader, pool.GetName()); err == nil && targets.PoolPaused(latest) {
			if since, ok := targets.PausedAt(latest); ok && len(targets.PausedBy(latest)) > 0 {
				metrics.PoolPaused(latest.GetName(), since)
			}
		}
	}
	return nil
}

// releaseOrphaned gives back the pause pool holds for config name when the config is gone
// or neither holds nor needs it.
func (r *VirtPlatformConfigReconciler) releaseOrphaned(ctx context.Context, pool *unstructured.Unstructured, name string) error {
	c := &advisorv1alpha1.VirtPlatformConfig{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, c)
	if apierrors.IsNotFound(err) {
		return r.releaseDeleted(ctx, name)
	}
	if err != nil {
		return err
	}
	if holdsPauseOf(c, pool.GetName()) || needsPause(c, pool.GetName()) {
		return nil
	}
	latest, err := targets.GetPool(ctx, r.APIReader, pool.GetName())
	if err != nil || !slices.Contains(targets.PausedBy(latest), name) {
		return client.IgnoreNotFound(err)
	}
	others, err := r.givePauseBack(ctx, nil, name, latest)
	if err == nil {
		logf.FromContext(ctx).Info("gave back a pause its config neither holds nor needs", "config", name, "pool", latest.GetName(), "stillPausedFor", others)
	}
	return err
}

// holdsPauseOf tells whether c's status records a pause of pool it has not given back.
func holdsPauseOf(c *advisorv1alpha1.VirtPlatformConfig, pool string) bool {
	return slices.ContainsFunc(c.Status.Rollouts, func(ro advisorv1alpha1.PoolRollout) bool {
		return ro.Pool == pool && plan.HoldsPause(ro)
	})
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

// pausedAtValue is the value of targets.PausedAtAnnotation for a pause taken at t.
func pausedAtValue(t time.Time) string { return t.UTC().Format(time.RFC3339) }
