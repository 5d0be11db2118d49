package targets

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
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

// NodeChange is what applying an item changes on the nodes of a pool that selects it.
type NodeChange struct {
	// Files are the paths of the files added, changed or removed.
	Files []string
	// Units are the names of the systemd units added, changed or removed.
	Units []string
	// KernelArgumentsAdded and KernelArgumentsRemoved are kernel arguments, one each.
	KernelArgumentsAdded, KernelArgumentsRemoved []string
	// ExtensionsAdded and ExtensionsRemoved are RHCOS extensions.
	ExtensionsAdded, ExtensionsRemoved []string
	// OSImage, KernelType and FIPS tell whether the OS image, the kernel type or FIPS
	// mode change.
	OSImage, KernelType, FIPS bool
}

// IsEmpty tells whether the change changes nothing on the nodes.
func (c NodeChange) IsEmpty() bool {
	return len(c.Files) == 0 && len(c.Units) == 0 &&
		len(c.KernelArgumentsAdded) == 0 && len(c.KernelArgumentsRemoved) == 0 &&
		len(c.ExtensionsAdded) == 0 && len(c.ExtensionsRemoved) == 0 &&
		!c.OSImage && !c.KernelType && !c.FIPS
}

// ChangeOf is what replacing the content live with desired changes on a node (live is
// empty when the MachineConfig is created).
func ChangeOf(live, desired NodeContent) NodeChange {
	var c NodeChange
	for _, path := range sortedKeys(union(live.Files, desired.Files)) {
		before, had := live.Files[path]
		after, has := desired.Files[path]
		if had != has || !equality.Semantic.DeepEqual(before, after) {
			c.Files = append(c.Files, path)
		}
	}
	for _, name := range sortedKeys(union(live.Units, desired.Units)) {
		before, had := live.Units[name]
		after, has := desired.Units[name]
		if had != has || !equality.Semantic.DeepEqual(before, after) {
			c.Units = append(c.Units, name)
		}
	}
	c.KernelArgumentsAdded, c.KernelArgumentsRemoved = added(live.KernelArguments, desired.KernelArguments), added(desired.KernelArguments, live.KernelArguments)
	c.ExtensionsAdded, c.ExtensionsRemoved = added(live.Extensions, desired.Extensions), added(desired.Extensions, live.Extensions)
	c.OSImage = live.OSImageURL != desired.OSImageURL
	c.KernelType = canonicalKernelType(live.KernelType) != canonicalKernelType(desired.KernelType)
	c.FIPS = live.FIPS != desired.FIPS
	return c
}

// KubeletConfigChange is what a change of a KubeletConfig changes on the nodes: the kubelet
// configuration file of the MachineConfig the Machine Config Operator generates from it.
func KubeletConfigChange() NodeChange {
	return NodeChange{Files: []string{KubeletConfigFile}}
}

// ChangeOfObject is what applying desired in place of live (nil when desired is created)
// changes on the nodes, for a MachineConfig or a KubeletConfig; empty for any other kind.
func ChangeOfObject(live, desired *unstructured.Unstructured) (NodeChange, error) {
	switch desired.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		var before NodeContent
		if live != nil {
			var err error
			if before, err = ContentOf(live); err != nil {
				return NodeChange{}, err
			}
		}
		after, err := ContentOf(desired)
		if err != nil {
			return NodeChange{}, err
		}
		return ChangeOf(before, after), nil
	case KubeletConfig.GroupKind():
		if live != nil && equality.Semantic.DeepEqual(live.Object["spec"], desired.Object["spec"]) {
			return NodeChange{}, nil
		}
		return KubeletConfigChange(), nil
	}
	return NodeChange{}, nil
}

// ChangeOfRemoval is what deleting live (nil: already gone) changes on the nodes of its
// pools, for a MachineConfig or a KubeletConfig; empty for any other kind.
func ChangeOfRemoval(live *unstructured.Unstructured) (NodeChange, error) {
	if live == nil {
		return NodeChange{}, nil
	}
	switch live.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		before, err := ContentOf(live)
		if err != nil {
			return NodeChange{}, err
		}
		return ChangeOf(before, NodeContent{}), nil
	case KubeletConfig.GroupKind():
		return KubeletConfigChange(), nil
	}
	return NodeChange{}, nil
}

// DisruptionPolicy is what the cluster's node disruption policy does on a change of a file
// or a systemd unit: status.nodeDisruptionPolicyStatus.clusterPolicies of the
// MachineConfiguration cluster, the cluster's defaults merged with the administrator's.
type DisruptionPolicy struct {
	Files []FileDisruptionPolicy
	Units []UnitDisruptionPolicy
}

// FileDisruptionPolicy is the policy of a file, or of every file under a directory.
type FileDisruptionPolicy struct {
	Path    string
	Actions []DisruptionAction
}

// UnitDisruptionPolicy is the policy of a systemd unit.
type UnitDisruptionPolicy struct {
	Name    string
	Actions []DisruptionAction
}

// DisruptionAction is one action of a policy: Reboot, Drain, Reload, Restart, DaemonReload,
// None or Special (the registries.conf handling, which drains for some changes), with the
// service a Reload or Restart acts on.
type DisruptionAction struct {
	Type    string
	Service string
}

// The action types of a node disruption policy.
const (
	ActionReboot  = "Reboot"
	ActionDrain   = "Drain"
	ActionNone    = "None"
	ActionSpecial = "Special"
)

// DisruptionPolicyOf reads the node disruption policy of a MachineConfiguration; nil when
// the Machine Config Operator has not reported one.
func DisruptionPolicyOf(mc *unstructured.Unstructured) *DisruptionPolicy {
	policies, found, _ := unstructured.NestedMap(mc.Object, "status", "nodeDisruptionPolicyStatus", "clusterPolicies")
	if !found {
		return nil
	}
	p := &DisruptionPolicy{}
	files, _, _ := unstructured.NestedSlice(policies, "files")
	for _, f := range files {
		if m, ok := f.(map[string]any); ok {
			path, _ := m["path"].(string)
			p.Files = append(p.Files, FileDisruptionPolicy{Path: path, Actions: actionsOf(m)})
		}
	}
	units, _, _ := unstructured.NestedSlice(policies, "units")
	for _, u := range units {
		if m, ok := u.(map[string]any); ok {
			name, _ := m["name"].(string)
			p.Units = append(p.Units, UnitDisruptionPolicy{Name: name, Actions: actionsOf(m)})
		}
	}
	return p
}

func actionsOf(policy map[string]any) []DisruptionAction {
	list, _, _ := unstructured.NestedSlice(policy, "actions")
	var out []DisruptionAction
	for _, a := range list {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		action := DisruptionAction{}
		action.Type, _ = m["type"].(string)
		for _, key := range []string{"reload", "restart"} {
			if service, found, _ := unstructured.NestedString(m, key, "serviceName"); found {
				action.Service = service
			}
		}
		out = append(out, action)
	}
	return out
}

// ReadDisruptionPolicy reads the node disruption policy of the MachineConfiguration cluster;
// nil when the cluster serves no MachineConfiguration, has no object cluster, or its status
// has no policy yet.
func ReadDisruptionPolicy(ctx context.Context, reader client.Reader) (*DisruptionPolicy, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(MachineConfiguration.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: "cluster"}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read MachineConfiguration cluster: %w", err)
	}
	return DisruptionPolicyOf(obj), nil
}

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

// filePolicy is the policy of the file at path: the one of its own path, else of the
// closest directory above it (FindClosestFilePolicyPathMatch); nil when none applies.
func filePolicy(policy *DisruptionPolicy, path string) []DisruptionAction {
	var match []DisruptionAction
	length := -1
	for _, p := range policy.Files {
		if (path == p.Path || strings.HasPrefix(filepath.Clean(path), filepath.Clean(p.Path)+"/")) && len(p.Path) > length {
			match, length = p.Actions, len(p.Path)
		}
	}
	return match
}

func unitPolicy(policy *DisruptionPolicy, name string) []DisruptionAction {
	for _, p := range policy.Units {
		if p.Name == name {
			return p.Actions
		}
	}
	return nil
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

// added are the items of after that before lacks, in after's order.
func added(before, after []string) []string {
	have := setOf(before)
	var out []string
	for _, a := range after {
		if !have[a] {
			out = append(out, a)
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
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
