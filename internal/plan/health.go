package plan

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

var (
	machineConfigGK         = schema.GroupKind{Group: "machineconfiguration.openshift.io", Kind: "MachineConfig"}
	machineConfigPoolListGV = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPoolList"}
)

// HealthState is the verdict of a health check.
type HealthState string

const (
	// Healthy: the item took effect.
	Healthy HealthState = "Healthy"
	// Waiting: the item is still taking effect; check again later.
	Waiting HealthState = "Waiting"
	// Unhealthy: the item will not take effect without help; it fails.
	Unhealthy HealthState = "Unhealthy"
)

// Health is the result of checking whether an applied item took effect.
type Health struct {
	State   HealthState
	Message string
}

// CheckHealth tells whether an applied item took effect. A MachineConfig has taken effect
// when every MachineConfigPool that selects it has rendered a configuration listing it
// (a new one, if the apply changed the MachineConfig's spec), observed its latest spec and
// reports Updated; a degraded pool, no selecting pool, or timeout (when > 0) elapsed since
// appliedAt makes it Unhealthy. Every other kind takes effect when applied.
func (e *Engine) CheckHealth(ctx context.Context, item advisorv1alpha1.PlanItem, appliedAt time.Time, timeout time.Duration, now time.Time) (Health, error) {
	desired, err := DesiredObject(item)
	if err != nil {
		return Health{}, err
	}
	if desired.GroupVersionKind().GroupKind() != machineConfigGK {
		return Health{State: Healthy, Message: fmt.Sprintf("%s applied", describe(desired))}, nil
	}
	pools, served, err := e.poolsSelecting(ctx, desired)
	if err != nil {
		return Health{}, err
	}
	if !served {
		return Health{State: Unhealthy, Message: fmt.Sprintf(
			"the cluster serves no MachineConfigPools, so nothing rolls out MachineConfig %s: install the Machine Config Operator (OpenShift)",
			desired.GetName())}, nil
	}
	if len(pools) == 0 {
		return Health{State: Unhealthy, Message: fmt.Sprintf(
			"no MachineConfigPool selects MachineConfig %s (labels %s): create the pool or fix the machineconfiguration.openshift.io/role label",
			desired.GetName(), labels.Set(desired.GetLabels()).String())}, nil
	}
	baseline := parseBaseline(item.HealthBaseline)
	var waiting, done []string
	for _, pool := range pools {
		verdict, msg := poolRollout(pool, desired.GetName(), baseline[pool.GetName()])
		switch verdict {
		case Unhealthy:
			return Health{State: Unhealthy, Message: msg}, nil
		case Waiting:
			waiting = append(waiting, msg)
		default:
			done = append(done, msg)
		}
	}
	if len(waiting) == 0 {
		return Health{State: Healthy, Message: strings.Join(done, "; ")}, nil
	}
	msg := strings.Join(waiting, "; ")
	if timeout > 0 && now.Sub(appliedAt) > timeout {
		return Health{State: Unhealthy, Message: fmt.Sprintf("rollout did not finish within waitTimeout %s: %s", timeout, msg)}, nil
	}
	return Health{State: Waiting, Message: msg}, nil
}

// poolRollout judges one pool's rollout of the MachineConfig named mc.
func poolRollout(pool unstructured.Unstructured, mc, baseline string) (HealthState, string) {
	name := pool.GetName()
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	for _, t := range []string{"Degraded", "NodeDegraded", "RenderDegraded"} {
		if c, ok := findCondition(conditions, t); ok && c["status"] == "True" {
			return Unhealthy, fmt.Sprintf("MachineConfigPool %s is %s (%v: %v): repair the pool's nodes, then approve the plan again",
				name, t, c["reason"], c["message"])
		}
	}
	target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	current, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	sources, _, _ := unstructured.NestedSlice(pool.Object, "status", "configuration", "source")
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	machines, _, _ := unstructured.NestedInt64(pool.Object, "status", "machineCount")
	updated, _, _ := unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
	updatedCond, _ := findCondition(conditions, "Updated")
	switch {
	case baseline != "" && target == baseline:
		return Waiting, fmt.Sprintf("MachineConfigPool %s has not rendered a configuration with %s yet (still %s)", name, mc, baseline)
	case !listsSource(sources, mc):
		return Waiting, fmt.Sprintf("MachineConfigPool %s has not picked up %s yet", name, mc)
	case observed != pool.GetGeneration():
		return Waiting, fmt.Sprintf("MachineConfigPool %s has not observed its latest spec yet", name)
	case current != target || updatedCond["status"] != "True":
		return Waiting, fmt.Sprintf("MachineConfigPool %s is rolling out %s: %d/%d machines updated", name, target, updated, machines)
	}
	return Healthy, fmt.Sprintf("MachineConfigPool %s updated to %s (%d/%d machines)", name, current, updated, machines)
}

// healthBaseline records, for a MachineConfig, the configuration each selecting pool
// targets before the apply: "pool=rendered-name" pairs, sorted.
func (e *Engine) healthBaseline(ctx context.Context, desired *unstructured.Unstructured) (string, error) {
	if desired.GroupVersionKind().GroupKind() != machineConfigGK {
		return "", nil
	}
	pools, _, err := e.poolsSelecting(ctx, desired)
	if err != nil {
		return "", err
	}
	var pairs []string
	for _, pool := range pools {
		target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		pairs = append(pairs, pool.GetName()+"="+target)
	}
	return strings.Join(pairs, ","), nil
}

func parseBaseline(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if name, target, ok := strings.Cut(pair, "="); ok {
			out[name] = target
		}
	}
	return out
}

// poolsSelecting lists the MachineConfigPools whose machineConfigSelector matches the
// MachineConfig's labels, sorted by name; served is false when the cluster has no
// MachineConfigPool kind at all.
func (e *Engine) poolsSelecting(ctx context.Context, mc *unstructured.Unstructured) (pools []unstructured.Unstructured, served bool, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(machineConfigPoolListGV)
	if err := e.Reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("list MachineConfigPools: %w", err)
	}
	for _, pool := range list.Items {
		raw, found, _ := unstructured.NestedMap(pool.Object, "spec", "machineConfigSelector")
		if !found {
			continue
		}
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(mc.GetLabels())) {
			pools = append(pools, pool)
		}
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].GetName() < pools[j].GetName() })
	return pools, true, nil
}

func findCondition(conditions []any, condType string) (map[string]any, bool) {
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m, true
		}
	}
	return nil, false
}

func listsSource(sources []any, name string) bool {
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok && m["name"] == name {
			return true
		}
	}
	return false
}
