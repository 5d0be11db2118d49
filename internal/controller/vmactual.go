package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

// This file records what a pool's rollout did to the VMs, beside what was forecast
// (status.rollouts[].vmsActual): the live migrations, counted from the
// VirtualMachineInstanceMigrations KubeVirt's evacuation created for the pool's nodes
// during the rollout; the VMs shut down, from the instances running when the rollout
// started; and the VMs seen blocking a drain while it ran. Nothing is written but the
// config's status and Events.

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list

// evacuationAnnotation is the annotation KubeVirt's evacuation controller sets on the
// migrations it creates for a drained node, with the node's name
// (pkg/virt-controller/watch/drain/evacuation).
const evacuationAnnotation = "kubevirt.io/evacuationMigration"

// virtualMachineInstanceMigrationList is the kind the migrations are counted from.
var virtualMachineInstanceMigrationList = targets.VirtualMachineInstance.GVK.GroupVersion().WithKind("VirtualMachineInstanceMigrationList")

// vmRollouts is what the operator saw of the VMs while a pool's rollout ran, by config,
// pool and start. It is kept in memory: after a restart of the operator during a rollout,
// the migrations are still counted from the cluster, and the restarts and blocked drains
// are recorded as unknown.
type vmRollouts struct {
	mu    sync.Mutex
	byKey map[string]*vmRollout
}

type vmRollout struct {
	// vms are the VMs running on the pool's nodes when the rollout started, with what
	// the forecast said the rollout does to each.
	vms map[string]vmAtStart
	// blocking are the VMs seen blocking the drain of a node.
	blocking map[string]bool
	// checked is when the drains were last looked at (watchDrains).
	checked time.Time
	// before are the VirtualMachineInstanceMigrations that existed when the rollout
	// started (nil: they could not be listed).
	before map[types.UID]bool
}

type vmAtStart struct {
	uid        types.UID
	migrations int
}

func vmRolloutKey(config string, ro *advisorv1alpha1.PoolRollout) string {
	return fmt.Sprintf("%s/%s/%d", config, ro.Pool, ro.RolloutStartedAt.Unix())
}

func (v *vmRollouts) get(key string) *vmRollout {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.byKey[key]
}

func (v *vmRollouts) put(key string, r *vmRollout) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byKey == nil {
		v.byKey = map[string]*vmRollout{}
	}
	v.byKey[key] = r
}

// forget drops what was seen of a rollout.
func (v *vmRollouts) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.byKey, key)
}

// knowsVMs tells whether the rollout's VM forecast was made from the VMs themselves.
func knowsVMs(ro *advisorv1alpha1.PoolRollout) bool {
	return ro.VMs != nil && ro.VMs.UnknownReason == "" && len(ro.Items) > 0 && ro.RolloutStartedAt != nil
}

// vmRolloutStarted notes the VMs running on the pool's nodes as its rollout starts, and
// what the forecast says the rollout does to each of them.
func (r *VirtPlatformConfigReconciler) vmRolloutStarted(ctx context.Context, s *scope, ro *advisorv1alpha1.PoolRollout) {
	ro.VMsActual = nil
	if !knowsVMs(ro) {
		return
	}
	seen := &vmRollout{vms: map[string]vmAtStart{}, blocking: map[string]bool{}}
	r.vmRollouts.put(vmRolloutKey(s.vpc.Name, ro), seen)
	if list, err := r.listMigrations(ctx); err == nil {
		seen.before = map[types.UID]bool{}
		for _, m := range list {
			seen.before[m.GetUID()] = true
		}
	}
	vmis, err := r.watches.VMIs(ctx, r.APIReader)
	if err != nil {
		logf.FromContext(ctx).Info("cannot note the VMs of a pool as its rollout starts", "pool", ro.Pool, "reason", err.Error())
		return
	}
	_, forecasts, err := targets.PoolVMForecasts(ctx, r.APIReader, ro.Pool, ro.MaxUnavailable, vmis)
	if err != nil {
		logf.FromContext(ctx).Info("cannot note the VMs of a pool as its rollout starts", "pool", ro.Pool, "reason", err.Error())
		return
	}
	uids := vmiUIDs(vmis)
	for _, f := range forecasts {
		seen.vms[f.VM.Key()] = vmAtStart{uid: uids[f.VM.Key()], migrations: f.Migrations}
	}
}

// watchDrains looks, while the batch's rollouts run and at most once per poll, for VMs that
// block the drain of a node still to be updated: each gets a Warning Event the first time it is seen, and is
// counted in what the rollout did.
func (r *VirtPlatformConfigReconciler) watchDrains(ctx context.Context, s *scope) {
	var vmis []*vmforecast.Instance
	for k := range s.vpc.Status.Rollouts {
		ro := &s.vpc.Status.Rollouts[k]
		if !knowsVMs(ro) || ro.VMsActual != nil {
			continue
		}
		seen := r.vmRollouts.get(vmRolloutKey(s.vpc.Name, ro))
		if seen == nil || s.now.Sub(seen.checked) < r.pollInterval() {
			// VMIs change often while nodes drain: the drains are looked at once per poll.
			continue
		}
		seen.checked = s.now.Time
		if vmis == nil {
			var err error
			if vmis, err = r.watches.VMIs(ctx, r.APIReader); err != nil {
				return
			}
		}
		pending, err := targets.PendingNodes(ctx, r.APIReader, ro.Pool)
		if err != nil || len(pending) == 0 {
			continue
		}
		_, forecasts, err := targets.PoolVMForecasts(ctx, r.APIReader, ro.Pool, ro.MaxUnavailable, vmis)
		if err != nil {
			continue
		}
		for _, f := range forecasts {
			if f.Decision.Outcome != vmforecast.BlocksDrain || !pending[f.VM.Node] || seen.blocking[f.VM.Key()] {
				continue
			}
			seen.blocking[f.VM.Key()] = true
			s.note(corev1.EventTypeWarning, advisorv1alpha1.EventVMDrainBlocked,
				"MachineConfigPool %s: VM %s blocks the drain of node %s (%s); the node stays cordoned until it is live-migrated, "+
					"stopped (runStrategy: Halted) or given an eviction strategy that lets the drain evict it",
				ro.Pool, f.VM.Key(), f.VM.Node, f.Decision.Reason)
		}
	}
}

// recordVMActuals records, for each pool whose rollout of the batch finished, what it did
// to the VMs beside what was forecast, with an Event that says whether they match.
func (r *VirtPlatformConfigReconciler) recordVMActuals(ctx context.Context, s *scope) {
	var vmis []*vmforecast.Instance
	var vmisErr error
	for k := range s.vpc.Status.Rollouts {
		ro := &s.vpc.Status.Rollouts[k]
		if !knowsVMs(ro) || ro.VMsActual != nil {
			continue
		}
		key := vmRolloutKey(s.vpc.Name, ro)
		seen := r.vmRollouts.get(key)
		if seen != nil && vmis == nil && vmisErr == nil {
			vmis, vmisErr = r.watches.VMIs(ctx, r.APIReader)
		}
		if vmisErr != nil {
			seen = nil
		}
		actual, err := r.vmActual(ctx, s, ro, seen, vmis)
		if err != nil {
			actual = &advisorv1alpha1.VMActual{UnknownReason: err.Error()}
		}
		ro.VMsActual = actual
		r.vmRollouts.forget(key)
		switch {
		case actual.UnknownReason != "":
			s.note(corev1.EventTypeWarning, advisorv1alpha1.EventVMsNotAsForecast,
				"MachineConfigPool %s: what the rollout did to the VMs is unknown: %s", ro.Pool, actual.UnknownReason)
		case actual.AsForecast:
			s.note(corev1.EventTypeNormal, advisorv1alpha1.EventVMsAsForecast, "MachineConfigPool %s: %s", ro.Pool, actual.Summary)
		default:
			msg := actual.Summary
			if actual.MovedMore != nil {
				msg += "; moved more often than forecast: " + joinNames(actual.MovedMore)
			}
			if actual.Blocking != nil {
				msg += "; blocked a drain: " + joinNames(actual.Blocking)
			}
			s.note(corev1.EventTypeWarning, advisorv1alpha1.EventVMsNotAsForecast, "MachineConfigPool %s: %s", ro.Pool, msg)
		}
	}
}

// vmActual counts what the pool's rollout did to the VMs. seen is what the operator saw
// as it ran (nil: it did not see the rollout start), vmis the instances now.
func (r *VirtPlatformConfigReconciler) vmActual(ctx context.Context, s *scope, ro *advisorv1alpha1.PoolRollout, seen *vmRollout,
	vmis []*vmforecast.Instance) (*advisorv1alpha1.VMActual, error) {
	order, _, err := targets.PoolNodes(ctx, r.APIReader, ro.Pool)
	if err != nil {
		return nil, err
	}
	var before map[types.UID]bool
	if seen != nil {
		before = seen.before
	}
	migrations, err := r.rolloutMigrations(ctx, ro.RolloutStartedAt.Time, before, order)
	if err != nil {
		return nil, err
	}
	started := ro.RolloutStartedAt.Time
	out := &advisorv1alpha1.VMActual{Duration: &metav1.Duration{Duration: s.now.Sub(started).Truncate(time.Second)}}
	// What each VM was forecast to do: as noted at the start, else as the forecast's rule
	// says from the node it was first evacuated from.
	expected := func(vm string, first string) int {
		if seen != nil {
			if at, ok := seen.vms[vm]; ok {
				return at.migrations
			}
			return 0
		}
		limit := targets.MaxUnavailableNodes(ro.MaxUnavailable, len(order))
		if len(order) > limit && slices.Contains(order[:limit], first) {
			return 2
		}
		return 1
	}
	var movedMore []string
	for vm, m := range migrations {
		out.Migrations += int32(len(m))
		out.MigratedVMs++
		out.MaxPerVM = max(out.MaxPerVM, int32(len(m)))
		if len(m) > expected(vm, m[0]) {
			movedMore = append(movedMore, vm)
		}
	}
	out.MovedMore = statusNames(movedMore)
	if seen != nil {
		uids := vmiUIDs(vmis)
		restarts := int32(0)
		for vm, at := range seen.vms {
			if uid, running := uids[vm]; !running || uid != at.uid {
				restarts++
			}
		}
		out.Restarts = &restarts
		out.Blocked = int32(len(seen.blocking))
		out.Blocking = statusNames(slices.Collect(maps.Keys(seen.blocking)))
	}
	f := ro.VMs
	out.AsForecast = out.Migrations == f.Migrations && out.MovedMore == nil && out.Blocked == 0 &&
		(out.Restarts == nil || *out.Restarts == f.Restart)
	restarts := "unknown"
	if out.Restarts != nil {
		restarts = fmt.Sprint(*out.Restarts)
	}
	out.Summary = fmt.Sprintf("forecast %d migration(s), %d restart(s); actual %d migration(s) of %d VM(s) (at most %d per VM), %s restart(s), %d blocked drain(s), in %s",
		f.Migrations, f.Restart, out.Migrations, out.MigratedVMs, out.MaxPerVM, restarts, out.Blocked, out.Duration.Duration)
	return out, nil
}

// rolloutMigrations are the live migrations of the rollout by VM (namespace/name): the
// nodes of the VirtualMachineInstanceMigrations KubeVirt's evacuation created for one of
// the pool's nodes during the rollout, oldest first. Those of the rollout are those that
// did not exist when it started (before); without that list, those created since it
// started by the operator's clock.
func (r *VirtPlatformConfigReconciler) rolloutMigrations(ctx context.Context, started time.Time, before map[types.UID]bool,
	nodes []string) (map[string][]string, error) {
	items, err := r.listMigrations(ctx)
	if err != nil {
		return nil, err
	}
	inPool := map[string]bool{}
	for _, n := range nodes {
		inPool[n] = true
	}
	since := started.Truncate(time.Second)
	slices.SortStableFunc(items, func(a, b unstructured.Unstructured) int {
		return a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time)
	})
	out := map[string][]string{}
	for _, m := range items {
		node := m.GetAnnotations()[evacuationAnnotation]
		switch {
		case !inPool[node]:
			continue
		case before != nil && before[m.GetUID()]:
			continue
		case before == nil && m.GetCreationTimestamp().Time.Before(since):
			continue
		}
		vmi, _, _ := unstructured.NestedString(m.Object, "spec", "vmiName")
		key := m.GetNamespace() + "/" + vmi
		out[key] = append(out[key], node)
	}
	return out, nil
}

// listMigrations lists the VirtualMachineInstanceMigrations of every namespace.
func (r *VirtPlatformConfigReconciler) listMigrations(ctx context.Context) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(virtualMachineInstanceMigrationList)
	if err := r.APIReader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the cluster serves no VirtualMachineInstanceMigrations")
		}
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("VirtualMachineInstanceMigrations are not readable: %w", err)
		}
		return nil, fmt.Errorf("list VirtualMachineInstanceMigrations: %w", err)
	}
	return list.Items, nil
}

// vmiUIDs are the UIDs of the running instances by namespace/name.
func vmiUIDs(vmis []*vmforecast.Instance) map[string]types.UID {
	out := make(map[string]types.UID, len(vmis))
	for _, vmi := range vmis {
		if vmi.Phase == "Running" {
			out[vmi.Key()] = vmi.UID
		}
	}
	return out
}

func statusNames(names []string) *advisorv1alpha1.VMNames {
	return vmNames(vmforecast.BoundedNames(names))
}

func joinNames(n *advisorv1alpha1.VMNames) string {
	s := strings.Join(n.Names, ", ")
	if n.More > 0 {
		s += fmt.Sprintf(" and %d more", n.More)
	}
	return s
}
