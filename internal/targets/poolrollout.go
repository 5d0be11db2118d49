package targets

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// poolRollout waits until every MachineConfigPool the object applies to runs, on all its
// machines, a rendered configuration that holds the object's content; a degraded pool, or
// no pool at all, is Unhealthy.
type poolRollout struct {
	// selects tells whether the pool rolls the object out.
	selects func(pool, obj *unstructured.Unstructured) bool
	// kubeletConfig is set for a KubeletConfig, whose content is the MachineConfig the
	// Machine Config Operator generates from it, and whose own status reports failures.
	kubeletConfig bool
}

// Check judges the object by content: every pool that rolls it out must run, on all its
// machines, a rendered configuration that holds what the object puts on a node. Nothing
// read before the apply is needed: a pool that runs such a configuration has rolled it out,
// whatever it ran before the apply, and a rendered name equal to the one before proves nothing either way
// (a correction that restores earlier content renders the earlier name again).
func (p poolRollout) Check(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (Health, error) {
	var kc *unstructured.Unstructured
	if p.kubeletConfig {
		live, h, err := readKubeletConfig(ctx, reader, desired)
		if err != nil || live == nil {
			return h, err
		}
		kc = live
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
	// A degraded pool fails the item whatever else it waits for: nothing rolls out until
	// the pool is repaired.
	for i := range pools {
		if msg, degraded := degradedMessage(&pools[i]); degraded {
			return Health{State: Unhealthy, Message: msg}, nil
		}
	}
	if kc != nil {
		if msg, processed := kubeletConfigProcessed(kc); !processed {
			return Health{State: Waiting, Message: msg}, nil
		}
	}
	var content NodeContent
	if !p.kubeletConfig {
		if content, err = ContentOf(desired); err != nil {
			return Health{State: Unhealthy, Message: err.Error()}, nil
		}
	}
	var waiting, done []string
	for i := range pools {
		pool := &pools[i]
		source := "MachineConfig " + desired.GetName()
		if kc != nil {
			generated, msg, err := generatedMachineConfig(ctx, reader, kc, pool.GetName())
			if err != nil {
				return Health{}, err
			}
			if generated == nil {
				waiting = append(waiting, msg)
				continue
			}
			if content, err = ContentOf(generated); err != nil {
				return Health{State: Unhealthy, Message: err.Error()}, nil
			}
			source = fmt.Sprintf("MachineConfig %s (KubeletConfig %s)", generated.GetName(), kc.GetName())
		}
		h, err := rolloutOf(ctx, reader, pool, content, source)
		if err != nil {
			return Health{}, err
		}
		switch h.State {
		case Unhealthy:
			return h, nil
		case Waiting:
			waiting = append(waiting, h.Message)
		default:
			done = append(done, h.Message)
		}
	}
	if len(waiting) > 0 {
		return Health{State: Waiting, Message: strings.Join(waiting, "; ")}, nil
	}
	return Health{State: Healthy, Message: strings.Join(done, "; ")}, nil
}

func (p poolRollout) noPoolMessage(desired *unstructured.Unstructured) string {
	if p.kubeletConfig {
		sel, _, _ := unstructured.NestedMap(desired.Object, "spec", "machineConfigPoolSelector")
		return fmt.Sprintf("no MachineConfigPool matches the machineConfigPoolSelector %v of KubeletConfig %s: label the pool or fix the selector",
			sel, desired.GetName())
	}
	return fmt.Sprintf("no MachineConfigPool selects MachineConfig %s (labels %s): create the pool or fix the machineconfiguration.openshift.io/role label",
		desired.GetName(), labels.Set(desired.GetLabels()).String())
}

// degradedMessage tells whether the pool is Degraded, NodeDegraded or RenderDegraded, and
// says which.
func degradedMessage(pool *unstructured.Unstructured) (string, bool) {
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	for _, t := range []string{"Degraded", "NodeDegraded", "RenderDegraded"} {
		if c, ok := findCondition(conditions, t); ok && c["status"] == "True" {
			return fmt.Sprintf("MachineConfigPool %s is %s%s: repair the pool's nodes, then approve the plan again",
				pool.GetName(), t, conditionDetail(c)), true
		}
	}
	return "", false
}

// conditionDetail is what a pool condition says, to follow its type in a message:
// " (reason: message)", or ": message" when it has no reason (the Machine Config Operator
// sets only a message on Degraded), or " (reason)" when it has no message.
func conditionDetail(c map[string]any) string {
	reason, _ := c["reason"].(string)
	message, _ := c["message"].(string)
	switch {
	case reason != "" && message != "":
		return fmt.Sprintf(" (%s: %s)", reason, message)
	case reason != "":
		return " (" + reason + ")"
	case message != "":
		return ": " + message
	}
	return ""
}

// rolloutOf judges one pool's rollout of content (from source, for the messages): the pool
// observed its latest spec, runs its target on every machine, reports Updated, and the
// rendered configuration it runs holds content. A paused pool rolls nothing out, which its
// message says when it waits.
func rolloutOf(ctx context.Context, reader client.Reader, pool *unstructured.Unstructured, content NodeContent, source string) (Health, error) {
	name := pool.GetName()
	pp := progressOf(pool)
	target, current, updated, machines := pp.target, pp.current, pp.updated, pp.machines
	paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused")

	// What the machines run now; read first for a paused pool, which will not move on.
	var lacks []string
	judged := false
	judge := func() (Health, bool, error) {
		judged = true
		if current == "" {
			return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s runs no rendered configuration yet", name)}, true, nil
		}
		rendered := &unstructured.Unstructured{}
		rendered.SetGroupVersionKind(MachineConfig.GVK)
		if err := reader.Get(ctx, client.ObjectKey{Name: current}, rendered); err != nil {
			if apierrors.IsNotFound(err) {
				return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s runs %s, a MachineConfig that does not exist", name, current)}, true, nil
			}
			return Health{}, true, fmt.Errorf("read rendered MachineConfig %s of MachineConfigPool %s: %w", current, name, err)
		}
		holds, err := ContentOf(rendered)
		if err != nil {
			return Health{State: Unhealthy, Message: err.Error()}, true, nil
		}
		lacks = holds.Missing(content)
		return Health{}, false, nil
	}
	if paused {
		if h, done, err := judge(); done {
			return h, err
		}
		if len(lacks) > 0 {
			return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s is paused and runs %s, which lacks %s of %s: nothing rolls out until the pool is unpaused",
				name, current, strings.Join(lacks, ", "), source)}, nil
		}
	}
	switch {
	case !pp.observed:
		return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s has not observed its latest spec yet", name)}, nil
	case !pp.rolledOut():
		state := "is rolling out"
		if paused {
			state = "is paused while rolling out"
		}
		return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s %s %s: %d/%d machines updated", name, state, target, updated, machines)}, nil
	}
	if !judged {
		if h, done, err := judge(); done {
			return h, err
		}
	}
	if len(lacks) > 0 {
		return Health{State: Waiting, Message: fmt.Sprintf("MachineConfigPool %s runs %s, which lacks %s of %s",
			name, current, strings.Join(lacks, ", "), source)}, nil
	}
	return Health{State: Healthy, Message: fmt.Sprintf("MachineConfigPool %s updated to %s (%d/%d machines)", name, current, updated, machines)}, nil
}

// poolProgress is where a pool's rollout stands: the rendered configuration it targets
// and the one its machines run, whether it observed its latest spec, and its machine counts.
type poolProgress struct {
	target, current          string
	observed, reportsUpdated bool
	updated, machines        int64
}

func progressOf(pool *unstructured.Unstructured) poolProgress {
	var pp poolProgress
	pp.target, _, _ = unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	pp.current, _, _ = unstructured.NestedString(pool.Object, "status", "configuration", "name")
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	pp.observed = observed == pool.GetGeneration()
	pp.machines, _, _ = unstructured.NestedInt64(pool.Object, "status", "machineCount")
	pp.updated, _, _ = unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	updatedCond, _ := findCondition(conditions, "Updated")
	pp.reportsUpdated = updatedCond["status"] == "True"
	return pp
}

// rolledOut tells whether every machine runs the configuration the pool targets and the
// pool reports Updated.
func (pp poolProgress) rolledOut() bool {
	return pp.current == pp.target && pp.reportsUpdated && pp.updated == pp.machines
}

// pools lists the MachineConfigPools that roll obj out, sorted by name; served is false
// when the cluster has no MachineConfigPool kind at all.
func (p poolRollout) pools(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) ([]unstructured.Unstructured, bool, error) {
	all, served, err := ListPools(ctx, reader)
	if err != nil || !served {
		return nil, served, err
	}
	var out []unstructured.Unstructured
	for i := range all {
		if p.selects(&all[i], obj) {
			out = append(out, all[i])
		}
	}
	return out, true, nil
}

func findCondition(conditions []any, condType string) (map[string]any, bool) {
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m, true
		}
	}
	return nil, false
}
