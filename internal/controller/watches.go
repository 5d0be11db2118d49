package controller

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// targetKey names a plan target independently of the API version it is read at.
type targetKey struct {
	Group, Kind, Namespace, Name string
}

func targetKeyOf(ref advisorv1alpha1.TargetReference) targetKey {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return targetKey{Group: gv.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

func (k targetKey) String() string {
	gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}.String()
	if k.Namespace != "" {
		return gk + " " + k.Namespace + "/" + k.Name
	}
	return gk + " " + k.Name
}

// targetWatches watches the targets of the current plans. A kind gets one metadata-only
// informer the first time a plan names it and its CRD is served, registered while the
// manager runs, so a CRD installed later needs no restart. The manager's cache lists
// those kinds with the managed-by label selector (see cmd/main.go), so memory does not
// grow with unrelated objects of a managed kind; events are mapped to the configs whose
// plans name the object and dropped otherwise.
type targetWatches struct {
	mu       sync.Mutex
	ctrl     controller.Controller
	cache    cache.Cache
	mapper   meta.RESTMapper
	log      logr.Logger
	watching map[schema.GroupKind]bool
	configs  map[targetKey]map[string]bool
	targets  map[string][]targetKey
}

func newTargetWatches(c controller.Controller, ca cache.Cache, mapper meta.RESTMapper, log logr.Logger) *targetWatches {
	return &targetWatches{
		ctrl:     c,
		cache:    ca,
		mapper:   mapper,
		log:      log,
		watching: map[schema.GroupKind]bool{},
		configs:  map[targetKey]map[string]bool{},
		targets:  map[string][]targetKey{},
	}
}

// track records the targets of a config's plan and watches their kinds.
func (w *targetWatches) track(config string, items []advisorv1alpha1.PlanItem) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(config)
	for _, it := range items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		k := targetKeyOf(it.TargetRef)
		if w.configs[k] == nil {
			w.configs[k] = map[string]bool{}
		}
		w.configs[k][config] = true
		w.targets[config] = append(w.targets[config], k)
		w.watchLocked(schema.GroupKind{Group: k.Group, Kind: k.Kind})
	}
}

// forget drops a config's targets. Informers stay: another plan may name the kind again.
func (w *targetWatches) forget(config string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(config)
}

func (w *targetWatches) untrackLocked(config string) {
	for _, k := range w.targets[config] {
		delete(w.configs[k], config)
		if len(w.configs[k]) == 0 {
			delete(w.configs, k)
		}
	}
	delete(w.targets, config)
}

func (w *targetWatches) watchLocked(gk schema.GroupKind) {
	if w.watching[gk] {
		return
	}
	mapping, err := w.mapper.RESTMapping(gk)
	if err != nil {
		// The CRD is not served (yet); the next reconcile tries again, and the CRD watch
		// triggers one when it arrives.
		w.log.V(1).Info("not watching a kind the cluster does not serve", "kind", gk.String(), "reason", err.Error())
		return
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	src := source.Kind[client.Object](w.cache, obj, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return w.configsOf(targetKey{Group: gk.Group, Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
	}))
	if err := w.ctrl.Watch(src); err != nil {
		w.log.Error(err, "cannot watch a managed kind", "kind", gk.String())
		return
	}
	w.watching[gk] = true
	w.log.Info("watching managed kind", "kind", gk.String(), "version", mapping.GroupVersionKind.Version)
}

func (w *targetWatches) configsOf(k targetKey) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]reconcile.Request, 0, len(w.configs[k]))
	for name := range w.configs[k] {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return out
}
