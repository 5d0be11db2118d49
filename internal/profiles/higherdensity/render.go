package higherdensity

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// RenderItems is the plan for the options o on a cluster that reads as in: a pure
// function, so every combination is tested without a cluster.
func RenderItems(o *advisorv1alpha1.VirtHigherDensityOptions, in Inputs) ([]plan.Item, error) {
	var items []plan.Item
	if *o.EnableSwap {
		items = append(items, swapItem(o.SwapPartitionLabel))
	}
	hco, err := hyperConvergedItem(o, in)
	if err != nil {
		return nil, err
	}
	return append(items, hco), nil
}

func swapItem(label string) plan.Item {
	return plan.Item{
		Name:    ItemSwap,
		Desired: nodeconfig.SwapMachineConfig(label),
		Impact:  advisorv1alpha1.ImpactHigh,
		Message: nodeconfig.SwapMessage(label),
	}
}

func hyperConvergedItem(o *advisorv1alpha1.VirtHigherDensityOptions, in Inputs) (plan.Item, error) {
	fields := targets.HyperConvergedFields{Version: in.Version}
	desired := &unstructured.Unstructured{Object: map[string]any{}}
	desired.SetAPIVersion(targets.HyperConverged.GVK.Group + "/" + in.Version)
	desired.SetKind(targets.HyperConverged.GVK.Kind)
	desired.SetNamespace(in.Namespace)
	desired.SetName(in.Name)

	ratio := int64(*o.MemoryToRequestRatio)
	if err := unstructured.SetNestedField(desired.Object, ratio, fields.MemoryOvercommitPercentage()...); err != nil {
		return plan.Item{}, err
	}
	current := "unset (100)"
	if in.Overcommit != nil {
		current = fmt.Sprint(*in.Overcommit)
	}
	parts := []string{fmt.Sprintf("memoryOvercommitPercentage %s → %d: VMs started or live-migrated after the change see %d%% "+
		"of the memory their pod requests; running VMs keep what they see until they restart or migrate", current, ratio, ratio)}

	if ksm := o.KSMConfiguration; *ksm.Enabled {
		selector, err := selectorMap(ksm)
		if err != nil {
			return plan.Item{}, err
		}
		if err := unstructured.SetNestedField(desired.Object, map[string]any{"nodeLabelSelector": selector},
			fields.KSMConfiguration()...); err != nil {
			return plan.Item{}, err
		}
		parts = append(parts, fmt.Sprintf("Kernel Samepage Merging on %s, now %s: running VMs' identical memory "+
			"pages are merged in the background, which costs some CPU on those nodes", describeSelector(selector), currentKSM(in)))
	} else {
		parts = append(parts, "Kernel Samepage Merging is not configured by this profile (ksmConfiguration.enabled: false): "+
			"a ksmConfiguration it set before is removed; one set by someone else stays")
	}
	return plan.Item{
		Name:    ItemHyperConverged,
		Desired: desired,
		Impact:  advisorv1alpha1.ImpactMedium,
		Message: fmt.Sprintf("HyperConverged %s/%s (%s): %s", in.Namespace, in.Name, in.Version, strings.Join(parts, "; ")),
	}, nil
}

// selectorMap is the label selector as the HyperConverged stores it.
func selectorMap(ksm *advisorv1alpha1.KSMConfiguration) (map[string]any, error) {
	if ksm.NodeLabelSelector == nil {
		return map[string]any{}, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ksm.NodeLabelSelector)
	if err != nil {
		return nil, fmt.Errorf("convert ksmConfiguration.nodeLabelSelector: %w", err)
	}
	return m, nil
}

// currentKSM says where the HyperConverged runs KSM now.
func currentKSM(in Inputs) string {
	if in.KSM == nil {
		return "off"
	}
	selector, _, _ := unstructured.NestedMap(in.KSM, "nodeLabelSelector")
	return "on " + describeSelector(selector)
}

func describeSelector(selector map[string]any) string {
	if len(selector) == 0 {
		return "every node (nodeLabelSelector {})"
	}
	raw, _ := json.Marshal(selector)
	return "the nodes matching " + string(raw)
}
