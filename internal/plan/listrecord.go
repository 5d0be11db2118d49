package plan

import (
	"context"
	"sort"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedLister is a reader that serves some lists from a cache: ListShared hands the
// cache's own items of such a list to each, uncopied, and tells whether it serves the list
// at all (false: it called each on nothing). Its items must never be changed.
type SharedLister interface {
	ListShared(ctx context.Context, list client.ObjectList, each func(client.Object), opts ...client.ListOption) (bool, error)
}

// record reads the list into e: from a cache the reader shares as e.shared, the cache's
// own items, else in one request. The items of a request keep no managedFields: the engine
// judges ownership from the targets it gets, never from a list.
func (r *Recorder) record(ctx context.Context, e *readEntry, list client.ObjectList, opts []client.ListOption) error {
	if l, ok := r.reader.(SharedLister); ok {
		var items []client.Object
		served, err := l.ListShared(ctx, list, func(o client.Object) { items = append(items, o) }, opts...)
		if err != nil {
			return err
		}
		if served {
			sort.Slice(items, func(i, j int) bool {
				return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
			})
			e.shared, e.sharedList = items, true
			return nil
		}
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := r.reader.List(ctx, fresh, opts...); err != nil {
		return err
	}
	if err := apimeta.EachListItem(fresh, func(o runtime.Object) error {
		m, err := apimeta.Accessor(o)
		if err == nil && m.GetManagedFields() != nil {
			m.SetManagedFields(nil)
		}
		return err
	}); err != nil {
		return err
	}
	e.obj = fresh
	return nil
}

// sharedList is the list of kind gvk of the shared items, copies of them.
func sharedList(gvk schema.GroupVersionKind, items []client.Object) (client.ObjectList, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	objs := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		objs = append(objs, it.DeepCopyObject())
	}
	return list, apimeta.SetList(list, objs)
}

var nodeGroupKind = schema.GroupKind{Kind: "Node"}

func trimListSuffix(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}
