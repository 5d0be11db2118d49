package plan

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// record reads the list into e, in one request. Its items keep no managedFields: the
// engine judges ownership from the targets it gets, never from a list.
func (r *Recorder) record(ctx context.Context, e *readEntry, list client.ObjectList, opts []client.ListOption) error {
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

var nodeGroupKind = schema.GroupKind{Kind: "Node"}

func trimListSuffix(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}
