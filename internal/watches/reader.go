package watches

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader is reader, but for the Nodes read metadata-only: those come from the manager's
// one informer of Nodes, as its transform keeps them (their names and the labels the
// profiles decide from), and cost the API server nothing. The informer starts with the
// first read and is listed before that read returns.
func (w *Watches) Reader(reader client.Reader) client.Reader {
	if w == nil || w.nodes == nil {
		return reader
	}
	return &nodesCached{nodes: w.nodes, reader: reader}
}

type nodesCached struct {
	nodes  client.Reader
	reader client.Reader
}

var _ client.Reader = (*nodesCached)(nil)

func (r *nodesCached) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && isNode(m.TypeMeta, "Node") {
		return r.nodes.Get(ctx, key, obj, opts...)
	}
	return r.reader.Get(ctx, key, obj, opts...)
}

// List implements client.Reader. A list of Nodes shares the cache's labels: its reader
// must not change them (plan.Recorder never does, and hands its readers copies).
func (r *nodesCached) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*metav1.PartialObjectMetadataList); ok && isNode(l.TypeMeta, "NodeList") {
		return r.nodes.List(ctx, list, append(opts[:len(opts):len(opts)], client.UnsafeDisableDeepCopy)...)
	}
	return r.reader.List(ctx, list, opts...)
}

func isNode(t metav1.TypeMeta, kind string) bool {
	return t.Kind == kind && (t.APIVersion == "v1")
}
