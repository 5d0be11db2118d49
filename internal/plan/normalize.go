package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Normalizer rewrites an object before it is compared. The same normalizers run on the live
// object and on the planned one before the diff, the snapshot hash, the target hash and the
// drift check, so a field left out means the same thing in all of them.
type Normalizer interface {
	Normalize(obj map[string]any)
}

// serverMaintained strips what the API server maintains on every object (it changes without
// anybody changing the object) and the status, which a plan never sets.
type serverMaintained struct{}

// noiseMetadata are the metadata fields serverMaintained strips.
var noiseMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

func (serverMaintained) Normalize(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range noiseMetadata {
			delete(md, f)
		}
	}
	delete(obj, "status")
}

// ignoredFields leaves out the fields a target's advisor.kubevirt.io/ignore-fields
// annotation hands to the user.
type ignoredFields []Pointer

func (f ignoredFields) Normalize(obj map[string]any) {
	for _, p := range f {
		p.remove(obj)
	}
}

// normalized returns a normalised deep copy of obj; nil stays nil.
func normalized(obj *unstructured.Unstructured, ns ...Normalizer) map[string]any {
	if obj == nil {
		return nil
	}
	out := runtime.DeepCopyJSON(obj.Object)
	serverMaintained{}.Normalize(out)
	for _, n := range ns {
		n.Normalize(out)
	}
	return out
}
