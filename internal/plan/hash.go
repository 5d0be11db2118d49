package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// HashJSON is the SHA-256, as lowercase hex, of v's canonical JSON: maps are encoded with
// sorted keys and every number decoded from JSON encodes the same way whatever its
// original formatting, so key order and number spelling never change a hash. It is the one
// hash every plan, snapshot, input and spec hash goes through.
func HashJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value hashed here is built from JSON-decoded data or plain structs;
		// failing to encode it is a programming error.
		panic(fmt.Sprintf("hash: cannot encode %T: %v", v, err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON re-encodes raw JSON with sorted keys, so formatting does not count.
func canonicalJSON(raw []byte) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// fieldValue is one managed field of a target: its value, or the fact that it is absent.
// Absence is recorded explicitly, so a field that appears or disappears changes the hash.
type fieldValue struct {
	Path    string `json:"path"`
	Present bool   `json:"present"`
	Value   any    `json:"value,omitempty"`
}

// targetValues is what a snapshot or target hash covers for one target.
type targetValues struct {
	Target advisorv1alpha1.TargetReference `json:"target"`
	Exists bool                            `json:"exists"`
	Fields []fieldValue                    `json:"fields"`
	// Controls are the target's user-control annotations: changing them changes the plan.
	Controls map[string]string `json:"controls,omitempty"`
}

// valuesHash hashes the values of obj (nil: absent) at paths, after normalising it. With
// controls, the target's user-control annotations count too.
func valuesHash(target advisorv1alpha1.TargetReference, paths []FieldPath, obj *unstructured.Unstructured, controls bool, ns ...Normalizer) string {
	v := targetValues{Target: target, Exists: obj != nil}
	norm := normalized(obj, ns...)
	for _, p := range paths {
		fv := fieldValue{Path: p.String()}
		if norm != nil {
			fv.Value, fv.Present = valueAt(norm, p)
		}
		v.Fields = append(v.Fields, fv)
	}
	if controls && obj != nil {
		v.Controls = controlAnnotations(obj)
	}
	return HashJSON(v)
}

// SnapshotHash is the SHA-256 over the canonical JSON of the live values at the paths
// desired manages, and of the target's user-control annotations (live nil: the target
// does not exist). Fields desired does not manage do not count.
func SnapshotHash(desired, live *unstructured.Unstructured) string {
	return valuesHash(TargetOf(desired), ManagedPaths(desired), live, true)
}

// ValuesHash is the SHA-256 of obj's values at the paths desired manages (obj nil: the
// target does not exist): what an apply of desired left on its target, as
// status.items[].applied.hash records it.
func ValuesHash(desired, obj *unstructured.Unstructured) string {
	return valuesHash(TargetOf(desired), ManagedPaths(desired), obj, false)
}

// CombinedSnapshotHash folds the items' snapshot hashes, in plan order, into the plan's
// sourceSnapshotHash. Skipped items take part with their name only.
func CombinedSnapshotHash(items []advisorv1alpha1.PlanItem) string {
	type entry struct {
		Name string `json:"name"`
		Hash string `json:"hash"`
	}
	entries := make([]entry, 0, len(items))
	for _, it := range items {
		entries = append(entries, entry{Name: it.Name, Hash: it.SnapshotHash})
	}
	return HashJSON(entries)
}

// PlanHash is the SHA-256 over the plan's revision and its items' names, targets,
// actions, desired states, diffs and conflicts, in plan order: pinning an approval to it
// pins exactly what the reviewer saw, and the revision makes every plan shown a plan of
// its own (an approval given for one never approves a later one with equal content).
func PlanHash(revision int64, items []advisorv1alpha1.PlanItem) string {
	type entry struct {
		Name      string                          `json:"name"`
		Target    advisorv1alpha1.TargetReference `json:"target"`
		Action    advisorv1alpha1.ItemAction      `json:"action,omitempty"`
		Desired   json.RawMessage                 `json:"desired,omitempty"`
		Diff      string                          `json:"diff"`
		Skipped   bool                            `json:"skipped,omitempty"`
		Conflicts []advisorv1alpha1.FieldConflict `json:"conflicts,omitempty"`
	}
	entries := make([]entry, 0, len(items))
	for _, it := range items {
		e := entry{Name: it.Name, Target: it.TargetRef, Action: it.Action, Diff: it.Diff, Conflicts: it.Conflicts}
		if it.DesiredState != nil {
			e.Desired = canonicalJSON(it.DesiredState.Raw)
		}
		e.Skipped = it.State == advisorv1alpha1.ItemSkipped
		entries = append(entries, e)
	}
	return HashJSON(struct {
		Revision int64   `json:"revision"`
		Items    []entry `json:"items"`
	}{revision, entries})
}

// DesiredHash is the SHA-256 over the items' names and desired states only. Two operator
// versions that render the same desired content have the same DesiredHash, whatever
// their impact or message texts.
func DesiredHash(items []advisorv1alpha1.PlanItem) string {
	type entry struct {
		Name    string          `json:"name"`
		Desired json.RawMessage `json:"desired,omitempty"`
	}
	entries := make([]entry, 0, len(items))
	for _, it := range items {
		e := entry{Name: it.Name}
		if it.DesiredState != nil {
			e.Desired = canonicalJSON(it.DesiredState.Raw)
		}
		entries = append(entries, e)
	}
	return HashJSON(entries)
}
