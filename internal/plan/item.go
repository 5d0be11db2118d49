// Package plan turns the items a profile renders into a reviewed, hashed plan and
// executes it: uncached read of each target, server-side-apply dry-run, normalised YAML
// diff, managed field paths, snapshot and plan hashes, then real server-side apply and a
// health wait per item.
package plan

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

const (
	// FieldManager owns, through server-side apply, exactly the fields a plan sets.
	FieldManager = "virt-advisor-operator"
	// ManagedByLabel marks every object a plan writes; the operator watches only objects
	// that carry it.
	ManagedByLabel = "advisor.kubevirt.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "virt-advisor-operator"
	// ProfileAnnotation names the profile whose plan wrote the object.
	ProfileAnnotation = "advisor.kubevirt.io/profile"
)

// Item is one change a profile renders: the desired object (only the fields to manage),
// how disruptive applying it is and what it does, in words.
type Item struct {
	// Name identifies the item in the plan.
	Name string
	// Desired holds apiVersion, kind, name, namespace and the fields to manage.
	Desired *unstructured.Unstructured
	// Impact is the disruption applying the item causes when it changes something.
	Impact advisorv1alpha1.ImpactSeverity
	// Message says what the item does.
	Message string
	// SkipReason, when set, makes the item Skipped with this message (for example when the
	// operator that owns the target kind is not installed).
	SkipReason string
}

// TargetOf names the object a desired state is for.
func TargetOf(obj *unstructured.Unstructured) advisorv1alpha1.TargetReference {
	return advisorv1alpha1.TargetReference{
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Name:       obj.GetName(),
		Namespace:  obj.GetNamespace(),
	}
}

// withOwnershipMarks returns a copy of desired carrying the managed-by label and the
// profile annotation, so every applied object says who manages which of its fields.
func withOwnershipMarks(desired *unstructured.Unstructured, profile string) (*unstructured.Unstructured, error) {
	// A JSON round trip copies the object and turns every number into the int64 or
	// float64 the API machinery expects, whatever Go type the profile used.
	raw, err := json.Marshal(desired.Object)
	if err != nil {
		return nil, fmt.Errorf("encode desired %s: %w", describe(desired), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode desired %s: %w", describe(desired), err)
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedByValue
	out.SetLabels(labels)
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ProfileAnnotation] = profile
	out.SetAnnotations(annotations)
	return out, nil
}
