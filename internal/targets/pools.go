package targets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PausedByAnnotation names, on a MachineConfigPool the operator paused, the configs whose
// batches still need the pause, comma-separated and sorted. A paused pool without it was
// paused by somebody else, and the operator never resumes it.
const PausedByAnnotation = "advisor.kubevirt.io/paused-by"

// IsRenderedConfig tells whether a MachineConfig's name is that of a configuration the
// Machine Config Operator rendered for a pool: rendered-<pool>-<hash of its content>. Such a
// configuration never changes; a pool moves to another one instead.
func IsRenderedConfig(name string) bool { return strings.HasPrefix(name, "rendered-") }

// ListPools lists the MachineConfigPools, sorted by name; served is false when the
// cluster has no MachineConfigPool kind.
func ListPools(ctx context.Context, reader client.Reader) (pools []unstructured.Unstructured, served bool, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MachineConfigPool.ListGVK(MachineConfigPool.GVK.Version))
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("list MachineConfigPools: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
	return list.Items, true, nil
}

// GetPool reads one MachineConfigPool.
func GetPool(ctx context.Context, reader client.Reader, name string) (*unstructured.Unstructured, error) {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(MachineConfigPool.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		return nil, fmt.Errorf("read MachineConfigPool %s: %w", name, err)
	}
	return pool, nil
}

// PoolRendersFrom tells whether the pool renders obj (a MachineConfig its
// machineConfigSelector selects, or a KubeletConfig whose machineConfigPoolSelector selects
// the pool) into its configuration.
func PoolRendersFrom(pool, obj *unstructured.Unstructured) bool {
	switch obj.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		return machineConfigSelects(pool, obj)
	case KubeletConfig.GroupKind():
		return KubeletConfigSelects(pool, obj)
	}
	return false
}

// PoolPaused tells whether the pool's spec pauses it.
func PoolPaused(pool *unstructured.Unstructured) bool {
	paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused")
	return paused
}

// PausedBy are the configs the pool's PausedByAnnotation names.
func PausedBy(pool *unstructured.Unstructured) []string {
	v := strings.TrimSpace(pool.GetAnnotations()[PausedByAnnotation])
	if v == "" {
		return nil
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// PoolBusy says why a pool should not start another rollout now: it is Degraded, or
// Updating (rolling out another change); "" when it is idle.
func PoolBusy(pool *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	for _, t := range []string{"Degraded", "NodeDegraded", "RenderDegraded"} {
		if c, ok := findCondition(conditions, t); ok && c["status"] == "True" {
			return fmt.Sprintf("MachineConfigPool %s is %s%s", pool.GetName(), t, conditionDetail(c))
		}
	}
	if c, ok := findCondition(conditions, "Updating"); ok && c["status"] == "True" && !PoolPaused(pool) {
		updated, _, _ := unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
		machines, _, _ := unstructured.NestedInt64(pool.Object, "status", "machineCount")
		return fmt.Sprintf("MachineConfigPool %s is updating to another configuration (%d/%d machines updated)",
			pool.GetName(), updated, machines)
	}
	return ""
}

// ClusterUpgrading tells whether a cluster upgrade is in flight (ClusterVersion version
// Progressing=True), with its message; a cluster without the kind never upgrades.
func ClusterUpgrading(ctx context.Context, reader client.Reader) (bool, string, error) {
	cv := &unstructured.Unstructured{}
	cv.SetGroupVersionKind(ClusterVersion.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		if meta.IsNoMatchError(err) || client.IgnoreNotFound(err) == nil {
			return false, "", nil
		}
		return false, "", fmt.Errorf("read ClusterVersion version: %w", err)
	}
	conditions, _, _ := unstructured.NestedSlice(cv.Object, "status", "conditions")
	if c, ok := findCondition(conditions, "Progressing"); ok && c["status"] == "True" {
		msg, _ := c["message"].(string)
		return true, msg, nil
	}
	return false, "", nil
}

// PausedAtAnnotation records, on a MachineConfigPool the operator paused, when it paused
// it (RFC 3339): a restarted operator exports the pause with the time it was taken.
const PausedAtAnnotation = "advisor.kubevirt.io/paused-at"

// PausedAt is when the operator paused the pool, from PausedAtAnnotation.
func PausedAt(pool *unstructured.Unstructured) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, pool.GetAnnotations()[PausedAtAnnotation])
	return t, err == nil
}

// PauseWrittenBy is the field manager that last changed the pool's spec.paused ("" when
// none is recorded): the API server moves a field of an update to the manager that
// changes its value.
func PauseWrittenBy(pool *unstructured.Unstructured) string {
	for _, mf := range pool.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]json.RawMessage
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields["f:spec"]["f:paused"]; ok {
			return mf.Manager
		}
	}
	return ""
}
