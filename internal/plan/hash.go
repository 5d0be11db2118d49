package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"

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

// canonicalJSON re-encodes raw JSON with sorted keys and every number in one spelling, so
// formatting does not count. The same desired states are hashed in every reconcile of an
// execution: what they encode to is kept by their SHA-256 (see canonicalMemo).
func canonicalJSON(raw []byte) json.RawMessage {
	key := sha256.Sum256(raw)
	canonicalMemo.Lock()
	kept, ok := canonicalMemo.byDigest[key]
	canonicalMemo.Unlock()
	if ok {
		return kept
	}
	out := encodeCanonical(raw)
	canonicalMemo.Lock()
	if len(canonicalMemo.byDigest) >= maxCanonicalMemo {
		canonicalMemo.byDigest = map[[sha256.Size]byte]json.RawMessage{}
	}
	canonicalMemo.byDigest[key] = out
	canonicalMemo.Unlock()
	return out
}

// canonicalMemo keeps the canonical encoding of raw JSON by the raw bytes' SHA-256.
var canonicalMemo = struct {
	sync.Mutex
	byDigest map[[sha256.Size]byte]json.RawMessage
}{byDigest: map[[sha256.Size]byte]json.RawMessage{}}

// maxCanonicalMemo bounds canonicalMemo; when it is full, everything kept goes.
const maxCanonicalMemo = 64

func encodeCanonical(raw []byte) json.RawMessage {
	if !json.Valid(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	v, ok := canonicalNumbers(v)
	if !ok {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// canonicalNumbers replaces every json.Number in v by its value: an int64 when it is an
// integer in int64 range, however it is written (1e3, 1000.0), else a float64. Decoding
// straight to float64 would round integers beyond 2^53, so that desired states differing
// in such an integer would hash the same; and zero, however signed, is 0 (-0.0 would
// encode as -0). ok is false for a number out of float64 range.
func canonicalNumbers(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		return canonicalNumber(string(x))
	case []any:
		for i, e := range x {
			c, ok := canonicalNumbers(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	case map[string]any:
		for k, e := range x {
			c, ok := canonicalNumbers(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	}
	return v, true
}

func canonicalNumber(lit string) (any, bool) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, false
	}
	if f == 0 {
		return int64(0), true
	}
	// An integer written with a fraction or an exponent. f is finite and not zero, so the
	// exponent is no longer than the literal and the exact value is cheap to compute.
	if f == math.Trunc(f) && math.Abs(f) <= math.MaxInt64 {
		if r, ok := new(big.Rat).SetString(lit); ok && r.IsInt() && r.Num().IsInt64() {
			return r.Num().Int64(), true
		}
	}
	return f, true
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

// valuesHash hashes the values of obj (nil: absent) at paths, after normalising it. A
// snapshot (the optimistic lock's hash) also counts the target's user-control annotations,
// and leaves out the managed-by label: see snapshotPath.
func valuesHash(target advisorv1alpha1.TargetReference, paths []FieldPath, obj *unstructured.Unstructured, snapshot bool, ns ...Normalizer) string {
	return hashValues(target, paths, obj, snapshot, snapshot, ns...)
}

// hashValues is valuesHash, with the managed-by label left out (withoutMarks) or not.
func hashValues(target advisorv1alpha1.TargetReference, paths []FieldPath, obj *unstructured.Unstructured, controls, withoutMarks bool, ns ...Normalizer) string {
	v := targetValues{Target: target, Exists: obj != nil}
	norm := normalized(obj, ns...)
	for _, p := range paths {
		if withoutMarks && !snapshotPath(p) {
			continue
		}
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

// snapshotMatches tells whether live still holds what a snapshot hash was taken of. A
// snapshot an earlier operator version took counted the managed-by label too: it matches
// when that hash is the same, so a plan drafted before an upgrade is not stale for it.
func snapshotMatches(hash string, target advisorv1alpha1.TargetReference, paths []FieldPath, live *unstructured.Unstructured, ns ...Normalizer) bool {
	return valuesHash(target, paths, live, true, ns...) == hash || hashValues(target, paths, live, true, false, ns...) == hash
}

// SnapshotHash is the SHA-256 over the canonical JSON of the live values at the paths
// desired manages (but the managed-by label, see snapshotPath), and of the target's
// user-control annotations (live nil: the target does not exist). Fields desired does not
// manage do not count.
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
// pauses name the MachineConfigPools the plan pauses around its batch of rollouts: a pause
// is a write the approval covers too.
func PlanHash(revision int64, items []advisorv1alpha1.PlanItem, pauses ...string) string {
	type entry struct {
		Name      string                          `json:"name"`
		Target    advisorv1alpha1.TargetReference `json:"target"`
		Action    advisorv1alpha1.ItemAction      `json:"action,omitempty"`
		Desired   json.RawMessage                 `json:"desired,omitempty"`
		Diff      string                          `json:"diff"`
		Skipped   bool                            `json:"skipped,omitempty"`
		Conflicts []advisorv1alpha1.FieldConflict `json:"conflicts,omitempty"`
		FoundOn   string                          `json:"conflictsFoundOn,omitempty"`
	}
	entries := make([]entry, 0, len(items))
	for _, it := range items {
		e := entry{Name: it.Name, Target: it.TargetRef, Action: it.Action, Diff: it.Diff, Conflicts: it.Conflicts,
			FoundOn: it.ConflictsFoundOn}
		if it.DesiredState != nil {
			e.Desired = canonicalJSON(it.DesiredState.Raw)
		}
		e.Skipped = it.State == advisorv1alpha1.ItemSkipped
		entries = append(entries, e)
	}
	return HashJSON(struct {
		Revision int64    `json:"revision"`
		Items    []entry  `json:"items"`
		Pauses   []string `json:"pauses,omitempty"`
	}{revision, entries, pauses})
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
