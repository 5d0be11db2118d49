package watches

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// named is what a cache's events are mapped to configs by.
type named interface {
	GetName() string
	GetNamespace() string
}

// configsOf are the configs whose plans name object k. Every event of a watched object
// wakes them: a reconcile that finds nothing to do writes nothing.
func (w *Watches) configsOf(k plan.TargetKey) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]reconcile.Request, 0, len(w.configs[k]))
	for name := range w.configs[k] {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return out
}

// nodeChanged tells whether an update of a Node changed what the cache keeps of it (see
// nodeFacts): its labels. Every other update of a Node (its heartbeats, its status, its
// annotations) reaches the cache as the same object with another resourceVersion.
func nodeChanged(old, updated any) bool {
	o, ok1 := old.(*metav1.PartialObjectMetadata)
	n, ok2 := updated.(*metav1.PartialObjectMetadata)
	return !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels)
}
