package targets

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file forecasts the disruption a change of MachineConfigs and KubeletConfigs brings
// to a MachineConfigPool before it is approved: how many nodes, how many at a time, whether
// they reboot or are drained, and why. The rules follow the Machine Config Daemon
// (calculatePostConfigChangeAction and calculatePostConfigChangeNodeDisruptionAction in
// pkg/daemon/update.go of openshift/machine-config-operator) and the node controller's
// maxUnavailable (pkg/controller/node/node_controller.go).

// PoolForecast is the disruption a set of changes brings to one MachineConfigPool.
type PoolForecast struct {
	// Pool is the pool's name.
	Pool string
	// Nodes is the pool's status.machineCount.
	Nodes int32
	// MaxUnavailable is the pool's spec.maxUnavailable as written ("1" when unset).
	MaxUnavailable string
	// Waves is how many rounds of at most maxUnavailable nodes the rollout takes; 0 when
	// nothing changes on the nodes.
	Waves int32
	// Reboot tells whether the nodes reboot; Drain whether they are drained (their
	// workloads, VMs included, moved away) first.
	Reboot bool
	Drain  bool
	// Reasons say, one short line per change, what changes and what it takes.
	Reasons []string
}

// ForecastPool forecasts what changes (one per item that rolls out to the pool) bring to
// pool under policy (nil: the cluster has no node disruption policy; the daemon's own
// rules apply).
func ForecastPool(pool *unstructured.Unstructured, changes []NodeChange, policy *DisruptionPolicy) PoolForecast {
	nodes, _, _ := unstructured.NestedInt64(pool.Object, "status", "machineCount")
	f := PoolForecast{Pool: pool.GetName(), Nodes: int32(nodes), MaxUnavailable: "1"}
	value := intstr.FromInt32(1)
	if raw, found, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "maxUnavailable"); found {
		switch v := raw.(type) {
		case int64:
			value = intstr.FromInt(int(v))
		case string:
			value = intstr.FromString(v)
		}
		f.MaxUnavailable = value.String()
	}
	limit, err := intstr.GetScaledValueFromIntOrPercent(&value, int(nodes), false)
	if err != nil {
		limit = 1
	}
	limit = max(limit, 1)

	changed := false
	for _, c := range changes {
		if c.IsEmpty() {
			continue
		}
		changed = true
		for _, e := range effectsOf(c, policy) {
			f.Reboot = f.Reboot || e.reboot
			f.Drain = f.Drain || e.drain
			if !slices.Contains(f.Reasons, e.reason) {
				f.Reasons = append(f.Reasons, e.reason)
			}
		}
	}
	if changed && nodes > 0 {
		f.Waves = int32((int(nodes) + limit - 1) / limit)
	}
	return f
}

// effect is what one part of a change takes on a node.
type effect struct {
	reason        string
	reboot, drain bool
}

func effectsOf(c NodeChange, policy *DisruptionPolicy) []effect {
	var out []effect
	always := func(changes bool, reason string) {
		if changes {
			out = append(out, effect{reason: reason, reboot: true, drain: true})
		}
	}
	always(len(c.KernelArgumentsAdded)+len(c.KernelArgumentsRemoved) > 0, "kernel arguments change")
	always(len(c.ExtensionsAdded)+len(c.ExtensionsRemoved) > 0, "extensions change")
	always(c.KernelType, "kernel type changes")
	always(c.FIPS, "FIPS mode changes")
	always(c.OSImage, "OS image changes")
	for _, path := range c.Files {
		if policy != nil {
			out = append(out, policyEffect("file "+path, filePolicy(policy, path)))
		} else {
			out = append(out, fileEffect(path))
		}
	}
	for _, name := range c.Units {
		if policy != nil {
			out = append(out, policyEffect("systemd unit "+name, unitPolicy(policy, name)))
		} else {
			// Without a policy the daemon reboots for any change of a unit.
			out = append(out, effect{reason: "systemd unit " + name + " changes (reboot)", reboot: true, drain: true})
		}
	}
	return out
}

// policyEffect is what a change of what, whose policy has actions, takes: a change that no
// policy covers reboots; Reboot and Drain drain, and so may Special (the registries.conf
// handling drains for changes it cannot apply safely).
func policyEffect(what string, actions []DisruptionAction) effect {
	if len(actions) == 0 {
		return effect{reason: what + " changes (no policy: Reboot)", reboot: true, drain: true}
	}
	e := effect{}
	names := make([]string, 0, len(actions))
	for _, a := range actions {
		switch a.Type {
		case ActionReboot:
			e.reboot, e.drain = true, true
		case ActionDrain, ActionSpecial:
			e.drain = true
		}
		name := a.Type
		if a.Service != "" {
			name += " " + a.Service
		}
		names = append(names, name)
	}
	e.reason = what + " changes (policy: " + strings.Join(names, ", ") + ")"
	return e
}

// The files the daemon applies without a reboot when the cluster has no node disruption
// policy (calculatePostConfigChangeActionFromMCDiffs in pkg/daemon/update.go): nothing to
// do, a CRI-O reload, or a CRI-O restart. A change of registries.conf drains the node when
// it is not one of the changes the daemon knows to be safe.
var (
	filesWithoutAction = []string{
		"/etc/kubernetes/kubelet-ca.crt",
		"/var/lib/kubelet/config.json",
	}
	directoriesWithoutAction = []string{"/etc/nmstate/openshift"}
	filesReloadingCRIO       = []string{
		"/etc/containers/registries.conf",
		"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
		"/etc/containers/policy.json",
	}
	directoriesReloadingCRIO = []string{"/etc/containers/registries.d"}
	filesRestartingCRIO      = []string{"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"}
)

// registriesConf is the file whose change may drain a node without a reboot.
const registriesConf = "/etc/containers/registries.conf"

func fileEffect(path string) effect {
	dir := filepath.Dir(path)
	what := "file " + path + " changes "
	switch {
	case slices.Contains(filesWithoutAction, path), slices.Contains(directoriesWithoutAction, dir):
		return effect{reason: what + "(applied without a reboot)"}
	case path == registriesConf:
		return effect{reason: what + "(CRI-O reload, may drain)", drain: true}
	case slices.Contains(filesReloadingCRIO, path), slices.Contains(directoriesReloadingCRIO, dir):
		return effect{reason: what + "(CRI-O reload)"}
	case slices.Contains(filesRestartingCRIO, path):
		return effect{reason: what + "(CRI-O restart)"}
	}
	return effect{reason: what + "(reboot)", reboot: true, drain: true}
}

// MastersSchedulable tells whether the control plane nodes run workloads (VMs included), so
// that a rollout to the master pool drains them too: spec.mastersSchedulable of the
// Scheduler cluster, which the installer sets on a compact cluster (three nodes that are
// control plane and workers at once). False when the cluster serves no Scheduler or has
// no object cluster.
func MastersSchedulable(ctx context.Context, reader client.Reader) (bool, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(Scheduler.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: "cluster"}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("read Scheduler cluster: %w", err)
	}
	schedulable, _, _ := unstructured.NestedBool(obj.Object, "spec", "mastersSchedulable")
	return schedulable, nil
}

// PlannedChange is what one plan item does to a MachineConfig or KubeletConfig: apply
// Desired, or delete it (Deleted).
type PlannedChange struct {
	Item    string
	Desired *unstructured.Unstructured
	Deleted bool
}

// ItemsForecast is the forecast of one pool, with the items that change its nodes.
type ItemsForecast struct {
	PoolForecast
	Items []string
}

// Forecast reads the pools, the node disruption policy and each changed object, and
// forecasts, for every pool that renders from a changed object, what the changes bring to
// its nodes. Changes that change nothing on the nodes are left out; so are pools no change
// reaches. The forecasts are in the order of the pools' names.
func Forecast(ctx context.Context, reader client.Reader, changes []PlannedChange) ([]ItemsForecast, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	pools, _, err := ListPools(ctx, reader)
	if err != nil {
		return nil, err
	}
	policy, err := ReadDisruptionPolicy(ctx, reader)
	if err != nil {
		return nil, err
	}
	items := make([][]string, len(pools))
	nodeChanges := make([][]NodeChange, len(pools))
	for _, c := range changes {
		change, err := nodeChange(ctx, reader, c)
		if err != nil {
			return nil, err
		}
		if change.IsEmpty() {
			continue
		}
		for i := range pools {
			if PoolRendersFrom(&pools[i], c.Desired) {
				items[i] = append(items[i], c.Item)
				nodeChanges[i] = append(nodeChanges[i], change)
			}
		}
	}
	var out []ItemsForecast
	for i := range pools {
		if len(items[i]) > 0 {
			out = append(out, ItemsForecast{PoolForecast: ForecastPool(&pools[i], nodeChanges[i], policy), Items: items[i]})
		}
	}
	slices.SortFunc(out, func(a, b ItemsForecast) int { return strings.Compare(a.Pool, b.Pool) })
	return out, nil
}

// nodeChange is what a planned change brings to the nodes, against the live object
// (absent: created).
func nodeChange(ctx context.Context, reader client.Reader, c PlannedChange) (NodeChange, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(c.Desired.GroupVersionKind())
	err := reader.Get(ctx, client.ObjectKeyFromObject(c.Desired), live)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return NodeChange{}, fmt.Errorf("read %s: %w", Describe(c.Desired), err)
	}
	if c.Deleted {
		return ChangeOfRemoval(live)
	}
	return ChangeOfObject(live, c.Desired)
}
