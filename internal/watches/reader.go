package watches

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// Reader is reader, but for the Nodes read metadata-only: those come from the manager's
// one informer of Nodes, as its transform keeps them (their names and the labels the
// profiles decide from), and cost the API server nothing. The informer starts with the
// first read and has listed the Nodes before that read returns.
func (w *Watches) Reader(reader client.Reader) client.Reader {
	if w == nil || w.nodes == nil {
		return reader
	}
	return &nodesCached{nodes: w.nodes, reader: reader}
}

type nodesCached struct {
	nodes  cache.Cache
	reader client.Reader
}

var (
	_ client.Reader     = (*nodesCached)(nil)
	_ plan.SharedLister = (*nodesCached)(nil)
)

func (r *nodesCached) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && isNode(m.TypeMeta, "Node") {
		return r.nodes.Get(ctx, key, obj, opts...)
	}
	return r.reader.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (r *nodesCached) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*metav1.PartialObjectMetadataList); ok && isNode(l.TypeMeta, "NodeList") {
		return r.nodes.List(ctx, list, opts...)
	}
	return r.reader.List(ctx, list, opts...)
}

// ListShared implements plan.SharedLister: a metadata-only list of Nodes is the informer's
// own Nodes that the options' label selector selects, uncopied, so the record of a read of
// thousands of Nodes takes a pointer each.
func (r *nodesCached) ListShared(ctx context.Context, list client.ObjectList, each func(client.Object),
	opts ...client.ListOption) (bool, error) {
	l, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok || !isNode(l.TypeMeta, "NodeList") {
		return false, nil
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.FieldSelector != nil || lo.Limit != 0 || lo.Continue != "" {
		return false, nil // the cache's List serves those
	}
	inf, err := r.nodes.GetInformer(ctx, NodeMetadata())
	if err != nil {
		return true, err
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return false, nil
	}
	selector := lo.LabelSelector
	if selector == nil {
		selector = labels.Everything()
	}
	for _, o := range shared.GetStore().List() {
		n, ok := o.(*metav1.PartialObjectMetadata)
		if !ok {
			return true, fmt.Errorf("the Node informer holds a %T", o)
		}
		if selector.Matches(labels.Set(n.Labels)) {
			each(n)
		}
	}
	return true, nil
}

func isNode(t metav1.TypeMeta, kind string) bool {
	return t.Kind == kind && t.APIVersion == "v1"
}
