package targets

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

// This file reads what the VM forecast of a pool's rollout needs (internal/vmforecast
// decides from it): the pool's nodes in the order the Machine Config Operator updates
// them, the cluster-wide eviction strategy, and the run strategy of the VirtualMachines
// whose instances a drain shuts down. Nothing here is written.

// The KubeVirt kinds the VM forecast reads.
var (
	VirtualMachineInstance = Kind{
		GVK:        schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"},
		CRD:        "virtualmachineinstances.kubevirt.io",
		Operator:   "OpenShift Virtualization (KubeVirt)",
		Namespaced: true,
	}
	VirtualMachine = Kind{
		GVK:        schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"},
		CRD:        "virtualmachines.kubevirt.io",
		Operator:   "OpenShift Virtualization (KubeVirt)",
		Namespaced: true,
	}
	// KubeVirt is KubeVirt's own configuration; the HyperConverged sets its
	// spec.configuration.evictionStrategy, the cluster-wide eviction strategy.
	KubeVirt = Kind{
		GVK:        schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "KubeVirt"},
		CRD:        "kubevirts.kubevirt.io",
		Operator:   "OpenShift Virtualization (KubeVirt)",
		Namespaced: true,
	}
)

const (
	// zoneLabel is the node label the Machine Config Operator orders a pool's nodes by.
	zoneLabel = "topology.kubernetes.io/zone"
	// currentConfigAnnotation is the configuration a node runs, as its daemon reports it.
	currentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
)

// PoolNodes reads the nodes of the pool (those its spec.nodeSelector selects), metadata
// only: their names in the order the node controller updates them, and their labels by
// name, which tell whether a VM's node affinity pins it.
func PoolNodes(ctx context.Context, reader client.Reader, pool string) ([]string, map[string]map[string]string, error) {
	p, err := GetPool(ctx, reader, pool)
	if err != nil {
		return nil, nil, err
	}
	list, err := poolNodeList(ctx, reader, p)
	if err != nil || list == nil {
		return nil, nil, err
	}
	nodes := make([]vmforecast.Node, 0, len(list.Items))
	labels := make(map[string]map[string]string, len(list.Items))
	for _, n := range list.Items {
		nodes = append(nodes, vmforecast.Node{Name: n.Name, Zone: n.Labels[zoneLabel], Created: n.CreationTimestamp.Time})
		labels[n.Name] = n.Labels
	}
	return vmforecast.UpdateOrder(nodes), labels, nil
}

// poolNodeList lists the nodes the pool's spec.nodeSelector selects, metadata only; nil
// when it has no node selector (it selects no node).
func poolNodeList(ctx context.Context, reader client.Reader, p *unstructured.Unstructured) (*metav1.PartialObjectMetadataList, error) {
	raw, _, _ := unstructured.NestedMap(p.Object, "spec", "nodeSelector")
	if raw == nil {
		return nil, nil
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, sel); err != nil {
		return nil, fmt.Errorf("read the nodeSelector of MachineConfigPool %s: %w", p.GetName(), err)
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("read the nodeSelector of MachineConfigPool %s: %w", p.GetName(), err)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	if err := reader.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list the nodes of MachineConfigPool %s: %w", p.GetName(), err)
	}
	return list, nil
}

// ClusterEvictionStrategy is the cluster-wide eviction strategy: the KubeVirt CR's
// spec.configuration.evictionStrategy ("" when there is none, or it sets none).
func ClusterEvictionStrategy(ctx context.Context, reader client.Reader) (string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(KubeVirt.ListGVK(KubeVirt.GVK.Version))
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return "", nil // not served
		}
		return "", fmt.Errorf("list KubeVirt: %w", err)
	}
	for _, kv := range list.Items {
		if s, _, _ := unstructured.NestedString(kv.Object, "spec", "configuration", "evictionStrategy"); s != "" {
			return s, nil
		}
	}
	return "", nil
}

// PoolVMs reads the facts of the VMs running on the pool's nodes from their instances
// (vmis), reading the VirtualMachine of each instance a drain shuts down for its run
// strategy, and forecasts what the pool's rollout does to them. maxUnavailable is the
// pool's spec.maxUnavailable as written ("" is 1).
func PoolVMs(ctx context.Context, reader client.Reader, pool, maxUnavailable string, vmis []*vmforecast.Instance) (vmforecast.PoolForecast, error) {
	p, vms, err := PoolVMForecasts(ctx, reader, pool, maxUnavailable, vmis)
	if err != nil {
		return vmforecast.PoolForecast{}, err
	}
	return vmforecast.Summarize(p, vms), nil
}

// PoolVMForecasts is PoolVMs VM by VM: the pool as the forecast sees it, and what its
// rollout does to each VM running on its nodes.
func PoolVMForecasts(ctx context.Context, reader client.Reader, pool, maxUnavailable string,
	vmis []*vmforecast.Instance) (vmforecast.Pool, []vmforecast.VMForecast, error) {
	nodes, labels, err := PoolNodes(ctx, reader, pool)
	if err != nil {
		return vmforecast.Pool{}, nil, err
	}
	strategy, err := ClusterEvictionStrategy(ctx, reader)
	if err != nil {
		return vmforecast.Pool{}, nil, err
	}
	p := vmforecast.Pool{Name: pool, Nodes: nodes, MaxUnavailable: MaxUnavailableNodes(maxUnavailable, len(nodes))}
	var vms []vmforecast.VM
	for _, vmi := range vmis {
		if _, ok := labels[vmi.Node]; !ok || !vmi.Running() {
			continue
		}
		facts, _, err := vmforecast.FromInstance(vmi, nil, labels)
		if err != nil {
			return vmforecast.Pool{}, nil, err
		}
		if vmforecast.Classify(facts, strategy).Outcome == vmforecast.Restarts {
			vm, err := getVirtualMachine(ctx, reader, vmi.Namespace, vmi.Name)
			if err != nil {
				return vmforecast.Pool{}, nil, err
			}
			if vm != nil {
				if facts, _, err = vmforecast.FromInstance(vmi, vm, labels); err != nil {
					return vmforecast.Pool{}, nil, err
				}
			}
		}
		vms = append(vms, facts)
	}
	return p, vmforecast.ForecastVMs(p, vms, strategy), nil
}

// MaxUnavailableNodes is a pool's spec.maxUnavailable as written ("" is 1), as a number of
// its n nodes: at least 1.
func MaxUnavailableNodes(maxUnavailable string, n int) int {
	value := intstr.Parse(maxUnavailable)
	if maxUnavailable == "" {
		value = intstr.FromInt32(1)
	}
	limit, err := intstr.GetScaledValueFromIntOrPercent(&value, n, false)
	if err != nil {
		return 1
	}
	return max(limit, 1)
}

// PendingNodes are the nodes of the pool that do not run its target configuration yet:
// those a rollout under way still has to drain.
func PendingNodes(ctx context.Context, reader client.Reader, pool string) (map[string]bool, error) {
	p, err := GetPool(ctx, reader, pool)
	if err != nil {
		return nil, err
	}
	target, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
	list, err := poolNodeList(ctx, reader, p)
	if err != nil || list == nil {
		return nil, err
	}
	pending := map[string]bool{}
	for _, n := range list.Items {
		if target == "" || n.Annotations[currentConfigAnnotation] != target {
			pending[n.Name] = true
		}
	}
	return pending, nil
}

// getVirtualMachine reads the VirtualMachine of that name, the owner of the instance of
// the same name; nil when there is none.
func getVirtualMachine(ctx context.Context, reader client.Reader, namespace, name string) (*unstructured.Unstructured, error) {
	vm := &unstructured.Unstructured{}
	vm.SetGroupVersionKind(VirtualMachine.GVK)
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vm)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read VirtualMachine %s/%s: %w", namespace, name, err)
	}
	return vm, nil
}
