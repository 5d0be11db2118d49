package watches

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
)

// nodeFacts is the transform of the one informer the Nodes are served from: a Node is
// kept as its name and the labels the profiles decide from (nodeconfig.IsFactLabel), and
// nothing else. Thousands of Nodes carry hundreds of labels and long annotations each; a
// dozen labels of each stay. Label keys and values are canonicalized (the standard
// library's unique package), so the Nodes that report the same facts share their strings.
func nodeFacts(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta}
	kept.Name, kept.UID, kept.ResourceVersion = m.Name, m.UID, m.ResourceVersion
	kept.DeletionTimestamp = m.DeletionTimestamp
	for k, v := range m.Labels {
		if !nodeconfig.IsFactLabel(k) {
			continue
		}
		if kept.Labels == nil {
			kept.Labels = map[string]string{}
		}
		kept.Labels[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return kept, nil
}

// NodeMetadata is the metadata-only object the Nodes are read and watched as.
func NodeMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
	return o
}
