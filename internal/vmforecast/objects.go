package vmforecast

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// The VirtualMachineInstance phases after which it runs no more.
const (
	phaseSucceeded = "Succeeded"
	phaseFailed    = "Failed"
)

// conditionLiveMigratable is the VirtualMachineInstance condition that says whether it
// can live-migrate.
const conditionLiveMigratable = "LiveMigratable"

// Instance is what the forecast reads of a VirtualMachineInstance: its name, namespace,
// UID and resourceVersion, and the few fields a drain's outcome depends on. An informer
// keeps thousands of them: an Instance is a few hundred bytes where the object it is read
// from is tens of kilobytes.
type Instance struct {
	instanceMeta
	// Node and Phase are status.nodeName and status.phase.
	Node, Phase string
	// EvictionStrategy is spec.evictionStrategy ("" follows the cluster's).
	EvictionStrategy string
	// LiveMigratable is the LiveMigratable condition; NotMigratableReason says why not.
	LiveMigratable      bool
	NotMigratableReason string
	// MemoryBytes is the guest memory (memoryOf); Invalid says why it could not be read.
	MemoryBytes int64
	Invalid     string
	// NodeSelector, RequiredAffinity and Tolerations are the scheduling the VM keeps.
	NodeSelector     map[string]string
	RequiredAffinity *corev1.NodeSelector
	Tolerations      []corev1.Toleration
}

var _ runtime.Object = (*Instance)(nil)

// GetObjectKind implements runtime.Object: an Instance carries no kind.
func (*Instance) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (in *Instance) DeepCopyObject() runtime.Object {
	out := *in
	out.NodeSelector = maps.Clone(in.NodeSelector)
	out.RequiredAffinity = in.RequiredAffinity.DeepCopy()
	out.Tolerations = slices.Clone(in.Tolerations)
	return &out
}

// Key is namespace/name.
func (in *Instance) Key() string { return in.Namespace + "/" + in.Name }

// Running tells whether it runs on a node: drains leave the others alone.
func (in *Instance) Running() bool {
	return in.Node != "" && in.Phase != phaseSucceeded && in.Phase != phaseFailed
}

// InstanceOf reads an Instance from a VirtualMachineInstance. A field it cannot read is no
// error here: FromInstance returns it, naming the VM.
func InstanceOf(vmi *unstructured.Unstructured) *Instance {
	in := &Instance{}
	in.Name, in.Namespace, in.UID, in.ResourceVersion = vmi.GetName(), vmi.GetNamespace(), vmi.GetUID(), vmi.GetResourceVersion()
	in.Node, _, _ = unstructured.NestedString(vmi.Object, "status", "nodeName")
	in.Phase, _, _ = unstructured.NestedString(vmi.Object, "status", "phase")
	in.EvictionStrategy, _, _ = unstructured.NestedString(vmi.Object, "spec", "evictionStrategy")
	in.LiveMigratable, in.NotMigratableReason = liveMigratable(vmi)
	var spec struct {
		NodeSelector map[string]string   `json:"nodeSelector"`
		Affinity     *corev1.Affinity    `json:"affinity"`
		Tolerations  []corev1.Toleration `json:"tolerations"`
	}
	if raw, found, _ := unstructured.NestedMap(vmi.Object, "spec"); found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			in.Invalid = "read the scheduling: " + err.Error()
		}
	}
	in.NodeSelector, in.Tolerations = spec.NodeSelector, spec.Tolerations
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		in.RequiredAffinity = spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	var err error
	if in.MemoryBytes, err = memoryOf(vmi); err != nil && in.Invalid == "" {
		in.Invalid = "read the memory: " + err.Error()
	}
	return in
}

// FromObjects reads the facts of one VirtualMachineInstance (kubevirt.io/v1) and of the
// VirtualMachine of the same name that owns it (nil when none does). poolNodes are the
// labels of the nodes of its pool, by name: the VM is Pinned when its node selector or
// required node affinity leaves out one of them; without them, when it has either.
// running is false for an instance that is not on a node or has stopped: drains leave it
// alone.
func FromObjects(vmi, vm *unstructured.Unstructured, poolNodes map[string]map[string]string) (facts VM, running bool, err error) {
	return FromInstance(InstanceOf(vmi), vm, poolNodes)
}

// FromInstance is FromObjects from what an informer keeps of the instance.
func FromInstance(in *Instance, vm *unstructured.Unstructured, poolNodes map[string]map[string]string) (facts VM, running bool, err error) {
	facts = VM{Namespace: in.Namespace, Name: in.Name, Node: in.Node, EvictionStrategy: in.EvictionStrategy,
		LiveMigratable: in.LiveMigratable, NotMigratableReason: in.NotMigratableReason, MemoryBytes: in.MemoryBytes}
	describe := func() string { return "VirtualMachineInstance " + facts.Key() }
	if in.Invalid != "" {
		return facts, false, fmt.Errorf("%s: %s", describe(), in.Invalid)
	}
	facts.ToleratesUpdateTaint = Tolerates(in.Tolerations, corev1.Taint{Key: UpdateInProgressTaint, Effect: corev1.TaintEffectPreferNoSchedule})
	facts.Pinned, err = pinned(in.NodeSelector, in.RequiredAffinity, poolNodes)
	if err != nil {
		return facts, false, fmt.Errorf("read the node affinity of %s: %w", describe(), err)
	}
	if vm != nil {
		if vm.GetNamespace() != in.Namespace || vm.GetName() != in.Name {
			return facts, false, fmt.Errorf("VirtualMachine %s/%s does not own %s", vm.GetNamespace(), vm.GetName(), describe())
		}
		facts.RunStrategy = runStrategy(vm)
	}
	return facts, in.Running(), nil
}

// liveMigratable reads the LiveMigratable condition: migratable only when it is True
// (IsMigratable of kubevirt.io/api); otherwise its reason and message say why not.
func liveMigratable(vmi *unstructured.Unstructured) (bool, string) {
	conditions, _, _ := unstructured.NestedSlice(vmi.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != conditionLiveMigratable {
			continue
		}
		if m["status"] == string(corev1.ConditionTrue) {
			return true, ""
		}
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		switch {
		case reason != "" && message != "":
			return false, reason + ": " + message
		case reason != "":
			return false, reason
		}
		return false, message
	}
	return false, "no LiveMigratable condition"
}

// memoryOf is the guest memory: what the guest has now (status.memory.guestCurrent), else
// what it was given (spec.domain.memory.guest), else the memory requested or limited in
// spec.domain.resources.
func memoryOf(vmi *unstructured.Unstructured) (int64, error) {
	for _, path := range [][]string{
		{"status", "memory", "guestCurrent"},
		{"spec", "domain", "memory", "guest"},
		{"spec", "domain", "resources", "requests", "memory"},
		{"spec", "domain", "resources", "limits", "memory"},
	} {
		raw, found, _ := unstructured.NestedFieldNoCopy(vmi.Object, path...)
		if !found || raw == nil {
			continue
		}
		var q resource.Quantity
		var err error
		switch v := raw.(type) {
		case string:
			q, err = resource.ParseQuantity(v)
		case int64:
			q = *resource.NewQuantity(v, resource.BinarySI)
		case float64:
			q = *resource.NewQuantity(int64(v), resource.BinarySI)
		default:
			err = fmt.Errorf("%T is not a quantity", raw)
		}
		if err != nil {
			return 0, fmt.Errorf("%v: %w", path, err)
		}
		return q.Value(), nil
	}
	return 0, nil
}

// runStrategy is the VirtualMachine's run strategy as RunStrategy of kubevirt.io/api reads
// it: spec.runStrategy, else the deprecated spec.running (true: Always, false: Halted),
// else Halted.
func runStrategy(vm *unstructured.Unstructured) string {
	if s, found, _ := unstructured.NestedString(vm.Object, "spec", "runStrategy"); found && s != "" {
		return s
	}
	if running, found, _ := unstructured.NestedBool(vm.Object, "spec", "running"); found && running {
		return RunStrategyAlways
	}
	return RunStrategyHalted
}

// Tolerates tells whether the tolerations tolerate the taint, as ToleratesTaint of
// k8s.io/api/core/v1 decides for the Equal and Exists operators: an empty effect matches
// every effect, an empty key with Exists every key.
func Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	for _, t := range tolerations {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case corev1.TolerationOpExists:
			return true
		case corev1.TolerationOpEqual, "":
			if t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// pinned tells whether the node selector or the required node affinity keeps the VM off
// one of the pool's nodes (without nodes: whether it has either).
func pinned(selector map[string]string, required *corev1.NodeSelector, poolNodes map[string]map[string]string) (bool, error) {
	hasTerms := required != nil && len(required.NodeSelectorTerms) > 0
	if len(poolNodes) == 0 {
		return len(selector) > 0 || hasTerms, nil
	}
	for name, nodeLabels := range poolNodes {
		if !labels.SelectorFromSet(selector).Matches(labels.Set(nodeLabels)) {
			return true, nil
		}
		if !hasTerms {
			continue
		}
		ok, err := MatchesNodeSelector(required, name, nodeLabels)
		if err != nil {
			return false, err
		}
		if !ok {
			return true, nil
		}
	}
	return false, nil
}

// MatchesNodeSelector tells whether the node of that name and labels satisfies the
// required node selector: any of its terms, each with all its expressions and fields
// (metadata.name). A term without requirements matches nothing, as in kube-scheduler.
func MatchesNodeSelector(required *corev1.NodeSelector, name string, nodeLabels map[string]string) (bool, error) {
	for _, term := range required.NodeSelectorTerms {
		if len(term.MatchExpressions)+len(term.MatchFields) == 0 {
			continue
		}
		ok, err := matchesTerm(term, name, nodeLabels)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func matchesTerm(term corev1.NodeSelectorTerm, name string, nodeLabels map[string]string) (bool, error) {
	sel, err := requirements(term.MatchExpressions)
	if err != nil {
		return false, err
	}
	if !sel.Matches(labels.Set(nodeLabels)) {
		return false, nil
	}
	fields, err := requirements(term.MatchFields)
	if err != nil {
		return false, err
	}
	return fields.Matches(labels.Set{"metadata.name": name}), nil
}

var operators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func requirements(exprs []corev1.NodeSelectorRequirement) (labels.Selector, error) {
	sel := labels.NewSelector()
	for _, e := range exprs {
		op, ok := operators[e.Operator]
		if !ok {
			return nil, fmt.Errorf("unknown node selector operator %q", e.Operator)
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*r)
	}
	return sel, nil
}
