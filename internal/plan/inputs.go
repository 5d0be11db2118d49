package plan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
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
	// for an object that does not exist, and for a list kept as nodes.
	obj runtime.Object
	// nodes is what was read of a metadata-only list of Nodes.
	nodes    *nodeList
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
// What is kept of the items, and handed to readers, is reduced as keepOfItems says; of a
// metadata-only list of Nodes, their names and labels (see nodeList). A reader that only
// looks at one item at a time should use ListEach, which never builds the whole list.
func (r *Recorder) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, e, err := r.readList(ctx, list, opts)
	if err != nil {
		return err
	}
	if e.nodes != nil {
		whole := e.nodes.list(gvk)
		if l, ok := list.(*metav1.PartialObjectMetadataList); ok {
			*l = *whole
			return nil
		}
		return copyInto(whole, list, gvk)
	}
	return copyInto(e.obj, list, gvk)
}

// ItemLister is a reader that hands out the items of a list one at a time.
type ItemLister interface {
	// ListEach reads the list as List does and calls each on its items in turn, in the
	// order List has them. Each item is the caller's own; list only says what to read.
	ListEach(ctx context.Context, list client.ObjectList, each func(client.Object) error, opts ...client.ListOption) error
}

// ListEach reads a list through reader and calls each on its items in turn: through an
// ItemLister one item at a time, through any other reader after one List.
func ListEach(ctx context.Context, reader client.Reader, list client.ObjectList, each func(client.Object) error,
	opts ...client.ListOption) error {
	if l, ok := reader.(ItemLister); ok {
		return l.ListEach(ctx, list, each, opts...)
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := reader.List(ctx, fresh, opts...); err != nil {
		return err
	}
	return eachItem(fresh, each)
}

var _ ItemLister = (*Recorder)(nil)

// ListEach implements ItemLister. A metadata-only list of Nodes is handed out from the
// record one Node at a time, never whole.
func (r *Recorder) ListEach(ctx context.Context, list client.ObjectList, each func(client.Object) error,
	opts ...client.ListOption) error {
	gvk, e, err := r.readList(ctx, list, opts)
	if err != nil {
		return err
	}
	if _, ok := list.(*metav1.PartialObjectMetadataList); ok && e.nodes != nil {
		return e.nodes.each(gvk, each)
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := r.List(ctx, fresh, opts...); err != nil {
		return err
	}
	return eachItem(fresh, each)
}

func eachItem(list client.ObjectList, each func(client.Object) error) error {
	return apimeta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("list item %T is not an object", o)
		}
		return each(obj)
	})
}

// readList reads a list once for every reader, returning its kind and its record.
func (r *Recorder) readList(ctx context.Context, list client.ObjectList, opts []client.ListOption) (schema.GroupVersionKind, *readEntry, error) {
	gvk, err := gvkOf(list)
	if err != nil {
		return gvk, nil, err
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	e := r.entry(readKey{GVK: gvk, Namespace: lo.Namespace, List: true})
	e.once.Do(func() {
		// A caller that pages itself gets the page it asked for.
		paged := lo.Limit == 0 && lo.Continue == ""
		e.err = r.record(ctx, e, list, gvk, opts, paged)
	})
	return gvk, e, e.err
}

// listPageSize is how many objects one list request asks for: a list of thousands of
// Nodes is read a page at a time, each page reduced (keepOfItems, or to a nodeList) before
// the next arrives, so the full responses never sit in memory together. A page of Nodes
// with their Node Feature Discovery labels, annotations and managedFields is the largest
// thing a draft holds: small pages keep the operator's memory nearly flat as Nodes grow,
// for a request per 10 Nodes.
const listPageSize = 10

var nodeGroupKind = schema.GroupKind{Kind: "Node"}

// record reads the list into e, page by page when paged (else in one request): a
// metadata-only list of Nodes as a nodeList, any other as a list of what keepOfItems keeps
// of its items.
func (r *Recorder) record(ctx context.Context, e *readEntry, list client.ObjectList, gvk schema.GroupVersionKind,
	opts []client.ListOption, paged bool) error {
	item := gvk.GroupVersion().WithKind(trimListSuffix(gvk.Kind))
	_, metadataOnly := list.(*metav1.PartialObjectMetadataList)
	var nodes *nodeList
	if metadataOnly && item.GroupKind() == nodeGroupKind {
		nodes = newNodeList()
	}
	intern := newInterner()
	var items []runtime.Object
	// The record carries the resourceVersion of the first page, and a continue token only
	// when the caller asked for one page.
	var resourceVersion, cont string
	for next := ""; ; {
		page := list.DeepCopyObject().(client.ObjectList)
		pageOpts := opts
		if paged {
			pageOpts = append(opts[:len(opts):len(opts)], client.Limit(listPageSize), client.Continue(next))
		}
		err := r.reader.List(ctx, page, pageOpts...)
		if err != nil && next != "" && apierrors.IsResourceExpired(err) {
			// The snapshot the pages come from is gone: read it whole instead.
			return r.record(ctx, e, list, gvk, opts, false)
		}
		if err != nil {
			return err
		}
		if nodes != nil {
			if err := nodes.add(page); err != nil {
				return err
			}
		} else {
			if err := keepOfItems(page, item, intern); err != nil {
				return err
			}
			if err := apimeta.EachListItem(page, func(o runtime.Object) error {
				items = append(items, o)
				return nil
			}); err != nil {
				return err
			}
		}
		if next == "" {
			resourceVersion = page.GetResourceVersion()
		}
		if !paged {
			cont = page.GetContinue()
			break
		}
		if next = page.GetContinue(); next == "" {
			break
		}
	}
	if nodes != nil {
		nodes.resourceVersion, nodes.cont = resourceVersion, cont
		e.nodes = nodes
		return nil
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := apimeta.SetList(fresh, items); err != nil {
		return err
	}
	fresh.SetResourceVersion(resourceVersion)
	fresh.SetContinue(cont)
	e.obj = fresh
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
		case e.nodes != nil:
			fp.Value = e.nodes.fingerprint(k.GVK, isTarget)
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

// nodeList is what the recorder keeps of a metadata-only list of Nodes: what a plan may
// depend on of a Node is its name and its labels (see inputFingerprint), and thousands of
// Nodes carry the same few hundred Node Feature Discovery labels. So each distinct label
// (key and value) is kept once, and a Node is its name and the numbers of its labels: the
// labels of a page of Nodes never outlive the page.
type nodeList struct {
	resourceVersion, cont string
	// labels are the distinct labels, by number; numbers finds a label's number.
	labels  []label
	numbers map[label]uint32
	items   []nodeItem
}

type label struct{ key, value string }

// nodeItem is one Node: its name, and the numbers of its labels in the order of their
// keys, as varints: how many, then each one's difference from the one before. Labels are
// numbered as they are first seen, so the Nodes after the first mostly repeat its
// numbers, a byte each.
type nodeItem struct {
	name   string
	labels []byte
}

func newNodeList() *nodeList { return &nodeList{numbers: map[label]uint32{}} }

// add records the Nodes of a page.
func (l *nodeList) add(page client.ObjectList) error {
	metadata, ok := page.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("a page of Nodes is a %T, not metadata", page)
	}
	keys := make([]string, 0, 256)
	var buf []byte
	for i := range metadata.Items {
		m := &metadata.Items[i].ObjectMeta
		keys = keys[:0]
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf = binary.AppendUvarint(buf[:0], uint64(len(keys)))
		previous := int64(0)
		for _, k := range keys {
			n := int64(l.number(label{key: k, value: m.Labels[k]}))
			buf = binary.AppendVarint(buf, n-previous)
			previous = n
		}
		l.items = append(l.items, nodeItem{name: strings.Clone(m.Name), labels: bytes.Clone(buf)})
	}
	return nil
}

// number is the label's number, given on first sight; the strings kept are copies, so no
// part of a page's response stays behind.
func (l *nodeList) number(lb label) uint32 {
	if n, ok := l.numbers[lb]; ok {
		return n
	}
	lb = label{key: strings.Clone(lb.key), value: strings.Clone(lb.value)}
	n := uint32(len(l.labels))
	l.labels = append(l.labels, lb)
	l.numbers[lb] = n
	return n
}

// labelCount is how many labels the Node has.
func (it nodeItem) labelCount() int {
	count, _ := binary.Uvarint(it.labels)
	return int(count)
}

// eachLabel calls fn with the number of each of the Node's labels, in the order of their
// keys.
func (it nodeItem) eachLabel(fn func(number uint32)) {
	_, read := binary.Uvarint(it.labels)
	n := int64(0)
	for rest := it.labels[read:]; len(rest) > 0; rest = rest[read:] {
		var delta int64
		delta, read = binary.Varint(rest)
		n += delta
		fn(uint32(n))
	}
}

// node is Node i as a reader gets it: its name and its labels.
func (l *nodeList) node(i int, gvk schema.GroupVersionKind) metav1.PartialObjectMetadata {
	it := l.items[i]
	n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: it.name}}
	n.SetGroupVersionKind(gvk)
	if count := it.labelCount(); count > 0 {
		n.Labels = make(map[string]string, count)
		it.eachLabel(func(number uint32) {
			lb := l.labels[number]
			n.Labels[lb.key] = lb.value
		})
	}
	return n
}

// list is the whole list, of kind listGVK.
func (l *nodeList) list(listGVK schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	out := &metav1.PartialObjectMetadataList{Items: make([]metav1.PartialObjectMetadata, len(l.items))}
	out.SetGroupVersionKind(listGVK)
	out.ResourceVersion, out.Continue = l.resourceVersion, l.cont
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	for i := range l.items {
		out.Items[i] = l.node(i, item)
	}
	return out
}

// each hands the Nodes to each, one at a time.
func (l *nodeList) each(listGVK schema.GroupVersionKind, each func(client.Object) error) error {
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	for i := range l.items {
		n := l.node(i, item)
		if err := each(&n); err != nil {
			return err
		}
	}
	return nil
}

// fingerprint is listFingerprint of the Nodes: an entry per Node, sorted by key, whose
// value is its labels (nil without any), or nil for a plan's own target.
func (l *nodeList) fingerprint(listGVK schema.GroupVersionKind, isTarget map[readKey]bool) nodeEntries {
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	order := make([]int, len(l.items))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return l.items[order[i]].name < l.items[order[j]].name })
	return nodeEntries{list: l, order: order, item: item, isTarget: isTarget}
}

// nodeEntries are the entries of a nodeList's fingerprint, encoded as listEntries of the
// same Nodes would be.
type nodeEntries struct {
	list     *nodeList
	order    []int
	item     schema.GroupVersionKind
	isTarget map[readKey]bool
}

func (n nodeEntries) encodeEntries(write func([]byte)) {
	// Each label as a member of a JSON object, encoded once.
	members := make([][]byte, len(n.list.labels))
	for i, lb := range n.list.labels {
		members[i] = append(append(mustJSON(lb.key), ':'), mustJSON(lb.value)...)
	}
	var buf []byte
	for j, i := range n.order {
		it := n.list.items[i]
		// The key of listEntry: "<namespace>/<name>", and a Node has no namespace.
		key := mustJSON("/" + it.name)
		buf = buf[:0]
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = append(append(append(buf, `{"key":`...), key...), `,"value":`...)
		switch {
		case n.isTarget[readKey{GVK: n.item, Name: it.name}], it.labelCount() == 0:
			buf = append(buf, "null"...)
		default:
			buf = append(buf, '{')
			first := true
			it.eachLabel(func(number uint32) {
				if !first {
					buf = append(buf, ',')
				}
				first = false
				buf = append(buf, members[number]...)
			})
			buf = append(buf, '}')
		}
		write(append(buf, '}'))
	}
}
