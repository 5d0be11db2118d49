package watches

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// watchKindLocked watches the managed objects of a kind through a cache of its own, so the
// watch can be started afresh when the kind's CRD is replaced (see CRDChanged).
func (w *Watches) watchKindLocked(gk schema.GroupKind) {
	if _, ok := w.kinds[gk]; ok || w.ctx == nil {
		return
	}
	mapping, err := w.mapper.RESTMapping(gk)
	if err != nil {
		// The CRD is not served (yet); the next reconcile tries again, and the CRD watch
		// triggers one when it arrives.
		w.log.V(1).Info("not watching a kind the cluster does not serve", "kind", gk.String(), "reason", err.Error())
		return
	}
	c, err := cache.New(w.cfg, cache.Options{
		HTTPClient: w.httpClient, Scheme: w.scheme, Mapper: w.mapper,
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{plan.ManagedByLabel: plan.ManagedByValue}),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		w.log.Error(err, "cannot watch a managed kind", "kind", gk.String())
		return
	}
	ctx, stop := context.WithCancel(w.ctx)
	go func() {
		if err := c.Start(ctx); err != nil {
			w.log.Error(err, "managed kind watch stopped", "kind", gk.String())
		}
	}()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	keyOf := func(o named) []plan.TargetKey {
		return []plan.TargetKey{{Group: gk.Group, Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}}
	}
	src := w.source(c, obj, keyOf, nil)
	src.stopped = ctx.Done()
	if err := w.ctrl.Watch(src); err != nil {
		stop()
		w.log.Error(err, "cannot watch a managed kind", "kind", gk.String())
		return
	}
	w.kinds[gk] = stop
	w.log.Info("watching managed kind", "kind", gk.String(), "version", mapping.GroupVersionKind.Version)
}

// CRDChanged drops the watches of every kind and input of the CRD's group: a CRD deleted,
// created again or no longer served leaves a watch that stopped or backs off for long. The
// reconciles the CRD event starts register them again, on the kind as it is served now.
func (w *Watches) CRDChanged(crdName string) {
	if w == nil {
		return
	}
	_, group, ok := strings.Cut(crdName, ".")
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for gk, stop := range w.kinds {
		if gk.Group == group {
			stop()
			delete(w.kinds, gk)
		}
	}
	for k, in := range w.inputs {
		if k.Group == group {
			in.stop()
			delete(w.inputs, k)
		}
	}
	w.dropVMIsLocked(group)
}

// watchInputLocked starts a metadata-only cache for one input, unless it has one: selected
// by name for a single object, the whole kind (in its namespace) for a list. The creations
// of its initial list wake the input's configs, like any later event: the object may have
// changed between the read a plan was rendered from and the list. Nodes are served by
// one informer for all configs (see watchNodesLocked).
func (w *Watches) watchInputLocked(k plan.TargetKey, config string) {
	if k.GroupKind() == nodeGroupKind {
		w.watchNodesLocked()
		return
	}
	if k == VMIsKey {
		w.watchVMIsLocked()
		return
	}
	if in, ok := w.inputs[k]; ok {
		in.configs[config] = true
		return
	}
	if w.ctx == nil {
		return // not started yet; the next reconcile registers it
	}
	mapping, err := w.mapper.RESTMapping(k.GroupKind())
	if err != nil {
		w.log.V(1).Info("not watching an input the cluster does not serve", "input", k.String(), "reason", err.Error())
		return
	}
	opts := cache.Options{HTTPClient: w.httpClient, Scheme: w.scheme, Mapper: w.mapper,
		DefaultTransform: cache.TransformStripManagedFields()}
	if k.Name != "" {
		opts.DefaultFieldSelector = fields.OneTermEqualSelector("metadata.name", k.Name)
	}
	if k.Namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{k.Namespace: {}}
	}
	c, err := cache.New(w.cfg, opts)
	if err != nil {
		w.log.Error(err, "cannot watch an input", "input", k.String())
		return
	}
	ctx, stop := context.WithCancel(w.ctx)
	go func() {
		if err := c.Start(ctx); err != nil {
			w.log.Error(err, "input watch stopped", "input", k.String())
		}
	}()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	src := w.source(c, obj, func(named) []plan.TargetKey { return []plan.TargetKey{k} }, nil)
	src.stopped = ctx.Done()
	if err := w.ctrl.Watch(src); err != nil {
		stop()
		w.log.Error(err, "cannot watch an input", "input", k.String())
		return
	}
	w.inputs[k] = &inputWatch{stop: stop, configs: map[string]bool{config: true}}
	w.log.V(1).Info("watching input", "input", k.String())
}

var nodeGroupKind = schema.GroupKind{Kind: "Node"}

// watchNodesLocked feeds the events of the Nodes to the controller, once: they come from
// the manager's cache, whose one metadata-only informer of Nodes (see CacheOptions) also
// serves the profiles' reads of them (see Reader). A Node's event wakes the configs that
// read the Nodes, and those that read it by name.
func (w *Watches) watchNodesLocked() {
	if w.nodesWatched || w.ctx == nil || w.nodes == nil {
		return
	}
	keyOf := func(o named) []plan.TargetKey {
		return []plan.TargetKey{{Kind: nodeGroupKind.Kind}, {Kind: nodeGroupKind.Kind, Name: o.GetName()}}
	}
	if err := w.ctrl.Watch(w.source(w.nodes, NodeMetadata(), keyOf, nodeChanged)); err != nil {
		w.log.Error(err, "cannot watch the Nodes")
		return
	}
	w.nodesWatched = true
	w.log.V(1).Info("watching the Nodes")
}
