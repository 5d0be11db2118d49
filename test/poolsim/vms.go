package poolsim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds of KubeVirt the simulator reads and writes when it plays VMs.
var (
	vmiGVK       = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}
	vmGVK        = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}
	migrationGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}
	kubeVirtGVK  = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "KubeVirt"}
)

// updateInProgressTaint is the taint the node controller puts on every node of a pool that
// waits for its update (NodeUpdateInProgressTaint, pkg/constants of the Machine Config
// Operator).
var updateInProgressTaint = corev1.Taint{Key: "UpdateInProgress", Effect: corev1.TaintEffectPreferNoSchedule}

const (
	// NotMigratableAnnotation, "true" on a VirtualMachineInstance (or the template of a
	// VirtualMachine), makes the simulator report it not LiveMigratable, as virt-controller
	// does for a VM with a disk that is not shared or a host device.
	NotMigratableAnnotation = "poolsim.test/not-live-migratable"
	// evacuationAnnotation marks a migration the evacuation controller created, with the
	// node it evacuates.
	evacuationAnnotation = "kubevirt.io/evacuationMigration"

	// KubeVirt's defaults for concurrent migrations (pkg/virt-config).
	defaultMigrationsPerCluster = 5
	defaultMigrationsPerNode    = 2

	conditionLiveMigratable = "LiveMigratable"
	phaseRunning            = "Running"
)

// vmInstance is the part of a VirtualMachineInstance the simulator reads.
type vmInstance struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              vmiSpec `json:"spec"`
	Status            struct {
		NodeName   string      `json:"nodeName"`
		Phase      string      `json:"phase"`
		Conditions []condition `json:"conditions"`
	} `json:"status"`
}

// vmiSpec is what scheduling and eviction read of a VirtualMachineInstance's spec.
type vmiSpec struct {
	EvictionStrategy string              `json:"evictionStrategy,omitempty"`
	NodeSelector     map[string]string   `json:"nodeSelector,omitempty"`
	Affinity         *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations      []corev1.Toleration `json:"tolerations,omitempty"`
	Domain           struct {
		Resources struct {
			Requests corev1.ResourceList `json:"requests,omitempty"`
		} `json:"resources"`
	} `json:"domain"`
}

// memory is the memory the VM's pod asks the scheduler for: its memory request (KubeVirt
// adds its overhead, which is left out).
func (s vmiSpec) memory() int64 { return s.Domain.Resources.Requests.Memory().Value() }

func (v *vmInstance) key() string { return v.Namespace + "/" + v.Name }

// liveMigratable is its LiveMigratable condition.
func (v *vmInstance) liveMigratable() bool {
	c := findCondition(v.Status.Conditions, conditionLiveMigratable)
	return c != nil && c.Status == corev1.ConditionTrue
}

// virtualMachine is a VirtualMachine: what its controller reads, and its template as stored.
type virtualMachine struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		RunStrategy string `json:"runStrategy"`
		Running     *bool  `json:"running"`
	} `json:"spec"`
	template map[string]any
}

func (v *virtualMachine) key() string { return v.Namespace + "/" + v.Name }

// runStrategy follows RunStrategy of kubevirt.io/api: spec.runStrategy, else spec.running,
// else Halted.
func (v *virtualMachine) runStrategy() string {
	switch {
	case v.Spec.RunStrategy != "":
		return v.Spec.RunStrategy
	case v.Spec.Running != nil && *v.Spec.Running:
		return "Always"
	}
	return "Halted"
}

// kubeVirtConfig is the cluster-wide configuration of the KubeVirt CR.
type kubeVirtConfig struct {
	evictionStrategy                  string
	migrationsPerCluster, perNodeSent int
}

// readVMs adds the VirtualMachineInstances, VirtualMachines and the KubeVirt configuration
// to the snapshot.
func (s *Simulator) readVMs(ctx context.Context, r client.Reader, snap *snapshot) error {
	snap.vmisOn, snap.vmiByKey, snap.vms = map[string][]*vmInstance{}, map[string]*vmInstance{}, map[string]*virtualMachine{}
	vmis, err := s.list(ctx, r, vmiGVK)
	if err != nil {
		return err
	}
	for i := range vmis {
		v := &vmInstance{}
		if err := decode(&vmis[i], v); err != nil {
			return err
		}
		snap.vmiByKey[v.key()] = v
		if v.Status.NodeName != "" {
			snap.vmisOn[v.Status.NodeName] = append(snap.vmisOn[v.Status.NodeName], v)
		}
	}
	vms, err := s.list(ctx, r, vmGVK)
	if err != nil {
		return err
	}
	for i := range vms {
		v := &virtualMachine{}
		if err := decode(&vms[i], v); err != nil {
			return err
		}
		v.template, _, _ = unstructured.NestedMap(vms[i].Object, "spec", "template")
		snap.vms[v.key()] = v
	}
	kvs, err := s.list(ctx, r, kubeVirtGVK)
	if err != nil {
		return err
	}
	snap.kubeVirt = kubeVirtConfig{migrationsPerCluster: defaultMigrationsPerCluster, perNodeSent: defaultMigrationsPerNode}
	for i := range kvs {
		cfg := kvs[i].Object
		snap.kubeVirt.evictionStrategy, _, _ = unstructured.NestedString(cfg, "spec", "configuration", "evictionStrategy")
		if n, found, _ := unstructured.NestedInt64(cfg, "spec", "configuration", "migrations", "parallelMigrationsPerCluster"); found {
			snap.kubeVirt.migrationsPerCluster = int(n)
		}
		if n, found, _ := unstructured.NestedInt64(cfg, "spec", "configuration", "migrations", "parallelOutboundMigrationsPerNode"); found {
			snap.kubeVirt.perNodeSent = int(n)
		}
	}
	for _, list := range snap.vmisOn {
		slices.SortFunc(list, func(a, b *vmInstance) int {
			if a.key() < b.key() {
				return -1
			}
			return 1
		})
	}
	return nil
}

// VMSpec is a VM CreateVM starts.
type VMSpec struct {
	Namespace, Name string
	// Node is the node its VirtualMachineInstance runs on.
	Node string
	// Memory is its memory request (default 2Gi).
	Memory string
	// EvictionStrategy is its own; "" follows the cluster's.
	EvictionStrategy string
	// NotMigratable reports it not LiveMigratable.
	NotMigratable bool
	// RunStrategy is that of its VirtualMachine; "" starts a VirtualMachineInstance that no
	// VirtualMachine owns.
	RunStrategy  string
	Tolerations  []corev1.Toleration
	NodeSelector map[string]string
}

// CreateVM creates the VM's VirtualMachine (unless it has no RunStrategy) and its running
// VirtualMachineInstance on spec.Node, as virt-controller and virt-handler leave one:
// phase Running, Ready, and LiveMigratable unless NotMigratable.
func (s *Simulator) CreateVM(ctx context.Context, spec VMSpec) error {
	if spec.Memory == "" {
		spec.Memory = "2Gi"
	}
	vmiSpec := map[string]any{"domain": map[string]any{
		"devices":   map[string]any{},
		"resources": map[string]any{"requests": map[string]any{"memory": spec.Memory}},
	}}
	if spec.EvictionStrategy != "" {
		vmiSpec["evictionStrategy"] = spec.EvictionStrategy
	}
	if len(spec.NodeSelector) > 0 {
		vmiSpec["nodeSelector"] = spec.NodeSelector
	}
	if len(spec.Tolerations) > 0 {
		raw, err := toMaps(spec.Tolerations)
		if err != nil {
			return err
		}
		vmiSpec["tolerations"] = raw
	}
	annotations := map[string]any{}
	if spec.NotMigratable {
		annotations[NotMigratableAnnotation] = "true"
	}
	template := map[string]any{"metadata": map[string]any{"annotations": annotations}, "spec": vmiSpec}
	// The instance goes first, so that the VirtualMachine controller finds it running and
	// does not start one of its own; it gets its owner once the VirtualMachine exists.
	vmi := newVMI(spec.Namespace, spec.Name, nil, template, spec.Node)
	if err := s.client.Create(ctx, vmi, client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("create VirtualMachineInstance %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	if spec.RunStrategy != "" {
		owner := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": spec.Name, "namespace": spec.Namespace},
			"spec":     map[string]any{"runStrategy": spec.RunStrategy, "template": runtime.DeepCopyJSON(template)},
		}}
		owner.SetGroupVersionKind(vmGVK)
		if err := s.client.Create(ctx, owner, client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("create VirtualMachine %s/%s: %w", spec.Namespace, spec.Name, err)
		}
		vmi.SetOwnerReferences(newVMI(spec.Namespace, spec.Name, owner, template, spec.Node).GetOwnerReferences())
		if err := s.client.Update(ctx, vmi, client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("own VirtualMachineInstance %s/%s: %w", spec.Namespace, spec.Name, err)
		}
	}
	s.notify()
	return nil
}

// clearNotReadyTaint removes the node.kubernetes.io/not-ready taint from a Ready node.
func (s *Simulator) clearNotReadyTaint(ctx context.Context, node *corev1.Node) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return s.client.Update(ctx, node, client.FieldOwner(fieldOwner))
	})
}

// newVMI is a running VirtualMachineInstance from a VirtualMachine's template (owned by
// it, unless owner is nil) on node.
func newVMI(namespace, name string, owner *unstructured.Unstructured, template map[string]any, node string) *unstructured.Unstructured {
	template = runtime.DeepCopyJSON(template)
	meta, _, _ := unstructured.NestedMap(template, "metadata")
	annotations, _, _ := unstructured.NestedStringMap(meta, "annotations")
	migratable := corev1.ConditionTrue
	c := map[string]any{"type": conditionLiveMigratable, "status": string(migratable), "lastProbeTime": nil, "lastTransitionTime": nil}
	if annotations[NotMigratableAnnotation] == "true" {
		c["status"], c["reason"], c["message"] = string(corev1.ConditionFalse), "DisksNotLiveMigratable", "simulated: a disk is not shared"
	}
	now := time.Now().UTC().Format(time.RFC3339)
	vmi := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     template["spec"],
		"status": map[string]any{"nodeName": node, "phase": phaseRunning, "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "lastProbeTime": nil, "lastTransitionTime": now}, c,
		}},
	}}
	vmi.SetGroupVersionKind(vmiGVK)
	if len(annotations) > 0 {
		vmi.SetAnnotations(annotations)
	}
	if owner != nil {
		yes := true
		vmi.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: vmGVK.GroupVersion().String(), Kind: vmGVK.Kind, Name: owner.GetName(), UID: owner.GetUID(),
			Controller: &yes, BlockOwnerDeletion: &yes,
		}})
	}
	return vmi
}

func toMaps[T any](items []T) ([]any, error) {
	out := make([]any, 0, len(items))
	for i := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// SetAllocatableMemory reports the node's memory capacity and allocatable memory: the room
// the scheduler model gives VMs there. A node without it takes any number of VMs.
func (s *Simulator) SetAllocatableMemory(ctx context.Context, node, memory string) error {
	q, err := resource.ParseQuantity(memory)
	if err != nil {
		return err
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity": map[string]any{"memory": q.String()}, "allocatable": map[string]any{"memory": q.String()},
	}})
	if err != nil {
		return err
	}
	if err := s.client.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
		client.RawPatch(types.MergePatchType, data), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("set the memory of node %s: %w", node, err)
	}
	s.notify()
	return nil
}

// Migrations are the live migrations each VM (namespace/name) made since the simulator
// started.
func (s *Simulator) Migrations() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.migrated)
}

// Shutdowns are the times each VM (namespace/name) was shut down by a drain.
func (s *Simulator) Shutdowns() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.shutdowns)
}

// BlockingDrain are the VMs (namespace/name) whose eviction the node's drain was refused
// the last time it tried, sorted.
func (s *Simulator) BlockingDrain(node string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.blocking[node]))
}
