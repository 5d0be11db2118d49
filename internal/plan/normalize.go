package plan

import (
	"sort"
	"strconv"
	"strings"

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
// anybody changing the object), the profiles' ownership annotations, and the status, which
// a plan never sets.
type serverMaintained struct{}

// noiseMetadata are the metadata fields serverMaintained strips.
var noiseMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

func (serverMaintained) Normalize(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range noiseMetadata {
			delete(md, f)
		}
		// A profile's ownership annotation is no value of any plan (see profileMark): a
		// controller that rewrites a target's annotations leaves nothing to change.
		if ann, ok := md["annotations"].(map[string]any); ok {
			for k := range ann {
				if strings.HasPrefix(k, ProfileAnnotationPrefix) {
					delete(ann, k)
				}
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	delete(obj, "status")
}

// ignoredFields leaves out the fields a target's advisor.kubevirt.io/ignore-fields
// annotation hands to the user.
type ignoredFields []Pointer

func (f ignoredFields) Normalize(obj map[string]any) {
	// Removing an array element shifts the ones after it: remove the highest indices
	// first, so every pointer still names the element it named in the object as it was.
	ordered := append([]Pointer(nil), f...)
	sort.SliceStable(ordered, func(i, j int) bool { return laterPointer(ordered[i], ordered[j]) })
	for _, p := range ordered {
		p.remove(obj)
	}
}

// laterPointer orders pointers so that, token by token, array indices compare as numbers
// and the larger comes first; a pointer comes before its own prefix.
func laterPointer(a, b Pointer) bool {
	for k := 0; k < len(a.tokens) && k < len(b.tokens); k++ {
		x, y := a.tokens[k], b.tokens[k]
		if x == y {
			continue
		}
		xi, xerr := strconv.Atoi(x)
		yi, yerr := strconv.Atoi(y)
		if xerr == nil && yerr == nil {
			return xi > yi
		}
		return x > y
	}
	return len(a.tokens) > len(b.tokens)
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
