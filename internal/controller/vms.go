package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
)

// This file forecasts what draining a pool's nodes does to the VMs on them, per pool of
// status.rollouts whose rollout drains nodes. VMs move all the time: the VM forecast is
// refreshed while the plan waits for review, and is no part of the plan's hash, so a VM
// that moves never invalidates an approval nor redrafts a plan. A cluster without
// KubeVirt, or whose VMs the operator cannot read, gets a forecast that says so and why;
// the plan goes on.

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=get;list

// drainedPool is a pool whose rollout drains its nodes.
type drainedPool struct {
	pool, maxUnavailable string
}

// forecastVMs forecasts, for each pool, what draining its nodes does to the VMs on them.
// A forecast that cannot be made says why, and so does one made after an error when
// keep is false; with keep, a pool whose forecast failed for a passing reason is left out
// (it keeps the one it has).
func (r *VirtPlatformConfigReconciler) forecastVMs(ctx context.Context, pools []drainedPool, keep bool) map[string]*advisorv1alpha1.VMForecast {
	if len(pools) == 0 {
		return nil
	}
	out := make(map[string]*advisorv1alpha1.VMForecast, len(pools))
	vmis, listErr := r.watches.VMIs(ctx, r.APIReader)
	for _, p := range pools {
		err := listErr
		if err == nil {
			f, poolErr := targets.PoolVMs(ctx, r.APIReader, p.pool, p.maxUnavailable, vmis)
			if poolErr == nil {
				out[p.pool] = vmForecastStatus(f)
				continue
			}
			err = poolErr
		}
		if unknown, ok := errors.AsType[*watches.VMsUnknownError](err); ok {
			out[p.pool] = vmsUnknown(unknown.Reason)
			if unknown.NotInstalled {
				// No KubeVirt, no VMs: the status says why they are unknown, the one-line
				// disruption has nothing to add.
				out[p.pool].Summary = ""
			}
			continue
		}
		logf.FromContext(ctx).Info("cannot forecast the VMs of a pool", "pool", p.pool, "reason", err.Error())
		if !keep {
			out[p.pool] = vmsUnknown("the VMs could not be read: " + err.Error())
		}
	}
	return out
}

// refreshVMs forecasts the VMs of the pools whose rollout has a VM forecast and has not
// started, as they run now.
func (r *VirtPlatformConfigReconciler) refreshVMs(ctx context.Context, s *scope) {
	var pools []drainedPool
	for _, ro := range s.vpc.Status.Rollouts {
		if ro.VMs != nil && ro.RolloutStartedAt == nil {
			pools = append(pools, drainedPool{pool: ro.Pool, maxUnavailable: ro.MaxUnavailable})
		}
	}
	vms := r.forecastVMs(ctx, pools, true)
	if len(vms) == 0 {
		return
	}
	before := s.vpc.Status.Disruption
	s.ledger().SetVMs(vms)
	after := s.vpc.Status.Disruption
	if after == before || s.phaseSet {
		return
	}
	if reason, message := s.before.Status.ShownReason(); strings.Contains(message, disruptionClause(before)) {
		// The message that asks for the approval says what approving does: as it is now.
		s.setPhase(s.vpc.Status.Phase, reason, strings.Replace(message, disruptionClause(before), disruptionClause(after), 1))
	}
}

// blockedDrains forecasts the VMs again and says which of them would block the drain of
// a pool the batch has yet to roll out in, and what unblocks them; "" when none would.
// A drain a VM blocks keeps its node cordoned and stalls the pool's rollout until someone
// acts: the batch does not start, nor are its pools resumed, while one would.
func (r *VirtPlatformConfigReconciler) blockedDrains(ctx context.Context, s *scope) string {
	r.refreshVMs(ctx, s)
	var parts []string
	for _, ro := range s.vpc.Status.Rollouts {
		if len(ro.Items) == 0 || ro.RolloutStartedAt != nil || ro.VMs == nil || ro.VMs.Block == 0 || ro.VMs.Blocking == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("MachineConfigPool %s: %s", ro.Pool, joinNames(ro.VMs.Blocking)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "the items that roll out to nodes wait: VMs would block the drain of their nodes (" + strings.Join(parts, "; ") +
		"). Live-migrate each to a node outside the pool, stop it (runStrategy: Halted), or give it an eviction strategy " +
		"that lets the drain evict it (LiveMigrateIfPossible or None); the batch goes on by itself once none blocks"
}

// disruptionClause is how a message that asks for an approval says what approving does
// to nodes and VMs (see review).
func disruptionClause(disruption string) string {
	return "approving it " + disruption + " (status.rollouts)"
}

func vmsUnknown(reason string) *advisorv1alpha1.VMForecast {
	return &advisorv1alpha1.VMForecast{UnknownReason: reason, Summary: "VMs unknown: " + reason}
}

// vmForecastStatus is a pool's VM forecast as status shows it.
func vmForecastStatus(f vmforecast.PoolForecast) *advisorv1alpha1.VMForecast {
	out := &advisorv1alpha1.VMForecast{
		LiveMigrate: int32(f.Migrate), Restart: int32(f.Restart), StayStopped: int32(f.StaysStopped), Block: int32(f.Block),
		Migrations: int32(f.Migrations), Summary: vmforecast.Summary(f),
		Restarting: vmNames(f.Restarting), Blocking: vmNames(f.Blocking), MayExceed: vmNames(f.MayExceed),
	}
	if f.MemoryBytes > 0 {
		out.MemoryToMigrate = resource.NewQuantity(f.MemoryBytes, resource.BinarySI)
	}
	return out
}

func vmNames(l vmforecast.NameList) *advisorv1alpha1.VMNames {
	if l.Len() == 0 {
		return nil
	}
	return &advisorv1alpha1.VMNames{Names: l.Names, More: int32(l.More)}
}
