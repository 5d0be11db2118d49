package targets

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HealthState is the verdict of a health check.
type HealthState string

const (
	// Healthy: the applied object took effect.
	Healthy HealthState = "Healthy"
	// Waiting: it is still taking effect; check again later.
	Waiting HealthState = "Waiting"
	// Unhealthy: it will not take effect without help.
	Unhealthy HealthState = "Unhealthy"
)

// Health is the result of a health check, with a message for the item.
type Health struct {
	State   HealthState
	Message string
}

// HealthCheck tells whether an applied object of one kind took effect.
type HealthCheck interface {
	// Baseline reads, just before the apply, what Check compares against later (for a
	// MachineConfig: the rendered configuration each pool targets), so that a rollout
	// finished before the apply proves nothing.
	Baseline(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (string, error)
	// Check judges the object now; baseline is what Baseline returned ("" when the apply
	// changed no spec, so nothing new has to roll out).
	Check(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured, baseline string) (Health, error)
}

// HealthCheckFor returns the health check of a kind. Kinds whose operator rolls the change
// out to nodes (MachineConfig, KubeletConfig) wait for their MachineConfigPools; every other
// kind takes effect when the API server accepts it.
func HealthCheckFor(gk schema.GroupKind) HealthCheck {
	switch gk {
	case MachineConfig.GroupKind():
		return poolRollout{selects: machineConfigSelects, describe: "MachineConfig"}
	case KubeletConfig.GroupKind():
		return poolRollout{selects: KubeletConfigSelects, describe: "KubeletConfig", failure: kubeletConfigFailure}
	}
	return applied{}
}

// applied is the health check of kinds without a rollout.
type applied struct{}

func (applied) Baseline(context.Context, client.Reader, *unstructured.Unstructured) (string, error) {
	return "", nil
}

func (applied) Check(_ context.Context, _ client.Reader, desired *unstructured.Unstructured, _ string) (Health, error) {
	return Health{State: Healthy, Message: Describe(desired) + " applied"}, nil
}

// poolRollout waits until every MachineConfigPool the object applies to has rendered a new
// configuration (when the apply changed the object's spec), observed its latest spec and
// reports Updated; a degraded pool, or no pool at all, is Unhealthy.
type poolRollout struct {
	describe string
	// selects tells whether the pool rolls the object out.
	selects func(pool, obj *unstructured.Unstructured) bool
	// failure reports a failure the object's own status shows ("" when none).
	failure func(live *unstructured.Unstructured) string
}

func (p poolRollout) Baseline(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (string, error) {
	pools, _, err := p.pools(ctx, reader, desired)
	if err != nil {
		return "", err
	}
	pairs := make([]string, 0, len(pools))
	for _, pool := range pools {
		target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		pairs = append(pairs, pool.GetName()+"="+target)
	}
	return strings.Join(pairs, ","), nil
}

func (p poolRollout) Check(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured, baseline string) (Health, error) {
	before := parseBaseline(baseline)
	if p.failure != nil {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		err := reader.Get(ctx, client.ObjectKeyFromObject(desired), live)
		if client.IgnoreNotFound(err) != nil {
			return Health{}, fmt.Errorf("read %s: %w", Describe(desired), err)
		}
		if err == nil {
			if failed := p.failure(live); failed != "" {
				return Health{State: Unhealthy, Message: failed}, nil
			}
		}
	}
	pools, served, err := p.pools(ctx, reader, desired)
	if err != nil {
		return Health{}, err
	}
	if !served {
		return Health{State: Unhealthy, Message: fmt.Sprintf(
			"the cluster serves no MachineConfigPools, so nothing rolls out %s: install %s",
			Describe(desired), MachineConfigPool.Operator)}, nil
	}
	if len(pools) == 0 {
		return Health{State: Unhealthy, Message: p.noPoolMessage(desired)}, nil
	}
	var waiting, done []string
	for i := range pools {
		verdict, msg := rolloutOf(&pools[i], desired, before[pools[i].GetName()], p.describe == "MachineConfig")
		switch verdict {
		case Unhealthy:
			return Health{State: Unhealthy, Message: msg}, nil
		case Waiting:
			waiting = append(waiting, msg)
		default:
			done = append(done, msg)
		}
	}
	if len(waiting) > 0 {
		return Health{State: Waiting, Message: strings.Join(waiting, "; ")}, nil
	}
	return Health{State: Healthy, Message: strings.Join(done, "; ")}, nil
}

func (p poolRollout) noPoolMessage(desired *unstructured.Unstructured) string {
	if p.describe == "KubeletConfig" {
		sel, _, _ := unstructured.NestedMap(desired.Object, "spec", "machineConfigPoolSelector")
		return fmt.Sprintf("no MachineConfigPool matches the machineConfigPoolSelector %v of KubeletConfig %s: label the pool or fix the selector",
			sel, desired.GetName())
	}
	return fmt.Sprintf("no MachineConfigPool selects MachineConfig %s (labels %s): create the pool or fix the machineconfiguration.openshift.io/role label",
		desired.GetName(), labels.Set(desired.GetLabels()).String())
}

// rolloutOf judges one pool's rollout of obj. For a MachineConfig the pool's rendered
// configuration must also list it by name.
func rolloutOf(pool, obj *unstructured.Unstructured, baseline string, listsByName bool) (HealthState, string) {
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
		return Waiting, notRendered(name, subject(obj, listsByName), baseline)
	case listsByName && !listsSource(sources, obj.GetName()):
		return Waiting, fmt.Sprintf("MachineConfigPool %s has not picked up %s yet", name, obj.GetName())
	case observed != pool.GetGeneration():
		return Waiting, fmt.Sprintf("MachineConfigPool %s has not observed its latest spec yet", name)
	case current != target || updatedCond["status"] != "True":
		return Waiting, fmt.Sprintf("MachineConfigPool %s is rolling out %s: %d/%d machines updated", name, target, updated, machines)
	}
	return Healthy, fmt.Sprintf("MachineConfigPool %s updated to %s (%d/%d machines)", name, current, updated, machines)
}

// AwaitingRender is what the health check of obj shows the moment after an apply that
// changed its spec: no pool of the baseline (read just before the apply) has rendered a
// configuration with it yet. ok is false for a kind that rolls nothing out, and when the
// baseline names no pool, or a pool without a rendered configuration.
func AwaitingRender(obj *unstructured.Unstructured, baseline string) (string, bool) {
	p, rollsOut := HealthCheckFor(obj.GroupVersionKind().GroupKind()).(poolRollout)
	if !rollsOut || baseline == "" {
		return "", false
	}
	before := parseBaseline(baseline)
	// In the order Check lists waiting pools: by name.
	var msgs []string
	for _, pool := range poolNames(before) {
		if pool == "" || before[pool] == "" {
			return "", false
		}
		msgs = append(msgs, notRendered(pool, subject(obj, p.describe == "MachineConfig"), before[pool]))
	}
	return strings.Join(msgs, "; "), len(msgs) > 0
}

func notRendered(pool, what, baseline string) string {
	return fmt.Sprintf("MachineConfigPool %s has not rendered a configuration with %s yet (still %s)", pool, what, baseline)
}

// subject names obj in the messages of a pool's rollout: a MachineConfig, which the pool
// lists by name, by its name alone.
func subject(obj *unstructured.Unstructured, listsByName bool) string {
	if listsByName {
		return obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

// pools lists the MachineConfigPools that roll obj out, sorted by name; served is false
// when the cluster has no MachineConfigPool kind at all.
func (p poolRollout) pools(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) ([]unstructured.Unstructured, bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MachineConfigPool.ListGVK(MachineConfigPool.GVK.Version))
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("list MachineConfigPools: %w", err)
	}
	var out []unstructured.Unstructured
	for i := range list.Items {
		if p.selects(&list.Items[i], obj) {
			out = append(out, list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, true, nil
}

// poolNames are the pools a baseline names, sorted.
func poolNames(baseline map[string]string) []string {
	names := make([]string, 0, len(baseline))
	for name := range baseline {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// machineConfigSelects: the pool's machineConfigSelector matches the MachineConfig's labels.
func machineConfigSelects(pool, mc *unstructured.Unstructured) bool {
	return selectorMatches(pool.Object, []string{"spec", "machineConfigSelector"}, mc.GetLabels())
}

// KubeletConfigSelects tells whether the KubeletConfig's machineConfigPoolSelector selects the
// pool; an empty or missing selector selects none.
func KubeletConfigSelects(pool, kc *unstructured.Unstructured) bool {
	return selectorMatches(kc.Object, []string{"spec", "machineConfigPoolSelector"}, pool.GetLabels())
}

// kubeletConfigFailure reports the Failure condition the Machine Config Operator sets on a
// KubeletConfig it cannot render (for example an invalid kubelet setting).
func kubeletConfigFailure(kc *unstructured.Unstructured) string {
	// The Machine Config Operator's kubelet-config controller appends a condition each time
	// it handles the KubeletConfig: Success (status True), or Failure with status False and
	// the error as its message (wrapErrorWithCondition). The last one says how it went.
	conditions, _, _ := unstructured.NestedSlice(kc.Object, "status", "conditions")
	if len(conditions) == 0 {
		return ""
	}
	if c, ok := conditions[len(conditions)-1].(map[string]any); ok && c["type"] == "Failure" {
		return fmt.Sprintf("the Machine Config Operator cannot render KubeletConfig %s: %v", kc.GetName(), c["message"])
	}
	return ""
}

func selectorMatches(obj map[string]any, path []string, set map[string]string) bool {
	raw, found, _ := unstructured.NestedMap(obj, path...)
	if !found {
		return false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(set))
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

// Describe names an object in messages and diff headers: "Kind namespace/name".
func Describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}

// RollsOut tells whether applying an object of the kind rolls out to nodes, so its health
// check compares against a baseline that must be taken (and kept) before the apply.
func RollsOut(gk schema.GroupKind) bool {
	_, ok := HealthCheckFor(gk).(poolRollout)
	return ok
}
