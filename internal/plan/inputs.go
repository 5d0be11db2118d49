package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
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
	// obj is what was read, never handed out or changed itself (readers get copies; the
	// items of a list of Nodes share their labels with the cache they came from); nil with
	// notFound for an object that does not exist.
	obj      runtime.Object
	notFound bool
	// shared are the items of a list a cache served (see SharedLister), the cache's own:
	// never handed out or changed; sharedList tells such a list.
	shared     []client.Object
	sharedList bool
	err        error
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
// The items handed to readers keep no managedFields (see record). A reader that only looks
// at one item at a time should use ListEach, which never copies the whole list.
func (r *Recorder) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, e, err := r.readList(ctx, list, opts)
	if err != nil {
		return err
	}
	if e.sharedList {
		whole, err := sharedList(gvk, e.shared)
		if err != nil {
			return err
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

// ListEach implements ItemLister: each item of the record is copied as it is handed out,
// one at a time.
func (r *Recorder) ListEach(ctx context.Context, list client.ObjectList, each func(client.Object) error,
	opts ...client.ListOption) error {
	gvk, e, err := r.readList(ctx, list, opts)
	if err != nil {
		return err
	}
	if _, metadata := list.(*metav1.PartialObjectMetadataList); metadata && e.sharedList {
		for _, it := range e.shared {
			if err := each(it.DeepCopyObject().(client.Object)); err != nil {
				return err
			}
		}
		return nil
	}
	if reflect.TypeOf(e.obj) == reflect.TypeOf(list) {
		item := gvk.GroupVersion().WithKind(trimListSuffix(gvk.Kind))
		return eachItem(e.obj.(client.ObjectList), func(o client.Object) error {
			own := o.DeepCopyObject().(client.Object)
			if own.GetObjectKind().GroupVersionKind().Empty() {
				own.GetObjectKind().SetGroupVersionKind(item)
			}
			return each(own)
		})
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
	e.once.Do(func() { e.err = r.record(ctx, e, list, opts) })
	return gvk, e, e.err
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
