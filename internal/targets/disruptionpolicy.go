package targets

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
