// This file holds the rules of an execution's batch: the order an execution takes a
// plan's items in, and the pools the batch pauses, rolls out in and measures.
//
// An execution runs in three stages, so that every node reboots at most once per
// approval:
//
//  1. the items before the first item that rolls out to nodes (a MachineConfig or a
//     KubeletConfig), in plan order;
//  2. the batch: every item that rolls out, in plan order, applied while the pools they
//     roll out in are paused; the pools are then resumed, and the batch's items complete
//     together once every pool runs a configuration that holds all of them;
//  3. the other items, in plan order: they come after a rollout in the plan because they
//     depend on it (the descheduler's PSI mode needs the PSI kernel argument on the nodes).
//
// The gates (a maintenance window, a cluster upgrade, a pool busy with another change)
// hold stage 2 before it starts; stage 1 is never held.
package plan

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// ExecutionOrder is the order the execution takes the items in (see above).
func ExecutionOrder(items []v1alpha1.PlanItem) []int {
	first := slices.IndexFunc(items, RollsOut)
	if first < 0 {
		order := make([]int, len(items))
		for i := range order {
			order[i] = i
		}
		return order
	}
	order := make([]int, 0, len(items))
	for i := range first {
		order = append(order, i)
	}
	for i := first; i < len(items); i++ {
		if RollsOut(items[i]) {
			order = append(order, i)
		}
	}
	for i := first; i < len(items); i++ {
		if !RollsOut(items[i]) {
			order = append(order, i)
		}
	}
	return order
}

// BatchItems are the indexes of the items of the batch, in plan order.
func BatchItems(st *v1alpha1.VirtPlatformConfigStatus) []int {
	var out []int
	for i, it := range st.Items {
		if RollsOut(it) {
			out = append(out, i)
		}
	}
	return out
}

// statusHash is the hash of the plan in status, the pools it pauses included.
func statusHash(st *v1alpha1.VirtPlatformConfigStatus) string {
	return PlanHash(st.PlanRevision, st.Items, PausedPools(st.Rollouts)...)
}

func PausedPools(rollouts []v1alpha1.PoolRollout) []string {
	var out []string
	for _, ro := range rollouts {
		if ro.Pause {
			out = append(out, ro.Pool)
		}
	}
	return out
}

// HoldsPause tells whether the batch holds (or is about to take or give back) a pool's pause.
func HoldsPause(ro v1alpha1.PoolRollout) bool {
	switch ro.PauseState {
	case v1alpha1.PausePausing, v1alpha1.PausePaused, v1alpha1.PauseResuming:
		return true
	}
	return false
}

// PoolsOf are the pools the forecast says the item rolls out in.
func PoolsOf(st *v1alpha1.VirtPlatformConfigStatus, item string) []string {
	var out []string
	for _, ro := range st.Rollouts {
		if slices.Contains(ro.Items, item) {
			out = append(out, ro.Pool)
		}
	}
	return out
}

// RolloutStart is when the last of pools started rolling the batch out (now when none is
// known).
func RolloutStart(st *v1alpha1.VirtPlatformConfigStatus, pools []string, now metav1.Time) metav1.Time {
	var start *metav1.Time
	for _, ro := range st.Rollouts {
		if slices.Contains(pools, ro.Pool) && ro.RolloutStartedAt != nil && (start == nil || start.Before(ro.RolloutStartedAt)) {
			start = ro.RolloutStartedAt
		}
	}
	if start == nil {
		return now
	}
	return *start
}

// MeasureRollouts records the time a node took in each finished rollout (the rollout's
// time over its waves: the nodes of a wave update side by side), for the estimates of
// later plans.
func MeasureRollouts(st *v1alpha1.VirtPlatformConfigStatus, now metav1.Time) {
	for k := range st.Rollouts {
		ro := &st.Rollouts[k]
		if ro.RolloutStartedAt == nil || ro.Waves == 0 || len(ro.Items) == 0 {
			continue
		}
		ro.SecondsPerNode = max(int64(now.Sub(ro.RolloutStartedAt.Time).Seconds())/int64(ro.Waves), 1)
	}
}

// WaitsToRollOut tells whether a plan has items not applied yet that roll out in pool.
func WaitsToRollOut(st *v1alpha1.VirtPlatformConfigStatus, pool string) bool {
	for _, ro := range st.Rollouts {
		if ro.Pool != pool || !ro.Pause {
			continue
		}
		for _, it := range st.Items {
			if slices.Contains(ro.Items, it.Name) && it.State == v1alpha1.ItemPending {
				return true
			}
		}
	}
	return false
}

// Disruption sums up the rollouts, e.g. "reboots 6 worker nodes once, in 6 waves".
func Disruption(rollouts []v1alpha1.PoolRollout) string {
	var parts []string
	for _, ro := range rollouts {
		if len(ro.Items) == 0 {
			continue
		}
		what := "updates"
		if ro.Reboot {
			what = "reboots"
		}
		part := fmt.Sprintf("%s %d %s node(s) once, in %d wave(s)", what, ro.Nodes, ro.Pool, ro.Waves)
		if ro.VMs != nil && ro.VMs.Summary != "" {
			part += "; " + ro.VMs.Summary
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// NextItem is the first item of st, in execution order, the execution has yet to finish
// (-1: none); an execution of drift corrections (approval.correctionsOnly) passes over the
// items that propose something new.
func NextItem(st *v1alpha1.VirtPlatformConfigStatus) int {
	correctionsOnly := st.Approval != nil && st.Approval.CorrectionsOnly
	for _, j := range ExecutionOrder(st.Items) {
		it := st.Items[j]
		if correctionsOnly && it.State == v1alpha1.ItemPending && !IsCorrection(it) {
			continue
		}
		if it.State == v1alpha1.ItemPending || it.State == v1alpha1.ItemInProgress {
			return j
		}
	}
	return -1
}

// ExecutionBatch are the items of the batch the execution under way runs, in plan order:
// an execution of drift corrections (approval.correctionsOnly) passes over the pending
// items that propose something new, as NextItem does, so its batch, pause and forecast are
// those of the corrections alone.
func ExecutionBatch(st *v1alpha1.VirtPlatformConfigStatus) []int {
	correctionsOnly := st.Approval != nil && st.Approval.CorrectionsOnly
	var out []int
	for _, i := range BatchItems(st) {
		if it := st.Items[i]; correctionsOnly && it.State == v1alpha1.ItemPending && !IsCorrection(it) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// IsCorrection tells whether a Pending item re-applies what it applied before (a drift
// correction) rather than proposing something new (an upgrade).
func IsCorrection(it v1alpha1.PlanItem) bool {
	return it.Applied != nil && it.Applied.DesiredHash == ItemDesiredHash(it)
}

// ItemDesiredHash is the hash of what an item desires, as its applied record keeps it.
func ItemDesiredHash(it v1alpha1.PlanItem) string {
	return DesiredHash([]v1alpha1.PlanItem{{Name: it.Name, DesiredState: it.DesiredState}})
}
