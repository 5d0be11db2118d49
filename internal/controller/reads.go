package controller

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// prefetchConcurrency bounds the reads a reconcile sends ahead at once.
const prefetchConcurrency = 8

// readCache is the read-through cache of one reconcile. Each object (or list) it is asked
// for is read from the API server once, uncached, and served from memory for the rest of
// the reconcile: the profile's rendering, the draft, the optimistic-lock check, the apply
// and the drift check that follow each other in one reconcile share one read of each
// object instead of reading it again one after the other. Reads known to be needed are
// sent ahead, concurrently (prefetch): the reads the config's last rendering made, the
// plan's targets and the profile's prerequisite CRDs. An object the operator writes is
// dropped (invalidate), so a later read in the same reconcile sees the write. Only
// answers are kept (an object, or NotFound): after any other error the next reader reads
// again.
type readCache struct {
	reader client.Reader
	// listsFromWatchCache: consistent lists are read from the API server's watch cache
	// (see readSpec.read). Set for the steps of an execution.
	listsFromWatchCache bool

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	// used are the reads asked for by readers (not by the prefetch), once each, in order.
	used    []readSpec
	usedSet map[cacheKey]bool
}

// cacheKey names one read. Typed objects are named by their Go type, unstructured ones by
// their GroupVersionKind; a list also by its selectors.
type cacheKey struct {
	typ             reflect.Type
	gvk             schema.GroupVersionKind
	namespace, name string
	list            bool
	selectors       string
}

// readSpec is a read that can be sent again: in the next reconcile's prefetch.
type readSpec struct {
	key      cacheKey
	objKey   client.ObjectKey
	listOpts []client.ListOption
	// consistent: a list without a resourceVersion, which the API server answers with
	// every write made before it.
	consistent bool
	newObj     func() runtime.Object
}

type cacheEntry struct {
	done chan struct{}
	obj  runtime.Object
	err  error
}

func newReadCache(reader client.Reader) *readCache {
	return &readCache{reader: reader, entries: map[cacheKey]*cacheEntry{}, usedSet: map[cacheKey]bool{}}
}

// seed serves answers kept from the step before (see carriedReads) as if this reconcile
// had read them.
func (c *readCache) seed(answers map[cacheKey]*cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range answers {
		if _, ok := c.entries[k]; !ok {
			c.entries[k] = e
		}
	}
}

// answers returns the reads answered so far (an object, or NotFound); reads in flight are
// left out. Entries are never changed once answered: they can be shared.
func (c *readCache) answers() map[cacheKey]*cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[cacheKey]*cacheEntry, len(c.entries))
	for k, e := range c.entries {
		select {
		case <-e.done:
			if e.err == nil || apierrors.IsNotFound(e.err) {
				out[k] = e
			}
		default:
		}
	}
	return out
}

// usedVersions adds the resourceVersions of the objects readers were served (one by one
// or in lists) to seen. An object that was not found is noted with an empty version.
func (c *readCache) usedVersions(seen map[objectVersion]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !c.usedSet[k] {
			continue
		}
		select {
		case <-e.done:
		default:
			continue
		}
		kind := strings.TrimSuffix(k.gvk.Kind, "List")
		if kind == "" {
			continue // a typed object: its kind is its Go type, no watch reports it by
		}
		if !k.list {
			seen[objectVersion{kind: kind, namespace: k.namespace, name: k.name}] = resourceVersionOf(e.obj)
			continue
		}
		items, err := apimeta.ExtractList(e.obj)
		if err != nil {
			continue
		}
		for _, item := range items {
			if a, err := apimeta.Accessor(item); err == nil {
				seen[objectVersion{kind: kind, namespace: a.GetNamespace(), name: a.GetName()}] = a.GetResourceVersion()
			}
		}
	}
}

// wrote keeps the object a write of this reconcile answered with as the read of it: it is
// the object as the API server stored it, as new as a read sent after the write.
func (c *readCache) wrote(obj *unstructured.Unstructured) {
	sp := c.keep(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.usedSet[sp.key] {
		c.usedSet[sp.key] = true
		c.used = append(c.used, sp)
	}
}

// keep serves obj, as the API server answered it just now, to the later reads of it in
// this reconcile, in place of any read of it kept or in flight. Unlike wrote, it does not
// make it a read worth sending ahead in the next reconcile.
func (c *readCache) keep(obj *unstructured.Unstructured) readSpec {
	sp := getSpec(client.ObjectKeyFromObject(obj), obj)
	e := &cacheEntry{done: make(chan struct{}), obj: obj.DeepCopy()}
	close(e.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[sp.key] = e
	return sp
}

// freshReader reads through to the API server, never from what the reconcile holds: a
// health check judges the cluster as it is now. Each object it gets is kept as the
// reconcile's read of it (see keep), so what the step reads after the check (the inputs
// compared when an execution finishes) starts from the same object instead of reading it
// again.
type freshReader struct {
	client.Reader
	reads *readCache
}

// Get implements client.Reader.
func (f freshReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := f.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		f.reads.keep(u)
	}
	return nil
}

var _ client.Reader = (*readCache)(nil)

// newLike returns a constructor of empty objects of obj's type (and kind, for unstructured
// objects).
func newLike(obj runtime.Object) func() runtime.Object {
	t := reflect.TypeOf(obj).Elem()
	gvk := kindOf(obj)
	return func() runtime.Object {
		o := reflect.New(t).Interface().(runtime.Object)
		if !gvk.Empty() {
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		return o
	}
}

// kindOf is the GroupVersionKind that tells unstructured and metadata-only objects (and
// lists) apart, as their type does not; typed objects are told apart by their type.
func kindOf(obj runtime.Object) schema.GroupVersionKind {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return obj.GetObjectKind().GroupVersionKind()
	}
	return schema.GroupVersionKind{}
}

func getSpec(key client.ObjectKey, obj client.Object) readSpec {
	return readSpec{
		key:    cacheKey{typ: reflect.TypeOf(obj), gvk: kindOf(obj), namespace: key.Namespace, name: key.Name},
		objKey: key,
		newObj: newLike(obj),
	}
}

// listSpec describes a list read; ok is false for options the cache does not keep apart
// (pages, raw options other than a list from the watch cache), which are read through.
func listSpec(list client.ObjectList, opts []client.ListOption) (readSpec, bool) {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	selectors := ""
	if raw := lo.Raw; raw != nil {
		// Only a list from the watch cache (resourceVersion "0") is kept apart by its
		// resourceVersion; any other raw option is read through.
		if (*raw != metav1.ListOptions{ResourceVersion: raw.ResourceVersion}) || raw.ResourceVersion != "0" {
			return readSpec{}, false
		}
		selectors += "rv:0 "
	}
	if lo.Limit != 0 || lo.Continue != "" || lo.UnsafeDisableDeepCopy != nil {
		return readSpec{}, false
	}
	if lo.LabelSelector != nil {
		selectors += "l:" + lo.LabelSelector.String()
	}
	if lo.FieldSelector != nil {
		selectors += " f:" + lo.FieldSelector.String()
	}
	return readSpec{
		key:        cacheKey{typ: reflect.TypeOf(list), gvk: kindOf(list), namespace: lo.Namespace, list: true, selectors: selectors},
		listOpts:   append([]client.ListOption(nil), opts...),
		consistent: lo.Raw == nil,
		newObj:     newLike(list),
	}, true
}

// read sends the read a spec describes. Like every read of a reconcile, it never takes
// the 404 of a resource the API server does not serve for a missing object (see
// plan.NotServedAsUnavailable).
//
// With fromCache, a consistent list is read from the API server's watch cache instead. A
// consistent list waits until the watch cache has caught up with every write to any kind:
// tens of milliseconds, up to a hundred while a plan is applied. The watch cache may be a
// moment behind, which is the same as a list sent a moment earlier: a newer version of
// what was listed, or an object created since, wakes the config when its event arrives
// (see memory.wake).
func (sp readSpec) read(ctx context.Context, reader client.Reader, fromCache bool) (runtime.Object, error) {
	obj := sp.newObj()
	if !sp.key.list {
		return obj, plan.NotServedAsUnavailable(reader.Get(ctx, sp.objKey, obj.(client.Object)))
	}
	opts := sp.listOpts
	if fromCache && sp.consistent {
		opts = append([]client.ListOption{targets.FromWatchCache()}, opts...)
	}
	return obj, plan.NotServedAsUnavailable(reader.List(ctx, obj.(client.ObjectList), opts...))
}

// Get implements client.Reader.
func (c *readCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if len(opts) > 0 {
		return plan.NotServedAsUnavailable(c.reader.Get(ctx, key, obj, opts...))
	}
	return c.serve(ctx, getSpec(key, obj), obj)
}

// List implements client.Reader.
func (c *readCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	sp, ok := listSpec(list, opts)
	if !ok {
		return plan.NotServedAsUnavailable(c.reader.List(ctx, list, opts...))
	}
	return c.serve(ctx, sp, list)
}

// serve answers a reader's read, and notes it among the reads worth sending ahead next
// time when it got an answer.
func (c *readCache) serve(ctx context.Context, sp readSpec, into runtime.Object) error {
	got, err := c.fetch(ctx, sp)
	if err == nil || apierrors.IsNotFound(err) {
		c.mu.Lock()
		if !c.usedSet[sp.key] {
			c.usedSet[sp.key] = true
			c.used = append(c.used, sp)
		}
		c.mu.Unlock()
	}
	if err != nil {
		return err
	}
	return copyInto(into, got)
}

// claim returns the entry of a read, and whether the caller is the one to send it.
func (c *readCache) claim(k cacheKey) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[k]; ok {
		return e, false
	}
	e := &cacheEntry{done: make(chan struct{})}
	c.entries[k] = e
	return e, true
}

// fill sends the read of a claimed entry. An error other than NotFound is not kept; the
// 404 of a resource the API server does not serve is not a NotFound here (see
// plan.NotServedAsUnavailable).
func (c *readCache) fill(ctx context.Context, sp readSpec, e *cacheEntry) {
	e.obj, e.err = sp.read(ctx, c.reader, c.listsFromWatchCache)
	if e.err != nil && !apierrors.IsNotFound(e.err) {
		c.mu.Lock()
		if c.entries[sp.key] == e {
			delete(c.entries, sp.key)
		}
		c.mu.Unlock()
	}
	close(e.done)
}

// fetch returns what the read answered, sending it unless it is kept or in flight. A read
// in flight that fails is sent again by each reader waiting for it, as it would have been
// without the cache.
func (c *readCache) fetch(ctx context.Context, sp readSpec) (runtime.Object, error) {
	for {
		e, owner := c.claim(sp.key)
		if owner {
			c.fill(ctx, sp, e)
			return e.obj, e.err
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil || apierrors.IsNotFound(e.err) {
			return e.obj, e.err
		}
	}
}

// prefetch sends the reads that are not kept or in flight yet, concurrently, without
// waiting for them: readers that need one wait for it then.
func (c *readCache) prefetch(ctx context.Context, specs []readSpec) {
	sem := make(chan struct{}, prefetchConcurrency)
	for _, sp := range specs {
		e, owner := c.claim(sp.key)
		if !owner {
			continue
		}
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c.fill(ctx, sp, e)
		}()
	}
}

// invalidate drops what was read of an object of kind gk the operator just wrote, and
// every list that may hold it, so that later reads in this reconcile see the write. A list
// of another kind cannot hold it and is kept; a list whose kind the key does not name (a
// typed list) is dropped.
func (c *readCache) invalidate(gk schema.GroupKind, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		drop := k.namespace == namespace && k.name == name
		if k.list {
			drop = k.gvk.Empty() || (k.gvk.Group == gk.Group && k.gvk.Kind == gk.Kind+"List")
		}
		if drop {
			delete(c.entries, k)
		}
	}
}

// usedReads returns the reads asked for so far.
func (c *readCache) usedReads() []readSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]readSpec(nil), c.used...)
}

// copyInto copies what the cache holds into a reader's object of the same type. CRDs are
// shared instead (see plan.ShareReadOnly).
func copyInto(dst, src runtime.Object) error {
	if reflect.TypeOf(dst) != reflect.TypeOf(src) {
		return fmt.Errorf("read cache: %T read into %T", src, dst)
	}
	if plan.ShareReadOnly(dst, src) {
		return nil
	}
	if u, ok := dst.(*unstructured.Unstructured); ok {
		u.Object = src.(*unstructured.Unstructured).DeepCopy().Object
		return nil
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}

// sameReader tells whether two readers are one and the same.
func sameReader(a, b client.Reader) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// crdReader serves CustomResourceDefinitions from the last full read of each, for as long
// as the CRD metadata the manager watches shows the same resourceVersion (a CRD changes
// rarely and is large: reading it is the most expensive read of a rendering). A CRD the
// watch does not know, or knows at another resourceVersion, is read uncached. Every
// other read goes through. The watch is the one whose events wake every config when a
// CRD changes, so a reconcile started by a CRD change already sees the new version. A CRD
// served from memory is shared with its reader, not copied (see plan.ShareReadOnly).
type crdReader struct {
	client.Reader
	// watched reads CRD metadata from the manager's watch.
	watched client.Reader

	mu   sync.Mutex
	crds map[string]*apiextensionsv1.CustomResourceDefinition
}

func (c *crdReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok || len(opts) > 0 || c.watched == nil {
		return c.Reader.Get(ctx, key, obj, opts...)
	}
	meta := CRDMetadata()
	if err := c.watched.Get(ctx, key, meta); err == nil {
		c.mu.Lock()
		kept, found := c.crds[key.Name]
		c.mu.Unlock()
		if found && kept.ResourceVersion == meta.ResourceVersion && kept.UID == meta.UID {
			*crd = *kept // shared, not copied: see plan.ShareReadOnly
			return nil
		}
	}
	if err := c.Reader.Get(ctx, key, crd); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			delete(c.crds, key.Name)
			c.mu.Unlock()
		}
		return err
	}
	c.mu.Lock()
	if c.crds == nil {
		c.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
	}
	kept := *crd
	c.crds[key.Name] = &kept
	c.mu.Unlock()
	return nil
}

// holds tells whether memory keeps a CRD of that name.
func (c *crdReader) holds(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.crds[name]
	return ok
}

// crdWarmup reads, once the manager runs, the CRDs the profiles depend on into the
// crdReader, so that the first plan drafted after a start does not wait for them. CRDs
// that are not installed are left out. They are read one at a time: nothing waits for
// them, and a CRD is large to decode.
type crdWarmup struct {
	reader *crdReader
	crds   []string
}

// Start implements manager.Runnable.
func (w crdWarmup) Start(ctx context.Context) error {
	for _, name := range w.crds {
		// A CRD that cannot be read now is read by the first plan that needs it.
		_ = w.reader.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader plans.
func (crdWarmup) NeedLeaderElection() bool { return true }
