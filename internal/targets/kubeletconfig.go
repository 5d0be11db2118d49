package targets

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readKubeletConfig reads the live KubeletConfig desired was applied to: nil with the
// verdict when it decides the check (deleted, or failed).
func readKubeletConfig(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (*unstructured.Unstructured, Health, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	if err := reader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, Health{State: Unhealthy, Message: fmt.Sprintf(
				"KubeletConfig %s does not exist any more: nothing rolls it out", desired.GetName())}, nil
		}
		return nil, Health{}, fmt.Errorf("read %s: %w", Describe(desired), err)
	}
	if failed := kubeletConfigFailure(live); failed != "" {
		return nil, Health{State: Unhealthy, Message: failed}, nil
	}
	return live, Health{}, nil
}

// kubeletConfigProcessed tells whether the Machine Config Operator handled the
// KubeletConfig's latest generation, and says so when it has not.
func kubeletConfigProcessed(kc *unstructured.Unstructured) (string, bool) {
	// The kubelet-config controller writes observedGeneration with the condition of each
	// pass (syncStatusOnly): a Success at the KubeletConfig's generation means the
	// MachineConfigs generated from it hold that generation.
	observed, _, _ := unstructured.NestedInt64(kc.Object, "status", "observedGeneration")
	conditions, _, _ := unstructured.NestedSlice(kc.Object, "status", "conditions")
	var last map[string]any
	if len(conditions) > 0 {
		last, _ = conditions[len(conditions)-1].(map[string]any)
	}
	if observed < kc.GetGeneration() || last["type"] != "Success" {
		return fmt.Sprintf("the Machine Config Operator has not processed KubeletConfig %s's generation %d yet",
			kc.GetName(), kc.GetGeneration()), false
	}
	return "", true
}

// The MachineConfig the Machine Config Operator generates from a KubeletConfig for a pool
// is 99-<pool>-generated-kubelet, with "-<suffix>" when the KubeletConfig's mc-name-suffix
// annotation is not empty, and the KubeletConfig as its controller owner
// (getManagedKubeletConfigKey and syncKubeletConfig in pkg/controller/kubelet-config).
const mcNameSuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"

// generatedMachineConfig reads the MachineConfig generated from the KubeletConfig kc for
// pool; nil, with a message saying so, when there is none yet.
func generatedMachineConfig(ctx context.Context, reader client.Reader, kc *unstructured.Unstructured, pool string) (*unstructured.Unstructured, string, error) {
	notYet := fmt.Sprintf("the Machine Config Operator has not generated the MachineConfig of KubeletConfig %s for MachineConfigPool %s yet", kc.GetName(), pool)
	prefix := "99-" + pool + "-generated-kubelet"
	name := ""
	if suffix, ok := kc.GetAnnotations()[mcNameSuffixAnnotation]; ok {
		name = prefix
		if suffix != "" {
			name += "-" + suffix
		}
	} else {
		// Without the annotation the name is not known: the one of the pool's generated
		// MachineConfigs that the KubeletConfig controls. Listed by metadata only, as
		// rendered MachineConfigs are large.
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(MachineConfig.ListGVK(MachineConfig.GVK.Version))
		if err := reader.List(ctx, list); err != nil {
			return nil, "", fmt.Errorf("list MachineConfigs: %w", err)
		}
		for i := range list.Items {
			if n := list.Items[i].GetName(); (n == prefix || strings.HasPrefix(n, prefix+"-")) && controlledBy(&list.Items[i], kc) {
				name = n
				break
			}
		}
		if name == "" {
			return nil, notYet, nil
		}
	}
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(MachineConfig.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notYet, nil
		}
		return nil, "", fmt.Errorf("read MachineConfig %s: %w", name, err)
	}
	if !controlledBy(mc, kc) {
		return nil, notYet, nil
	}
	return mc, "", nil
}

// controlledBy tells whether owner is obj's controller, by UID.
func controlledBy(obj metav1.Object, owner metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == owner.GetUID()
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
