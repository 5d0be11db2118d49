package targets

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RemovalCheck judges the deletion of obj (as it was before it was deleted): it is gone,
// and, for a MachineConfig or a KubeletConfig, every pool that rolled it out runs, on all
// its machines, a rendered configuration made without it (the MachineConfig, or the one
// the Machine Config Operator generated from the KubeletConfig for the pool, is no longer
// among its sources).
func RemovalCheck(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) (Health, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := reader.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case err == nil:
		return Health{State: Waiting, Message: Describe(obj) + " is being deleted"}, nil
	case !apierrors.IsNotFound(err):
		return Health{}, fmt.Errorf("read %s: %w", Describe(obj), err)
	}
	var check poolRollout
	switch obj.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		check = poolRollout{selects: machineConfigSelects}
	case KubeletConfig.GroupKind():
		check = poolRollout{selects: KubeletConfigSelects, kubeletConfig: true}
	default:
		return Health{State: Healthy, Message: Describe(obj) + " deleted"}, nil
	}
	pools, _, err := check.pools(ctx, reader, obj)
	if err != nil {
		return Health{}, err
	}
	var waiting, done []string
	for i := range pools {
		pool := &pools[i]
		if msg, degraded := degradedMessage(pool); degraded {
			return Health{State: Unhealthy, Message: msg}, nil
		}
		source := obj.GetName()
		if check.kubeletConfig {
			source = fmt.Sprintf("99-%s-generated-kubelet", pool.GetName())
			if suffix := obj.GetAnnotations()[mcNameSuffixAnnotation]; suffix != "" {
				source += "-" + suffix
			}
		}
		name, pp := pool.GetName(), progressOf(pool)
		switch {
		case !pp.observed || slices.Contains(sourceNames(pool), source):
			waiting = append(waiting, fmt.Sprintf("MachineConfigPool %s still renders from MachineConfig %s", name, source))
		case !pp.rolledOut():
			waiting = append(waiting, fmt.Sprintf("MachineConfigPool %s is rolling out %s without MachineConfig %s: %d/%d machines updated",
				name, pp.target, source, pp.updated, pp.machines))
		default:
			done = append(done, fmt.Sprintf("MachineConfigPool %s runs %s, made without MachineConfig %s (%d/%d machines)",
				name, pp.current, source, pp.updated, pp.machines))
		}
	}
	if len(waiting) > 0 {
		return Health{State: Waiting, Message: strings.Join(waiting, "; ")}, nil
	}
	if len(done) == 0 {
		return Health{State: Healthy, Message: Describe(obj) + " deleted"}, nil
	}
	return Health{State: Healthy, Message: Describe(obj) + " deleted; " + strings.Join(done, "; ")}, nil
}

// sourceNames are the MachineConfigs the configuration a pool's machines run was rendered
// from, and those of the one it targets (status.configuration.source, spec.configuration.source).
func sourceNames(pool *unstructured.Unstructured) []string {
	var out []string
	for _, side := range []string{"status", "spec"} {
		list, _, _ := unstructured.NestedSlice(pool.Object, side, "configuration", "source")
		for _, s := range list {
			if m, ok := s.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					out = append(out, n)
				}
			}
		}
	}
	return out
}
