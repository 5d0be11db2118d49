package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
)

// inputFingerprint is what counts of one input for the plan: for a CRD which spec it has
// (see crdFingerprint), for a Node the facts the profiles decide from (see nodeFingerprint),
// for anything else its spec and labels. Status and metadata noise never count, so a status
// update is no input change.
func inputFingerprint(gvk schema.GroupVersionKind, obj map[string]any) any {
	labels, _, _ := unstructured.NestedMap(obj, "metadata", "labels")
	switch gvk.GroupKind() {
	case nodeGroupKind:
		strs, _, _ := unstructured.NestedStringMap(obj, "metadata", "labels")
		return nodeFingerprint(strs)
	case crdGroupKind:
		uid, _, _ := unstructured.NestedString(obj, "metadata", "uid")
		// Decoded from JSON: the generation is a float64.
		generation, _, _ := unstructured.NestedFieldNoCopy(obj, "metadata", "generation")
		if f, ok := generation.(float64); ok {
			return crdFingerprint(uid, int64(f))
		}
		return crdFingerprint(uid, 0)
	}
	return map[string]any{"spec": obj["spec"], "labels": labels}
}

var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// crdFingerprint is what counts of a CRD: which object it is and which spec it has. The API
// server increments a CRD's metadata.generation on every change of its spec (served
// versions, schemas) and on no other change, so the two tell its spec apart without
// encoding a schema that runs to megabytes. A CRD deleted and created again is another
// object, even with the same spec.
func crdFingerprint(uid string, generation int64) any {
	return map[string]any{"uid": uid, "generation": generation}
}

// objectFingerprint is inputFingerprint of a read object.
func objectFingerprint(gvk schema.GroupVersionKind, read runtime.Object) any {
	if gvk.GroupKind() == crdGroupKind {
		if m, err := apimeta.Accessor(read); err == nil {
			return crdFingerprint(string(m.GetUID()), m.GetGeneration())
		}
	}
	var obj map[string]any
	raw, err := json.Marshal(read)
	if err != nil || json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return inputFingerprint(gvk, obj)
}

// Inputs returns the objects read that are not among targets (a plan's targets are
// watched for drift instead), and the hash of what counts of them.
func (r *Recorder) Inputs(targets []advisorv1alpha1.TargetReference) ([]advisorv1alpha1.InputReference, string) {
	isTarget := map[readKey]bool{}
	for _, t := range targets {
		gv, _ := schema.ParseGroupVersion(t.APIVersion)
		isTarget[readKey{GVK: gv.WithKind(t.Kind), Namespace: t.Namespace, Name: t.Name}] = true
	}
	r.mu.Lock()
	keys := append([]readKey(nil), r.order...)
	r.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })

	var refs []advisorv1alpha1.InputReference
	var prints []fingerprint
	for _, k := range keys {
		if isTarget[k] {
			continue
		}
		r.mu.Lock()
		e := r.entries[k]
		r.mu.Unlock()
		if e.err != nil && !e.notFound {
			continue
		}
		ref := advisorv1alpha1.InputReference{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: k.Namespace, Name: k.Name}
		if k.List {
			ref.Kind = trimListSuffix(k.GVK.Kind)
		}
		refs = append(refs, ref)
		fp := fingerprint{Ref: ref, Exists: !e.notFound}
		switch {
		case e.notFound:
		case e.sharedList:
			fp.Value = sharedFingerprint(k.GVK, e.shared, isTarget)
		case k.List:
			if entries, ok := listFingerprint(k.GVK, e.obj, isTarget); ok {
				fp.Value = entries
			}
		default:
			fp.Value = objectFingerprint(k.GVK, e.obj)
		}
		prints = append(prints, fp)
	}
	return refs, inputsHash(prints)
}

// fingerprint is what counts of one read for the inputs hash.
type fingerprint struct {
	Ref    advisorv1alpha1.InputReference `json:"ref"`
	Exists bool                           `json:"exists"`
	Value  any                            `json:"value,omitempty"`
}

// listEntry is what counts of one item of a list read.
type listEntry struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// listEntries are the entries of a list read, sorted by key.
type listEntries []listEntry

// listValue is the value of a list's fingerprint: its entries, which encodeEntries hands
// to write one at a time, each after its separating comma, as a JSON array of listEntry
// has them.
type listValue interface {
	encodeEntries(write func([]byte))
}

func (l listEntries) encodeEntries(write func([]byte)) {
	for j, e := range l {
		if j > 0 {
			write([]byte(","))
		}
		write(mustJSON(e))
	}
}

// mustJSON is the JSON of v, which is built from decoded objects: as in HashJSON, one
// that cannot be encoded is a programming error.
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("hash: cannot encode %T: %v", v, err))
	}
	return data
}

// inputsHash is HashJSON(prints), encoded one fingerprint, and one entry of a list, at a
// time: the JSON of thousands of Nodes' labels is never held whole.
func inputsHash(prints []fingerprint) string {
	if len(prints) == 0 {
		return HashJSON(prints)
	}
	h := sha256.New()
	write := func(data []byte) { _, _ = h.Write(data) }
	text := func(s string) { write([]byte(s)) }
	text("[")
	for i, fp := range prints {
		if i > 0 {
			text(",")
		}
		entries, ok := fp.Value.(listValue)
		if !ok {
			write(mustJSON(fp))
			continue
		}
		// The encoding of fingerprint with a slice Value.
		text(`{"ref":`)
		write(mustJSON(fp.Ref))
		text(`,"exists":`)
		write(mustJSON(fp.Exists))
		text(`,"value":[`)
		entries.encodeEntries(write)
		text("]}")
	}
	text("]")
	return hex.EncodeToString(h.Sum(nil))
}

// listFingerprint is what counts of a list read: each item's fingerprint, except that a
// plan's own target counts by its existence only (its fields are watched as drift, and
// the plan's own apply must not read as an input change). A metadata-only list is read
// from its items directly; any other goes through JSON, as inputFingerprint expects.
func listFingerprint(listGVK schema.GroupVersionKind, list runtime.Object, isTarget map[readKey]bool) (listEntries, bool) {
	itemGVK := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	var out listEntries
	add := func(namespace, name string, value func() any) {
		e := listEntry{Key: namespace + "/" + name}
		if !isTarget[readKey{GVK: itemGVK, Namespace: namespace, Name: name}] {
			e.Value = value()
		}
		out = append(out, e)
	}
	if metadata, ok := list.(*metav1.PartialObjectMetadataList); ok {
		out = make(listEntries, 0, len(metadata.Items))
		for i := range metadata.Items {
			m := &metadata.Items[i].ObjectMeta
			add(m.Namespace, m.Name, func() any { return metadataFingerprint(itemGVK, m) })
		}
	} else {
		var obj map[string]any
		raw, err := json.Marshal(list)
		if err != nil || json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
		items, _ := obj["items"].([]any)
		out = make(listEntries, 0, len(items))
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			u := unstructured.Unstructured{Object: m}
			add(u.GetNamespace(), u.GetName(), func() any { return inputFingerprint(itemGVK, m) })
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, true
}

// sharedFingerprint is listFingerprint of the items a cache served: metadata, read as they
// are.
func sharedFingerprint(listGVK schema.GroupVersionKind, items []client.Object, isTarget map[readKey]bool) listEntries {
	itemGVK := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	out := make(listEntries, 0, len(items))
	for _, it := range items {
		e := listEntry{Key: it.GetNamespace() + "/" + it.GetName()}
		if m, ok := it.(*metav1.PartialObjectMetadata); ok && !isTarget[readKey{GVK: itemGVK, Namespace: it.GetNamespace(), Name: it.GetName()}] {
			e.Value = metadataFingerprint(itemGVK, &m.ObjectMeta)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// metadataFingerprint is inputFingerprint of an object read metadata-only: it encodes as
// inputFingerprint's value for the object's JSON does.
func metadataFingerprint(gvk schema.GroupVersionKind, m *metav1.ObjectMeta) any {
	var labels any
	if len(m.Labels) > 0 {
		labels = m.Labels
	}
	switch gvk.GroupKind() {
	case nodeGroupKind:
		return nodeFingerprint(m.Labels)
	case crdGroupKind:
		return crdFingerprint(string(m.UID), m.Generation)
	}
	return map[string]any{"spec": nil, "labels": labels}
}

// nodeFingerprint is what counts of a Node: the labels the profiles decide from
// (nodeconfig.IsFactLabel), nil without any. The operator keeps nothing else of a Node, and
// a change of any other label, or of its status, changes no plan. Labels that are all
// facts (a Node as the operator's cache keeps it) are taken as they are, not copied.
func nodeFingerprint(labels map[string]string) any {
	facts := 0
	for k := range labels {
		if nodeconfig.IsFactLabel(k) {
			facts++
		}
	}
	switch facts {
	case 0:
		return nil
	case len(labels):
		return labels
	}
	kept := make(map[string]string, facts)
	for k, v := range labels {
		if nodeconfig.IsFactLabel(k) {
			kept[k] = v
		}
	}
	return kept
}
