// Package plan turns the items a profile renders into a reviewed, hashed plan and
// executes it: a recorded read of what each plan depends on, the target's user-control
// annotations, a server-side-apply dry-run without force (conflicts with other field
// managers are shown, not taken), a normalised YAML diff, managed field paths, snapshot,
// target and plan hashes, then a real server-side apply per item, idempotent on resume,
// and a health wait.
package plan

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	// FieldManagerPrefix starts the field manager of every profile: each profile applies as
	// "virt-advisor-operator/<profile>", so two profiles that write one object never remove
	// each other's fields, and a conflict names the other profile.
	FieldManagerPrefix = "virt-advisor-operator/"
	// ManagedByLabel marks every object a plan writes; the operator watches only objects
	// that carry it. Every profile sets the same value, so the label is co-owned.
	ManagedByLabel = "advisor.kubevirt.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "virt-advisor-operator"
	// ProfileAnnotationPrefix starts the annotation each profile sets on the objects it
	// writes ("advisor.kubevirt.io/profile.<profile>: managed"); one key per profile, so
	// profiles sharing an object never conflict over it.
	ProfileAnnotationPrefix = "advisor.kubevirt.io/profile."
	// ProfileAnnotationValue is the value of a profile's annotation.
	ProfileAnnotationValue = "managed"
)

// FieldManagerFor is the server-side-apply field manager of a profile.
func FieldManagerFor(profile string) string { return FieldManagerPrefix + profile }

// ProfileOfManager returns the profile a field manager belongs to, if it is one of ours.
func ProfileOfManager(manager string) (string, bool) {
	return strings.CutPrefix(manager, FieldManagerPrefix)
}

// ProfileAnnotation is the annotation a profile sets on the objects it writes.
func ProfileAnnotation(profile string) string { return ProfileAnnotationPrefix + profile }

// Item is one change a profile renders: the desired object (only the fields to manage),
// how disruptive applying it is and what it does, in words. Several items with the same
// Name and target are fragments of one change (for example three components of a profile
// that all write the HyperConverged): they are merged into one plan item before the
// dry-run, so one field manager applies all of them at once.
type Item struct {
	// Name identifies the item in the plan.
	Name string
	// Component names the part of the profile this fragment belongs to, when an item
	// merges several; it is listed in the plan item.
	Component string
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

// TargetKey names a target (or an input) independently of the API version it is read at.
type TargetKey struct {
	Group, Kind, Namespace, Name string
}

// KeyOf is the key of a target reference.
func KeyOf(ref advisorv1alpha1.TargetReference) TargetKey {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return TargetKey{Group: gv.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// GroupKind is the key's group and kind.
func (k TargetKey) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.Group, Kind: k.Kind}
}

func (k TargetKey) String() string {
	gk := k.GroupKind().String()
	if k.Namespace != "" {
		return gk + " " + k.Namespace + "/" + k.Name
	}
	return gk + " " + k.Name
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

// describe names an object in messages and diff headers: Kind namespace/name.
func describe(obj *unstructured.Unstructured) string { return targets.Describe(obj) }

// describeRef names a target reference the same way.
func describeRef(ref advisorv1alpha1.TargetReference) string {
	if ref.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	}
	return fmt.Sprintf("%s %s", ref.Kind, ref.Name)
}

// copyJSON copies an object through JSON, which also turns every number into the int64 or
// float64 the API machinery expects, whatever Go type a profile used.
func copyJSON(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", describe(obj), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", describe(obj), err)
	}
	return out, nil
}

// withOwnershipMarks returns a copy of desired carrying the managed-by label and the
// profile's annotation, so every applied object says who manages which of its fields.
func withOwnershipMarks(desired *unstructured.Unstructured, profile string) (*unstructured.Unstructured, error) {
	out, err := copyJSON(desired)
	if err != nil {
		return nil, err
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
	annotations[ProfileAnnotation(profile)] = ProfileAnnotationValue
	out.SetAnnotations(annotations)
	return out, nil
}

// DesiredObject decodes an item's desired state.
func DesiredObject(item advisorv1alpha1.PlanItem) (*unstructured.Unstructured, error) {
	if item.DesiredState == nil || len(item.DesiredState.Raw) == 0 {
		return nil, fmt.Errorf("%w: item %q has no desired state", ErrInvalidPlan, item.Name)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(item.DesiredState.Raw); err != nil {
		return nil, fmt.Errorf("%w: decode desired state of item %q: %v", ErrInvalidPlan, item.Name, err)
	}
	return obj, nil
}

// MergeFragments merges the fragments of each item as a draft does (see Item), keeping the
// items in order; fragments that set one field to two values are an error.
func MergeFragments(items []Item) ([]Item, error) { return mergeFragments(items) }
