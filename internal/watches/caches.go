package watches

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
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
		DefaultTransform:     digestManagedFields,
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
	keyOf := func(o named) plan.TargetKey {
		return plan.TargetKey{Group: gk.Group, Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	src := w.source(c, obj, keyOf, targetEvents, nil)
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
}

// watchInputLocked starts a metadata-only cache for one input, unless it has one: selected
// by name for a single object, the whole kind (in its namespace) for a list. wakes says
// whether the creations of its initial list wake the input's configs. It returns the
// input's watch, nil when it cannot watch it.
func (w *Watches) watchInputLocked(k plan.TargetKey, config string, wakes bool) *inputWatch {
	if in, ok := w.inputs[k]; ok {
		in.configs[config] = true
		return in
	}
	if w.ctx == nil {
		return nil // not started yet; the next reconcile registers it
	}
	mapping, err := w.mapper.RESTMapping(k.GroupKind())
	if err != nil {
		w.log.V(1).Info("not watching an input the cluster does not serve", "input", k.String(), "reason", err.Error())
		return nil
	}
	// A node's labels are its hardware facts; its heartbeats and annotations change nothing
	// a plan depends on, and in a large cluster they never stop.
	labelsOnly := k.GroupKind() == (schema.GroupKind{Kind: "Node"})
	in := &inputWatch{configs: map[string]bool{config: true}, failed: make(chan struct{})}
	in.initialListWakes.Store(wakes)
	opts := cache.Options{HTTPClient: w.httpClient, Scheme: w.scheme, Mapper: w.mapper, DefaultTransform: digestManagedFields,
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			in.failOnce.Do(func() { close(in.failed) })
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		}}
	if labelsOnly {
		opts.DefaultTransform = keepLabelsDigest
	}
	if k.Name != "" {
		opts.DefaultFieldSelector = fields.OneTermEqualSelector("metadata.name", k.Name)
	}
	if k.Namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{k.Namespace: {}}
	}
	c, err := cache.New(w.cfg, opts)
	if err != nil {
		w.log.Error(err, "cannot watch an input", "input", k.String())
		return nil
	}
	ctx, stop := context.WithCancel(w.ctx)
	go func() {
		if err := c.Start(ctx); err != nil {
			w.log.Error(err, "input watch stopped", "input", k.String())
		}
	}()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	gk := k.GroupKind()
	keyOf := func(o named) plan.TargetKey {
		if k.Name == "" {
			return k // a list input: any object of the kind counts
		}
		return plan.TargetKey{Group: gk.Group, Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	src := w.source(c, obj, keyOf, inputEvents, in.initialListWakes.Load)
	in.stop, in.synced, src.stopped = stop, src.synced, ctx.Done()
	if err := w.ctrl.Watch(src); err != nil {
		stop()
		w.log.Error(err, "cannot watch an input", "input", k.String())
		return nil
	}
	w.inputs[k] = in
	w.log.V(1).Info("watching input", "input", k.String())
	return in
}
