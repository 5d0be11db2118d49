package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// What is kept of the items, and handed to readers, is reduced as keepOfItems says.
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
		// A caller that pages itself gets the page it asked for.
		paged := lo.Limit == 0 && lo.Continue == ""
		if e.err = r.readList(ctx, fresh, gvk, opts, paged); e.err == nil {
			e.obj = fresh
		}
	})
	if e.err != nil {
		return e.err
	}
	return copyInto(e.obj, list, gvk)
}

// listPageSize is how many objects one list request asks for: a list of thousands of
// Nodes is read a page at a time, each page reduced (keepOfItems) before the next arrives,
// so the full responses never sit in memory together.
const listPageSize = 100

// readList reads the list into fresh, page by page when paged (else in one request),
// keeping of each item what keepOfItems says.
func (r *Recorder) readList(ctx context.Context, fresh client.ObjectList, gvk schema.GroupVersionKind,
	opts []client.ListOption, paged bool) error {
	item := gvk.GroupVersion().WithKind(trimListSuffix(gvk.Kind))
	if !paged {
		if err := r.reader.List(ctx, fresh, opts...); err != nil {
			return err
		}
		return keepOfItems(fresh, item, newInterner())
	}
	intern := newInterner()
	var items []runtime.Object
	var resourceVersion string
	for next := ""; ; {
		page := fresh.DeepCopyObject().(client.ObjectList)
		err := r.reader.List(ctx, page, append(opts[:len(opts):len(opts)], client.Limit(listPageSize), client.Continue(next))...)
		if err != nil && next != "" && apierrors.IsResourceExpired(err) {
			// The snapshot the pages come from is gone: read it whole instead.
			return r.readList(ctx, fresh, gvk, opts, false)
		}
		if err != nil {
			return err
		}
		if err := keepOfItems(page, item, intern); err != nil {
			return err
		}
		if err := apimeta.EachListItem(page, func(o runtime.Object) error {
			items = append(items, o)
			return nil
		}); err != nil {
			return err
		}
		if next == "" {
			resourceVersion = page.GetResourceVersion()
		}
		if next = page.GetContinue(); next == "" {
			break
		}
	}
	if err := apimeta.SetList(fresh, items); err != nil {
		return err
	}
	fresh.SetResourceVersion(resourceVersion)
	fresh.SetContinue("")
	return nil
}

// keepOfItems reduces the items of a list read to what a plan may depend on: no item's
// managedFields (the engine judges ownership from the targets it gets, never from a
// list), and of a Node only its labels, as inputFingerprint counts it. Label keys and
// values are shared between items: thousands of Nodes carry the same few hundred
// Node Feature Discovery labels.
func keepOfItems(list client.ObjectList, item schema.GroupVersionKind, intern *interner) error {
	node := item.GroupKind() == schema.GroupKind{Kind: "Node"}
	return apimeta.EachListItem(list, func(o runtime.Object) error {
		m, err := apimeta.Accessor(o)
		if err != nil {
			return err
		}
		m.SetManagedFields(nil)
		if node {
			m.SetAnnotations(nil)
		}
		if labels := m.GetLabels(); len(labels) > 0 {
			m.SetLabels(intern.labels(labels))
		}
		return nil
	})
}

// interner shares equal strings.
type interner struct{ strings map[string]string }

func newInterner() *interner { return &interner{strings: map[string]string{}} }

func (in *interner) string(s string) string {
	if kept, ok := in.strings[s]; ok {
		return kept
	}
	in.strings[s] = s
	return s
}

// labels is a copy of labels whose keys and values are the interner's.
func (in *interner) labels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[in.string(k)] = in.string(v)
	}
	return out
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

// inputsHash is HashJSON(prints), encoded one fingerprint, and one entry of a list, at a
// time: the JSON of thousands of Nodes' labels is never held whole.
func inputsHash(prints []fingerprint) string {
	if len(prints) == 0 {
		return HashJSON(prints)
	}
	h := sha256.New()
	write := func(v any) {
		data, err := json.Marshal(v)
		if err != nil {
			// As in HashJSON: every value here is built from decoded objects.
			panic(fmt.Sprintf("hash: cannot encode %T: %v", v, err))
		}
		_, _ = h.Write(data)
	}
	text := func(s string) { _, _ = h.Write([]byte(s)) }
	text("[")
	for i, fp := range prints {
		if i > 0 {
			text(",")
		}
		entries, ok := fp.Value.(listEntries)
		if !ok {
			write(fp)
			continue
		}
		// The encoding of fingerprint with a slice Value.
		text(`{"ref":`)
		write(fp.Ref)
		text(`,"exists":`)
		write(fp.Exists)
		text(`,"value":[`)
		for j, e := range entries {
			if j > 0 {
				text(",")
			}
			write(e)
		}
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

// metadataFingerprint is inputFingerprint of an object read metadata-only: it encodes as
// inputFingerprint's value for the object's JSON does.
func metadataFingerprint(gvk schema.GroupVersionKind, m *metav1.ObjectMeta) any {
	var labels any
	if len(m.Labels) > 0 {
		labels = m.Labels
	}
	switch gvk.GroupKind() {
	case schema.GroupKind{Group: "", Kind: "Node"}:
		return labels
	case crdGroupKind:
		return crdFingerprint(string(m.UID), m.Generation)
	}
	return map[string]any{"spec": nil, "labels": labels}
}

func trimListSuffix(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}
