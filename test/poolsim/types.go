package poolsim

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kinds of the Machine Config Operator the simulator reads and writes, and the keys it
// uses on them (pkg/daemon/constants and pkg/controller/common of the operator).
var (
	poolGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	machineConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	kubeletConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"}
	nodeGVK          = corev1.SchemeGroupVersion.WithKind("Node")
)

const (
	// CurrentConfigAnnotation is the rendered configuration a node runs.
	CurrentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
	// DesiredConfigAnnotation is the rendered configuration the node controller targets a node at.
	DesiredConfigAnnotation = "machineconfiguration.openshift.io/desiredConfig"
	// StateAnnotation is the Machine Config Daemon's state on the node: Done, Working or Degraded.
	StateAnnotation = "machineconfiguration.openshift.io/state"
	// ReasonAnnotation says why a node is Degraded.
	ReasonAnnotation = "machineconfiguration.openshift.io/reason"
	// MCNameSuffixAnnotation is the annotation the kubelet config controller gives a KubeletConfig.
	MCNameSuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"

	// The Machine Config Daemon's states.
	StateDone           = "Done"
	StateWorking        = "Working"
	StateDegraded       = "Degraded"
	stateUnreconcilable = "Unreconcilable"

	roleLabel = "machineconfiguration.openshift.io/role"
	// generatedByAnnotation marks the MachineConfigs a controller of the operator generated.
	generatedByAnnotation = "machineconfiguration.openshift.io/generated-by-controller-version"
	// generatedBy is the controller version the simulator writes in generatedByAnnotation.
	generatedBy = "poolsim"
)

// The condition types of a MachineConfigPool and of a KubeletConfig.
const (
	conditionUpdated        = "Updated"
	conditionUpdating       = "Updating"
	conditionDegraded       = "Degraded"
	conditionNodeDegraded   = "NodeDegraded"
	conditionRenderDegraded = "RenderDegraded"
	conditionSuccess        = "Success"
	conditionFailure        = "Failure"
)

// pool is the part of a MachineConfigPool the simulator reads and writes.
type pool struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              poolSpec   `json:"spec"`
	Status            poolStatus `json:"status"`
}

type poolSpec struct {
	MachineConfigSelector *metav1.LabelSelector `json:"machineConfigSelector,omitempty"`
	NodeSelector          *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	Paused                bool                  `json:"paused,omitempty"`
	MaxUnavailable        *intstr.IntOrString   `json:"maxUnavailable,omitempty"`
	Configuration         configuration         `json:"configuration"`
}

// configuration is a rendered MachineConfig and the MachineConfigs it was rendered from.
type configuration struct {
	Name string `json:"name"`
	// Source is written as null when empty, so that a merge patch replaces it.
	Source []corev1.ObjectReference `json:"source"`
}

type poolStatus struct {
	ObservedGeneration      int64         `json:"observedGeneration"`
	Configuration           configuration `json:"configuration"`
	MachineCount            int32         `json:"machineCount"`
	UpdatedMachineCount     int32         `json:"updatedMachineCount"`
	ReadyMachineCount       int32         `json:"readyMachineCount"`
	UnavailableMachineCount int32         `json:"unavailableMachineCount"`
	DegradedMachineCount    int32         `json:"degradedMachineCount"`
	Conditions              []condition   `json:"conditions"`
}

// condition is a condition of a MachineConfigPool or of a KubeletConfig (both kinds have
// these fields).
type condition struct {
	Type               string                 `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
}

// machineConfig is a MachineConfig; Config holds its Ignition config as it is stored.
type machineConfig struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              machineConfigSpec `json:"spec"`
}

type machineConfigSpec struct {
	OSImageURL                     string         `json:"osImageURL,omitempty"`
	BaseOSExtensionsContainerImage string         `json:"baseOSExtensionsContainerImage,omitempty"`
	Config                         map[string]any `json:"config,omitempty"`
	KernelArguments                []string       `json:"kernelArguments,omitempty"`
	Extensions                     []string       `json:"extensions,omitempty"`
	FIPS                           bool           `json:"fips,omitempty"`
	KernelType                     string         `json:"kernelType,omitempty"`
}

// kubeletConfig is a KubeletConfig; spec is its whole spec as it is stored.
type kubeletConfig struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		MachineConfigPoolSelector *metav1.LabelSelector `json:"machineConfigPoolSelector,omitempty"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64       `json:"observedGeneration"`
		Conditions         []condition `json:"conditions"`
	} `json:"status"`
	spec map[string]any
}

// decode reads an object of the API into one of the types above.
func decode(u *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// encode turns v into an object of the API of that kind.
func encode(gvk schema.GroupVersionKind, v any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	fields["apiVersion"], fields["kind"] = gvk.GroupVersion().String(), gvk.Kind
	if data, err = json.Marshal(fields); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// findCondition returns the condition of that type, or nil.
func findCondition(conditions []condition, condType string) *condition {
	for i := range conditions {
		if conditions[i].Type == condType {
			return &conditions[i]
		}
	}
	return nil
}

// setCondition sets a pool condition as SetMachineConfigPoolCondition
// (pkg/apihelpers) does: unchanged when type, status, reason and message are the same; the
// transition time kept when only the reason or message changes; a changed condition moves
// to the end of the list.
func setCondition(conditions []condition, c condition) []condition {
	current := findCondition(conditions, c.Type)
	if current != nil && current.Status == c.Status && current.Reason == c.Reason && current.Message == c.Message {
		return conditions
	}
	if current != nil && current.Status == c.Status {
		c.LastTransitionTime = current.LastTransitionTime
	} else {
		c.LastTransitionTime = metav1.Now().Rfc3339Copy()
	}
	out := make([]condition, 0, len(conditions)+1)
	for _, existing := range conditions {
		if existing.Type != c.Type {
			out = append(out, existing)
		}
	}
	return append(out, c)
}
