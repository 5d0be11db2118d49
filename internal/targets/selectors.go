package targets

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// machineConfigSelects: the pool's machineConfigSelector matches the MachineConfig's labels.
func machineConfigSelects(pool, mc *unstructured.Unstructured) bool {
	return selectorMatches(pool.Object, []string{"spec", "machineConfigSelector"}, mc.GetLabels())
}

// KubeletConfigSelects tells whether the KubeletConfig's machineConfigPoolSelector selects the
// pool; an empty or missing selector selects none.
func KubeletConfigSelects(pool, kc *unstructured.Unstructured) bool {
	return selectorMatches(kc.Object, []string{"spec", "machineConfigPoolSelector"}, pool.GetLabels())
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
