package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/schedule"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// batchPending tells whether items of the batch wait to be applied: the pools they roll
// out in stay paused until they are.
func batchPending(s *scope) bool {
	st := &s.vpc.Status
	if st.Phase != advisorv1alpha1.PhaseInProgress || s.vpc.Spec.Action != advisorv1alpha1.ActionApply {
		return false
	}
	for _, i := range plan.ExecutionBatch(st) {
		if st.Items[i].State == advisorv1alpha1.ItemPending {
			return true
		}
	}
	return false
}

// executeBatch takes the batch as far as it goes in one step: past its gates, pausing its
// pools, applying its items and resuming the pools, then judging the rollouts. What one
// write did is persisted with the status the write gate writes before the next write
// (rule 12), or at the end of the step.
func (r *VirtPlatformConfigReconciler) executeBatch(ctx context.Context, s *scope) (outcome, error) {
	for {
		o, more, err := r.batchStep(ctx, s)
		if !more || err != nil {
			return o, err
		}
	}
}

// batchStep takes one step of the batch: a gate, a pause, a write, the render wait or the
// rollouts' health. more is set when the batch goes on in the same step.
func (r *VirtPlatformConfigReconciler) batchStep(ctx context.Context, s *scope) (outcome, bool, error) {
	st := &s.vpc.Status
	items := plan.ExecutionBatch(st)
	// The batch started once a pause was taken or an item of it was applied in this
	// execution (InProgress): items completed by an earlier execution do not count.
	started := slices.ContainsFunc(st.Rollouts, func(ro advisorv1alpha1.PoolRollout) bool { return ro.PauseState != "" }) ||
		slices.ContainsFunc(items, func(i int) bool { return st.Items[i].State == advisorv1alpha1.ItemInProgress })
	if !started {
		if res, held, err := r.holdBatch(ctx, s); held || err != nil {
			return res, false, err
		}
	}
	for k, ro := range st.Rollouts {
		if ro.Pause && len(ro.Items) > 0 && (ro.PauseState == "" || ro.PauseState == advisorv1alpha1.PausePausing) && batchPending(s) {
			res, err := r.pausePool(ctx, s, k)
			return batchGoesOn(res, err)
		}
	}
	for _, i := range items {
		if st.Items[i].State == advisorv1alpha1.ItemPending {
			s.ledger().SetState(i, advisorv1alpha1.ItemPending, "applying")
			res, stop, err := r.applyItem(ctx, s, i)
			if stop || err != nil {
				return res, false, err
			}
			s.ledger().SetWaiting(i, nil)
			msg := "applied; rolls out with the batch"
			if pools := plan.PoolsOf(st, st.Items[i].Name); len(pools) > 0 {
				msg += " in MachineConfigPool " + strings.Join(pools, ", MachineConfigPool ")
			}
			s.ledger().SetState(i, advisorv1alpha1.ItemInProgress, msg)
			return outcome{}, true, nil
		}
	}
	if res, waiting, err := r.awaitRender(ctx, s, items); waiting || err != nil {
		return res, false, err
	}
	if res, held := r.holdResume(ctx, s, items); held {
		return res, false, nil
	}
	if res, acted, err := r.giveBackPauses(ctx, s); acted || err != nil {
		return batchGoesOn(res, err)
	}
	o, err := r.checkBatch(ctx, s, items)
	return o, false, err
}

// inBatch tells whether the execution is at its batch: the batch then takes and gives
// back its pauses itself (executeBatch), once its pools rendered all of it.
func inBatch(s *scope) bool {
	st := &s.vpc.Status
	if st.Phase != advisorv1alpha1.PhaseInProgress || s.vpc.Spec.Action != advisorv1alpha1.ActionApply {
		return false
	}
	i := plan.NextItem(&s.vpc.Status)
	return i >= 0 && plan.RollsOut(st.Items[i])
}

// awaitRender keeps the pools the batch paused paused until the configuration each one
// targets holds every item of the batch that rolls out in it (see targets.BatchRendered):
// resumed earlier, a pool would roll out part of the batch, then the rest, and its nodes
// would reboot twice. A degraded pool is not waited for (its items fail when it is
// judged); a pool that has not rendered the batch within waitTimeout of its pause fails it.
func (r *VirtPlatformConfigReconciler) awaitRender(ctx context.Context, s *scope, items []int) (outcome, bool, error) {
	st := &s.vpc.Status
	var timeout time.Duration
	if s.vpc.Spec.WaitTimeout != nil {
		timeout = s.vpc.Spec.WaitTimeout.Duration
	}
	wait := r.pollInterval()
	var waiting []string
	for _, ro := range st.Rollouts {
		if ro.PauseState != advisorv1alpha1.PausePaused || len(ro.Items) == 0 {
			continue
		}
		var objs []*unstructured.Unstructured
		for _, i := range items {
			it := st.Items[i]
			if it.State != advisorv1alpha1.ItemInProgress || it.Action == advisorv1alpha1.ItemActionDelete || !slices.Contains(ro.Items, it.Name) {
				continue
			}
			obj, err := plan.DesiredObject(it)
			if err != nil {
				return outcome{}, true, err
			}
			objs = append(objs, obj)
		}
		pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return outcome{}, true, err
		}
		if !slices.Contains(targets.PausedBy(pool), s.vpc.Name) || targets.PoolDegraded(pool) {
			continue
		}
		rendered, msg, err := targets.BatchRendered(ctx, r.APIReader, pool, objs)
		if err != nil {
			return outcome{}, true, err
		}
		if rendered {
			continue
		}
		if timeout > 0 && ro.PausedAt != nil {
			left := ro.PausedAt.Add(timeout).Sub(s.now.Time)
			if left <= 0 {
				first := slices.IndexFunc(items, func(i int) bool { return slices.Contains(ro.Items, st.Items[i].Name) })
				return r.failItem(s, items[max(first, 0)], fmt.Sprintf(
					"MachineConfigPool %s did not render the whole batch within waitTimeout %s of its pause: %s", ro.Pool, timeout, msg)), true, nil
			}
			wait = min(wait, left)
		}
		waiting = append(waiting, msg)
	}
	if len(waiting) == 0 {
		return outcome{}, false, nil
	}
	msg := "applied; the pool is resumed once it has rendered the whole batch: " + strings.Join(waiting, "; ")
	for _, i := range items {
		if st.Items[i].State == advisorv1alpha1.ItemInProgress {
			s.ledger().SetMessage(i, msg)
		}
	}
	return waitFor(wait), true, nil
}

// holdResume keeps the batch's pools paused, right before they would be resumed, while a
// VM would block the drain of their nodes: VMs move between the approval and the rollout.
// A resume already under way (Resuming) is finished, whatever the VMs do.
func (r *VirtPlatformConfigReconciler) holdResume(ctx context.Context, s *scope, items []int) (outcome, bool) {
	if batchPending(s) || !slices.ContainsFunc(s.vpc.Status.Rollouts, func(ro advisorv1alpha1.PoolRollout) bool {
		return ro.PauseState == advisorv1alpha1.PausePaused || ro.PauseState == advisorv1alpha1.PauseShared
	}) {
		return outcome{}, false
	}
	msg := r.blockedDrains(ctx, s)
	if msg == "" {
		return outcome{}, false
	}
	s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonDrainBlocked, msg)
	for _, i := range items {
		if s.vpc.Status.Items[i].State == advisorv1alpha1.ItemInProgress {
			s.ledger().SetMessage(i, "applied; the pool stays paused while a VM would block the drain of its nodes (see the InProgress condition)")
		}
	}
	return waitFor(r.pollInterval()), true
}

// batchGoesOn goes on with the batch in the same step after a pool's pause was taken or
// given back; a wait or an error ends the step.
func batchGoesOn(o outcome, err error) (outcome, bool, error) {
	return o, err == nil && o.next, err
}

// holdBatch holds the batch before it starts while it is not safe to roll out: outside
// the maintenance window, while the cluster upgrades, while a pool it rolls out in is
// busy with another change.
func (r *VirtPlatformConfigReconciler) holdBatch(ctx context.Context, s *scope) (outcome, bool, error) {
	res, held, err := r.batchGate(ctx, s)
	if held && err == nil {
		// What another batch handed over is given back: this one takes its own pause once
		// it may start.
		err = r.releaseUnheld(ctx, s, poolsOf(&s.vpc.Status), true)
	}
	return res, held, err
}

// batchGate is the first gate that holds the batch now, if any (see holdBatch).
func (r *VirtPlatformConfigReconciler) batchGate(ctx context.Context, s *scope) (outcome, bool, error) {
	if w := s.vpc.Spec.MaintenanceWindow; w != nil {
		win, err := schedule.Parse(w.Schedule, w.Duration.Duration, w.TimeZone)
		if err != nil {
			// Changed after the approval (a plan is not drafted with an invalid window):
			// nothing of the batch starts until it is fixed.
			s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonInvalidMaintenanceWindow,
				fmt.Sprintf("the items that roll out to nodes wait: spec.maintenanceWindow: %v: fix it to go on", err))
			return outcome{}, true, nil
		}
		if open, _ := win.Open(s.now.Time); !open {
			next := win.Next(s.now.Time)
			s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonAwaitingMaintenanceWindow, fmt.Sprintf(
				"the items that roll out to nodes wait for the maintenance window: the next one starts %s (in %s)",
				next.Format(time.RFC3339), schedule.Until(s.now.Time, next)))
			return waitFor(max(next.Sub(s.now.Time), time.Second)), true, nil
		}
	}
	upgrading, msg, err := targets.ClusterUpgrading(ctx, r.APIReader)
	if err != nil {
		return outcome{}, true, err
	}
	if upgrading {
		s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonAwaitingClusterUpgrade, fmt.Sprintf(
			"the items that roll out to nodes wait until the cluster upgrade in flight ends (ClusterVersion version is Progressing: %s)", msg))
		return waitFor(r.pollInterval()), true, nil
	}
	var busy []string
	for _, ro := range s.vpc.Status.Rollouts {
		if len(ro.Items) == 0 {
			continue
		}
		pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
		if apierrors.IsNotFound(err) {
			continue // nothing rolls out in it: the items' health check says so
		}
		if err != nil {
			return outcome{}, true, err
		}
		if why := targets.PoolBusy(pool); why != "" {
			busy = append(busy, why)
		}
	}
	if len(busy) > 0 {
		s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonAwaitingPool, fmt.Sprintf(
			"the items that roll out to nodes wait: %s", strings.Join(busy, "; ")))
		return waitFor(r.pollInterval()), true, nil
	}
	if msg := r.blockedDrains(ctx, s); msg != "" {
		s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonDrainBlocked, msg)
		return waitFor(r.pollInterval()), true, nil
	}
	if s.vpc.Status.Conditions != nil && s.reason == "" {
		s.setPhase(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ReasonExecuting, "rolling out the batch")
	}
	return outcome{}, false, nil
}

// refusePoolWrite stops at a pool write the gate refused, as refuseWrite does for items.
func (r *VirtPlatformConfigReconciler) refusePoolWrite(s *scope, pool string, why *refusal) outcome {
	s.note(corev1.EventTypeWarning, advisorv1alpha1.EventWriteRefused, "MachineConfigPool %s was not written: %s", pool, why.condition)
	switch why.reason {
	case advisorv1alpha1.ReasonPlanIntegrity:
		return r.refuseAltered(s)
	case advisorv1alpha1.ReasonApprovalMismatch:
		return r.awaitMatchingPin(s, "not written: "+why.condition)
	}
	return r.awaitApproval(s, advisorv1alpha1.ReasonAwaitingApproval,
		fmt.Sprintf("MachineConfigPool %s was not paused (%s): review status.rollouts", pool, why.condition))
}

// startRollouts notes when each pool of the batch started rolling it out: once it is no
// longer paused. It returns the pools still paused, and what the batch waits for there.
func (r *VirtPlatformConfigReconciler) startRollouts(ctx context.Context, s *scope) (map[string]bool, []string, error) {
	st := &s.vpc.Status
	var waitingFor []string
	paused := map[string]bool{}
	for k := range st.Rollouts {
		ro := &st.Rollouts[k]
		if len(ro.Items) == 0 || ro.RolloutStartedAt != nil {
			continue
		}
		pool, err := targets.GetPool(ctx, r.APIReader, ro.Pool)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		// A pool that does not exist holds nothing back: the items' health check fails
		// them, naming the missing pool.
		if pool != nil && targets.PoolPaused(pool) {
			paused[ro.Pool] = true
			who := "somebody else"
			if holders := targets.PausedBy(pool); len(holders) > 0 {
				who = "the batch of " + strings.Join(holders, ", ")
			}
			waitingFor = append(waitingFor, fmt.Sprintf("MachineConfigPool %s is paused by %s: the rollout starts when it is resumed", ro.Pool, who))
			continue
		}
		t := s.now
		ro.RolloutStartedAt = &t
		r.vmRolloutStarted(ctx, s, ro)
	}
	return paused, waitingFor, nil
}

// checkBatch judges the batch's rollouts once every item is applied and the pools are
// resumed: the items complete together when every pool runs a configuration that holds
// all of them. The wait of a pool paused by somebody else starts when they resume it.
func (r *VirtPlatformConfigReconciler) checkBatch(ctx context.Context, s *scope, items []int) (outcome, error) {
	st := &s.vpc.Status
	paused, waitingFor, err := r.startRollouts(ctx, s)
	if err != nil {
		return outcome{}, err
	}
	var timeout time.Duration
	if s.vpc.Spec.WaitTimeout != nil {
		timeout = s.vpc.Spec.WaitTimeout.Duration
	}
	healthy := map[int]string{}
	var failed []int
	failures := map[int]string{}
	for _, i := range items {
		it := st.Items[i]
		if it.State != advisorv1alpha1.ItemInProgress {
			continue
		}
		pools := plan.PoolsOf(st, it.Name)
		if slices.ContainsFunc(pools, func(p string) bool { return paused[p] }) {
			s.ledger().SetMessage(i, strings.Join(waitingFor, "; "))
			continue
		}
		since := plan.RolloutStart(st, pools, s.now)
		if it.WaitingSince == nil || it.WaitingSince.Before(&since) {
			s.ledger().SetWaiting(i, &since)
			it = st.Items[i]
		}
		h, err := r.Engine.CheckHealth(ctx, it, it.WaitingSince.Time, timeout, s.now.Time)
		if err != nil {
			return outcome{}, err
		}
		switch h.State {
		case plan.Healthy:
			healthy[i] = h.Message
		case plan.Unhealthy:
			failed = append(failed, i)
			failures[i] = h.Message
		default:
			s.ledger().SetMessage(i, h.Message)
		}
	}
	if len(failed) > 0 {
		// The config names the first failed item that changed something: a degraded pool
		// fails every item of the batch, and the one the plan changed says why it rolled out.
		slices.SortStableFunc(failed, func(a, b int) int {
			return boolOrder(st.Items[a].Change == advisorv1alpha1.ChangeNone) - boolOrder(st.Items[b].Change == advisorv1alpha1.ChangeNone)
		})
		for _, i := range failed[1:] {
			it := st.Items[i]
			s.ledger().SetState(i, advisorv1alpha1.ItemFailed, failures[i])
			s.noteItem(it.Name, corev1.EventTypeWarning, advisorv1alpha1.EventItemFailed, "item %s failed: %s", it.Name, failures[i])
		}
		metrics.ItemSettled(s.now.Sub(st.Items[failed[0]].WaitingSince.Time).Seconds())
		return r.failItem(s, failed[0], failures[failed[0]]), nil
	}
	inProgress := 0
	for _, i := range items {
		if st.Items[i].State == advisorv1alpha1.ItemInProgress {
			inProgress++
		}
	}
	if inProgress > 0 && len(healthy) == inProgress {
		for _, i := range items {
			if msg, ok := healthy[i]; ok {
				metrics.ItemSettled(s.now.Sub(st.Items[i].WaitingSince.Time).Seconds())
				s.ledger().SetState(i, advisorv1alpha1.ItemCompleted, msg)
			}
		}
		r.recordVMActuals(ctx, s)
		plan.MeasureRollouts(st, s.now)
		return goOn(executeHandler), nil
	}
	r.watchDrains(ctx, s)
	wait := r.pollInterval()
	if timeout > 0 {
		for _, i := range items {
			it := st.Items[i]
			if it.State == advisorv1alpha1.ItemInProgress && it.WaitingSince != nil {
				if left := it.WaitingSince.Add(timeout).Sub(s.now.Time); left < wait {
					wait = max(left, time.Millisecond)
				}
			}
		}
	}
	return waitFor(wait), nil
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}
