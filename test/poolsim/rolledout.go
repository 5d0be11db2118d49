package poolsim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RolledOut tells, with an error that says why not, whether the MachineConfigPool name
// runs, on every one of its Nodes, the configuration rendered from the MachineConfigs
// that select it now: its rendered configuration lists exactly those (none being
// deleted), and its status reports that configuration, Updated, on as many machines as
// the pool has Nodes (a Node belongs to the pool as the simulator decides it), for its
// current generation.
func RolledOut(ctx context.Context, c client.Reader, name string) error {
	pools, err := readAll[pool](ctx, c, poolGVK)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(pools, func(p pool) bool { return p.Name == name })
	if i < 0 {
		return fmt.Errorf("there is no MachineConfigPool %s", name)
	}
	pl := &pools[i]

	configs, err := readAll[machineConfig](ctx, c, machineConfigGVK)
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(pl.Spec.MachineConfigSelector)
	if err != nil {
		return fmt.Errorf("MachineConfigPool %s: %w", name, err)
	}
	selected := []string{}
	for _, mc := range configs {
		if mc.DeletionTimestamp == nil && selector.Matches(labels.Set(mc.Labels)) {
			selected = append(selected, mc.Name)
		}
	}
	rendered := []string{}
	for _, ref := range pl.Spec.Configuration.Source {
		rendered = append(rendered, ref.Name)
	}
	slices.Sort(selected)
	slices.Sort(rendered)
	if !slices.Equal(selected, rendered) {
		return fmt.Errorf("MachineConfigPool %s renders [%s], its MachineConfigs are [%s]",
			name, strings.Join(rendered, " "), strings.Join(selected, " "))
	}

	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := c.List(ctx, nodes); err != nil {
		return fmt.Errorf("list Nodes: %w", err)
	}
	var machines int32
	for _, n := range nodes.Items {
		if primaryPool(pools, &corev1.Node{ObjectMeta: n.ObjectMeta}) == pl {
			machines++
		}
	}

	target, st := pl.Spec.Configuration.Name, pl.Status
	updated := findCondition(st.Conditions, conditionUpdated)
	if target == "" || st.ObservedGeneration != pl.Generation || st.Configuration.Name != target ||
		updated == nil || updated.Status != corev1.ConditionTrue ||
		st.MachineCount != machines || st.UpdatedMachineCount != machines {
		updatedStatus := ""
		if updated != nil {
			updatedStatus = string(updated.Status)
		}
		return fmt.Errorf("MachineConfigPool %s is rolling out %q (runs %q, Updated %q, %d of %d machines of %d nodes updated, "+
			"observed generation %d of %d)", name, target, st.Configuration.Name, updatedStatus,
			st.UpdatedMachineCount, st.MachineCount, machines, st.ObservedGeneration, pl.Generation)
	}
	return nil
}

// readAll reads every object of the kind into one of the simulator's types.
func readAll[T any](ctx context.Context, c client.Reader, gvk schema.GroupVersionKind) ([]T, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list %ss: %w", gvk.Kind, err)
	}
	out := make([]T, len(list.Items))
	for i := range list.Items {
		if err := decode(&list.Items[i], &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
