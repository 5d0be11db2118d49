package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// fieldValue is one managed field of a live target: its value, or the fact that it is
// absent. Absence is recorded explicitly, so a field that appears or disappears between
// review and apply changes the hash.
type fieldValue struct {
	Path    string `json:"path"`
	Present bool   `json:"present"`
	Value   any    `json:"value,omitempty"`
}

// targetSnapshot is what the optimistic lock compares for one target.
type targetSnapshot struct {
	Target advisorv1alpha1.TargetReference `json:"target"`
	Exists bool                            `json:"exists"`
	Fields []fieldValue                    `json:"fields"`
}

// SnapshotHash is the SHA-256 over the canonical JSON of the live values at the paths
// desired manages (live nil: the target does not exist). Fields desired does not manage
// do not count.
func SnapshotHash(desired, live *unstructured.Unstructured) string {
	snap := targetSnapshot{Target: TargetOf(desired), Exists: live != nil}
	for _, p := range ManagedPaths(desired) {
		fv := fieldValue{Path: p.String()}
		if live != nil {
			fv.Value, fv.Present = valueAt(live.Object, p)
		}
		snap.Fields = append(snap.Fields, fv)
	}
	return hashJSON(snap)
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
	return hashJSON(entries)
}

// PlanHash is the SHA-256 over the items' names, targets, desired states and diffs, in
// plan order: pinning an approval to it pins exactly what the reviewer saw.
func PlanHash(items []advisorv1alpha1.PlanItem) string {
	type entry struct {
		Name    string                          `json:"name"`
		Target  advisorv1alpha1.TargetReference `json:"target"`
		Desired json.RawMessage                 `json:"desired,omitempty"`
		Diff    string                          `json:"diff"`
		Skipped bool                            `json:"skipped,omitempty"`
	}
	entries := make([]entry, 0, len(items))
	for _, it := range items {
		e := entry{Name: it.Name, Target: it.TargetRef, Diff: it.Diff}
		if it.DesiredState != nil {
			e.Desired = canonicalJSON(it.DesiredState.Raw)
		}
		e.Skipped = it.State == advisorv1alpha1.ItemSkipped
		entries = append(entries, e)
	}
	return hashJSON(entries)
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
	return hashJSON(entries)
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

func hashJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value hashed here is built from JSON-decoded data; failing to encode it
		// again is a programming error.
		panic(fmt.Sprintf("hash: cannot encode %T: %v", v, err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
