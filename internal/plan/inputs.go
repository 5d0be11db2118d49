package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// readScheme knows the typed kinds profiles read (CRDs, nodes); everything else is read
// unstructured and names its own kind.
var readScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Recorder is the reader a profile renders through. It reads uncached, keeps what it read
// (so the engine drafts against exactly the objects the profile saw, without reading them
// twice, and concurrent items share one read), and tells the plan what it depended on: the
// objects it read and a hash of the parts of them that count. It is safe for concurrent
// use.
type Recorder struct {
	reader client.Reader

	mu      sync.Mutex
	entries map[readKey]*readEntry
	order   []readKey
}

// readKey names one read: an object, or a list of a kind (Name empty).
type readKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	List      bool
}

type readEntry struct {
	once sync.Once
	// obj is what was read, never handed out itself (readers get copies); nil with notFound
	// for an object that does not exist.
	obj      runtime.Object
	notFound bool
	err      error
}

// NewRecorder records the reads of one draft through reader.
func NewRecorder(reader client.Reader) *Recorder {
	return &Recorder{reader: reader, entries: map[readKey]*readEntry{}}
}

var _ client.Reader = (*Recorder)(nil)

func gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk, nil
	}
	return apiutil.GVKForObject(obj, readScheme)
}

func (r *Recorder) entry(k readKey) *readEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[k]
	if !ok {
		e = &readEntry{}
		r.entries[k] = e
		r.order = append(r.order, k)
	}
	return e
}

// Get implements client.Reader: the first Get of an object reads it; later ones return a
// copy of what that read returned (including NotFound).
func (r *Recorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := gvkOf(obj)
	if err != nil {
		return err
	}
	e := r.entry(readKey{GVK: gvk, Namespace: key.Namespace, Name: key.Name})
	e.once.Do(func() {
		fresh := obj.DeepCopyObject().(client.Object)
		err := r.reader.Get(ctx, key, fresh, opts...)
		switch {
		case apierrors.IsNotFound(err):
			e.notFound, e.err = true, err
		case err != nil:
			e.err = err
		default:
			e.obj = fresh
		}
	})
	if e.err != nil {
		return e.err
	}
	return copyInto(e.obj, obj, gvk)
}

// List implements client.Reader; only the namespace option is honoured for recording.
func (r *Recorder) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := gvkOf(list)
	if err != nil {
		return err
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	e := r.entry(readKey{GVK: gvk, Namespace: lo.Namespace, List: true})
	e.once.Do(func() {
		fresh := list.DeepCopyObject().(client.ObjectList)
		if e.err = r.reader.List(ctx, fresh, opts...); e.err == nil {
			e.obj = fresh
		}
	})
	if e.err != nil {
		return e.err
	}
	return copyInto(e.obj, list, gvk)
}

// copyInto gives a reader its own copy of what was read: a deep copy into an object of
// the same type, else through JSON.
func copyInto(read, obj runtime.Object, gvk schema.GroupVersionKind) error {
	if reflect.TypeOf(read) != reflect.TypeOf(obj) {
		raw, err := json.Marshal(read)
		if err != nil {
			return err
		}
		return decodeInto(raw, obj, gvk)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(read.DeepCopyObject()).Elem())
	if _, ok := obj.(runtime.Unstructured); ok {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

func decodeInto(raw []byte, obj runtime.Object, gvk schema.GroupVersionKind) error {
	if u, ok := obj.(runtime.Unstructured); ok {
		if err := json.Unmarshal(raw, u); err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return nil
	}
	return json.Unmarshal(raw, obj)
}

// live returns what the recorder read for a target, or reads it now. nil means the target
// does not exist.
func (r *Recorder) live(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(desired.GroupVersionKind())
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", describe(desired), err)
	}
	return u, nil
}

// inputFingerprint is what counts of one input for the plan: for a CRD which spec it has
// (see crdFingerprint), for a Node its labels (hardware facts), for anything else its spec
// and labels. Status and metadata noise never count, so a status update is no input change.
func inputFingerprint(gvk schema.GroupVersionKind, obj map[string]any) any {
	labels, _, _ := unstructured.NestedMap(obj, "metadata", "labels")
	switch gvk.GroupKind() {
	case schema.GroupKind{Group: "", Kind: "Node"}:
		return labels
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

	type fingerprint struct {
		Ref    advisorv1alpha1.InputReference `json:"ref"`
		Exists bool                           `json:"exists"`
		Value  any                            `json:"value,omitempty"`
	}
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
		case k.List:
			var obj map[string]any
			if raw, err := json.Marshal(e.obj); err == nil && json.Unmarshal(raw, &obj) == nil {
				fp.Value = listFingerprint(k.GVK, obj, isTarget)
			}
		default:
			fp.Value = objectFingerprint(k.GVK, e.obj)
		}
		prints = append(prints, fp)
	}
	return refs, HashJSON(prints)
}

// listFingerprint is what counts of a list read: each item's fingerprint, except that a
// plan's own target counts by its existence only (its fields are watched as drift, and
// the plan's own apply must not read as an input change).
func listFingerprint(listGVK schema.GroupVersionKind, list map[string]any, isTarget map[readKey]bool) any {
	items, _, _ := unstructured.NestedSlice(list, "items")
	itemGVK := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	type entry struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	out := make([]entry, 0, len(items))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		u := unstructured.Unstructured{Object: m}
		e := entry{Key: u.GetNamespace() + "/" + u.GetName()}
		if !isTarget[readKey{GVK: itemGVK, Namespace: u.GetNamespace(), Name: u.GetName()}] {
			e.Value = inputFingerprint(itemGVK, m)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func trimListSuffix(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}
