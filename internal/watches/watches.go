// Package watches watches what the configs' plans depend on: their targets and their
// inputs, metadata only, registered while the manager runs.
package watches

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Watches watches what the current plans depend on, metadata only, registered while the
// manager runs (a CRD installed later needs no restart):
//   - targets, through one cache per managed kind that lists only the objects carrying the
//     managed-by label: memory does not grow with unrelated objects of a managed kind;
//   - inputs (objects a plan was rendered from but does not write, and targets the user
//     opted out with an annotation), each through a small cache of its own, selected by
//     name when the plan read one object, stopped when no plan needs it any more.
//
// Events are mapped to the configs whose plans name the object and dropped otherwise.
type Watches struct {
	mu     sync.Mutex
	ctx    context.Context
	ctrl   controller.Controller
	mapper meta.RESTMapper
	cfg    *rest.Config
	// httpClient is the manager's: every watch shares its connections to the API server.
	httpClient *http.Client
	scheme     *runtime.Scheme
	log        logr.Logger

	kinds    map[schema.GroupKind]context.CancelFunc
	inputs   map[plan.TargetKey]*inputWatch
	configs  map[plan.TargetKey]map[string]bool
	byConfig map[string][]plan.TargetKey
	// managers are the field managers of the configs' profiles: an update that only
	// records a config's own write does not wake it.
	managers map[string]string
}

// inputWatch is the cache of one input.
type inputWatch struct {
	stop    context.CancelFunc
	configs map[string]bool
	// synced is closed once the cache has listed the input and handed the list to the
	// handler of its events; failed once a list or watch of it failed (it is retried).
	synced   <-chan struct{}
	failed   chan struct{}
	failOnce sync.Once
	// initialListWakes: the creations of the cache's initial list wake the input's configs.
	// They do unless the cache was started for a read (see Reader) that waited for it.
	initialListWakes atomic.Bool
}

// New watches for controller c, whose events it enqueues.
func New(c controller.Controller, mapper meta.RESTMapper, cfg *rest.Config, httpClient *http.Client,
	scheme *runtime.Scheme, log logr.Logger) *Watches {
	return &Watches{
		ctrl: c, mapper: mapper, cfg: cfg, httpClient: httpClient, scheme: scheme, log: log,
		kinds:    map[schema.GroupKind]context.CancelFunc{},
		inputs:   map[plan.TargetKey]*inputWatch{},
		configs:  map[plan.TargetKey]map[string]bool{},
		byConfig: map[string][]plan.TargetKey{},
		managers: map[string]string{},
	}
}

// Start implements manager.Runnable: input caches live as long as the manager.
func (w *Watches) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Track records what a config's plan depends on and watches it.
func (w *Watches) Track(vpc *advisorv1alpha1.VirtPlatformConfig) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	name := vpc.Name
	var keys []plan.TargetKey
	var inputs []plan.TargetKey
	items := vpc.Status.Items
	if vpc.Status.Phase == advisorv1alpha1.PhaseReverted {
		items = nil // reverted: nothing is managed any more
	}
	for _, it := range items {
		k := plan.KeyOf(it.TargetRef)
		switch {
		case it.State == advisorv1alpha1.ItemSkipped && it.ControlsHash != "":
			// Opted out by an annotation: it carries no managed-by label, so it is watched
			// as an input, to see the annotation go.
			inputs = append(inputs, k)
		case it.State != advisorv1alpha1.ItemSkipped:
			keys = append(keys, k)
			if it.Applied == nil && it.TargetRef.Kind != "" {
				// Never applied, so it may carry no managed-by label yet: watched by name
				// too, so a user-control annotation added during the review redrafts
				// the plan shown.
				inputs = append(inputs, k)
			}
		}
	}
	inputs = append(inputs, rolloutPools(vpc)...)
	for _, in := range vpc.Status.Inputs {
		k := plan.KeyOf(advisorv1alpha1.TargetReference{APIVersion: in.APIVersion, Kind: in.Kind, Namespace: in.Namespace, Name: in.Name})
		if watchedInput(k) {
			inputs = append(inputs, k)
		}
	}
	w.untrackLocked(name)
	w.managers[name] = plan.FieldManagerFor(string(vpc.Spec.Profile))
	for _, k := range keys {
		w.addConfigLocked(k, name)
		w.watchKindLocked(k.GroupKind())
	}
	for _, k := range inputs {
		w.addConfigLocked(k, name)
		w.watchInputLocked(k, name, true)
	}
	w.stopUnusedInputsLocked()
}

// rolloutPools are the MachineConfigPools an executing plan waits for: those of
// status.rollouts that roll out an item, applied or about to be, whose health is a rollout.
// A rollout is judged from its pools: any change of one wakes the config at once, instead
// of at the next health poll. Each pool is watched by name, under the key of a pool the
// plan read by name, so one cache and one event serve both; the whole kind is watched
// when such an item is in no rollout of status.rollouts.
func rolloutPools(vpc *advisorv1alpha1.VirtPlatformConfig) []plan.TargetKey {
	if vpc.Status.Phase != advisorv1alpha1.PhaseInProgress {
		return nil
	}
	gvk := targets.MachineConfigPool.GVK
	var out []plan.TargetKey
	for _, it := range vpc.Status.Items {
		if it.State != advisorv1alpha1.ItemPending && it.State != advisorv1alpha1.ItemInProgress ||
			it.Action == advisorv1alpha1.ItemActionRelease || !targets.RollsOut(plan.KeyOf(it.TargetRef).GroupKind()) {
			continue
		}
		found := false
		for _, ro := range vpc.Status.Rollouts {
			if slices.Contains(ro.Items, it.Name) {
				out, found = append(out, plan.TargetKey{Group: gvk.Group, Kind: gvk.Kind, Name: ro.Pool}), true
			}
		}
		if !found {
			return []plan.TargetKey{{Group: gvk.Group, Kind: gvk.Kind}}
		}
	}
	return out
}

// watchedInput tells whether an input a plan reads is watched as one.
func watchedInput(k plan.TargetKey) bool {
	switch {
	case k.Group == apiextensionsv1.GroupName:
		return false // CRDs are watched by the controller itself.
	case k.GroupKind() == targets.MachineConfig.GVK.GroupKind() && targets.IsRenderedConfig(k.Name):
		// Never changes: the pool that runs it, which the plan read to find it, is
		// watched, and moves to another one instead.
		return false
	}
	return true
}

func (w *Watches) addConfigLocked(k plan.TargetKey, config string) {
	if w.configs[k] == nil {
		w.configs[k] = map[string]bool{}
	}
	if w.configs[k][config] {
		return
	}
	w.configs[k][config] = true
	w.byConfig[config] = append(w.byConfig[config], k)
}

// Forget drops a config's targets and inputs. Target informers stay (another plan may
// name the kind again); input caches no plan needs are stopped.
func (w *Watches) Forget(config string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(config)
	w.stopUnusedInputsLocked()
}

func (w *Watches) untrackLocked(config string) {
	for _, k := range w.byConfig[config] {
		delete(w.configs[k], config)
		if len(w.configs[k]) == 0 {
			delete(w.configs, k)
		}
		if in, ok := w.inputs[k]; ok {
			delete(in.configs, config)
		}
	}
	delete(w.byConfig, config)
	delete(w.managers, config)
}

func (w *Watches) stopUnusedInputsLocked() {
	for k, in := range w.inputs {
		if len(in.configs) == 0 {
			in.stop()
			delete(w.inputs, k)
			w.log.V(1).Info("stopped watching input", "input", k.String())
		}
	}
}

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

// labelledObject is what the cache of an input watched for its labels only (Nodes) keeps of
// an object: its identity and a digest of its labels. Such a cache only feeds events, and
// its updates are judged by the digests alone, so thousands of Nodes, each with hundreds of
// Node Feature Discovery labels and long annotations, take about a hundred bytes each for
// as long as a plan depends on them. Nothing reads the cache: its objects are never handed
// out.
type labelledObject struct {
	metav1.TypeMeta
	Name, Namespace, ResourceVersion string
	LabelsDigest                     string
}

// GetName and GetNamespace are what the handler of the cache asks of an object.
func (o *labelledObject) GetName() string      { return o.Name }
func (o *labelledObject) GetNamespace() string { return o.Namespace }

// GetObjectMeta implements metav1.ObjectMetaAccessor: the informer keys its objects by it.
func (o *labelledObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, ResourceVersion: o.ResourceVersion}
}

// DeepCopyObject implements runtime.Object.
func (o *labelledObject) DeepCopyObject() runtime.Object { c := *o; return &c }

// keepLabelsDigest is the transform of the caches of inputs watched for their labels only:
// an object becomes a labelledObject. The digest is taken from the labels as they are,
// without encoding them first: a few allocations per Node while the initial list of
// thousands of Nodes streams in. The informer hands the initial events of a watch-list to
// the transform twice, as they arrive and again when they replace the cache's contents: a
// labelledObject is kept as it is.
func keepLabelsDigest(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &labelledObject{TypeMeta: m.TypeMeta, Name: m.Name, Namespace: m.Namespace,
		ResourceVersion: m.ResourceVersion, LabelsDigest: labelsDigest(m.Labels)}, nil
}

// labelsDigest tells sets of labels apart: the first 128 bits of the SHA-256 of the
// labels in the order of their keys, each key and value followed by a zero byte (which
// neither can contain).
func labelsDigest(set map[string]string) string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	var buf []byte
	for _, k := range keys {
		buf = append(append(buf[:0], k...), 0)
		buf = append(append(buf, set[k]...), 0)
		_, _ = h.Write(buf)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// eventKind is what the updates of a cache's objects are judged by.
type eventKind int

const (
	// targetEvents: a target's update wakes every config watching it, except the one
	// whose own profile made it (see ownWrite).
	targetEvents eventKind = iota
	// inputEvents: an input's update wakes its configs as a target's does, and only when
	// what a plan is rendered from changed: its spec (as its generation counts it), labels,
	// annotations or deletion; for a MachineConfigPool, any change, since profiles and
	// rollouts read its status (the configuration it runs, its machines). A profile's own
	// write changes nothing it is rendered from: a target's values never count among its
	// inputs. An input watched for its labels only (a Node, kept as a labelledObject)
	// wakes its configs when they change.
	inputEvents
)

// named is what a cache's events are mapped to configs by.
type named interface {
	GetName() string
	GetNamespace() string
}

// source feeds the events of one kind of a cache to the controller: each event enqueues
// the configs whose plans name its object (keyOf maps it), its updates as events says.
// The creations of a cache's initial list wake them all, while initialListWakes (nil:
// always) says so: an object may have changed between the read a plan was rendered from
// and the list.
func (w *Watches) source(c cache.Cache, obj client.Object, keyOf func(named) plan.TargetKey,
	events eventKind, initialListWakes func() bool) *informerSource {
	return &informerSource{cache: c, obj: obj, synced: make(chan struct{}),
		handler: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
			enqueue := func(reqs []reconcile.Request) {
				for _, req := range reqs {
					q.Add(req)
				}
			}
			return toolscache.ResourceEventHandlerDetailedFuncs{
				AddFunc: func(o any, initial bool) {
					if initial && initialListWakes != nil && !initialListWakes() {
						return
					}
					switch created := o.(type) {
					case client.Object:
						enqueue(w.created(keyOf(created), created, !initial))
					case named:
						enqueue(w.configsOf(keyOf(created), nil))
					}
				},
				UpdateFunc: func(o, n any) {
					switch old := o.(type) {
					case client.Object:
						if updated, ok := n.(client.Object); ok {
							enqueue(w.woken(keyOf(updated), old, updated, events))
						}
					case *labelledObject:
						if updated, ok := n.(*labelledObject); ok && updated.LabelsDigest != old.LabelsDigest {
							enqueue(w.configsOf(keyOf(updated), nil))
						}
					}
				},
				DeleteFunc: func(o any) {
					if tombstone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
						o = tombstone.Obj // a deletion seen only by a relist
					}
					if deleted, ok := o.(named); ok {
						enqueue(w.configsOf(keyOf(deleted), nil))
					}
				},
			}
		}}
}

// informerSource is the source of one cache's informer of obj: it hands the informer's
// events to handler, and closes synced once the informer has listed and handed the list
// to handler (without the polling of the sources controller-runtime offers, so a read
// that waits for it waits only as long as the list takes).
type informerSource struct {
	cache   cache.Cache
	obj     client.Object
	handler func(workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler
	synced  chan struct{}
	// stopped is closed when the cache stops (nil: with the controller).
	stopped <-chan struct{}
}

var _ source.SyncingSource = (*informerSource)(nil)

// Start implements source.Source.
func (s *informerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	inf, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(s.handler(q))
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-reg.HasSyncedChecker().Done():
			close(s.synced)
		case <-ctx.Done():
		case <-s.stopped:
		}
	}()
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// woken are the configs an update of object k concerns.
func (w *Watches) woken(k plan.TargetKey, old, updated client.Object, events eventKind) []reconcile.Request {
	return w.configsOf(k, func(manager string) bool {
		return ownWrite(old, updated, manager) ||
			events == inputEvents && k.GroupKind() != targets.MachineConfigPool.GVK.GroupKind() && statusOnly(old, updated)
	})
}

// created are the configs a creation of object k concerns: all of them, but with
// byWrite (the object came into the cache by a write, not with its initial list) the
// config whose own write brought it in (see writtenLast).
func (w *Watches) created(k plan.TargetKey, obj client.Object, byWrite bool) []reconcile.Request {
	return w.configsOf(k, func(manager string) bool { return byWrite && writtenLast(obj, manager) })
}

// writtenLast tells whether manager made the last write the object's managedFields show:
// its entry is newer than every other one. A target comes into a cache selected by the
// managed-by label with the profile's first write, which sets the label; another writer
// that wrote in the same second, or later, wakes its configs.
func writtenLast(obj client.Object, manager string) bool {
	entries := obj.GetManagedFields()
	i := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
	if manager == "" || i < 0 || entries[i].Time == nil || !obj.GetDeletionTimestamp().IsZero() {
		return false
	}
	for j, e := range entries {
		if j != i && (e.Time == nil || !e.Time.Before(entries[i].Time)) {
			return false
		}
	}
	return true
}

// ownWrite tells whether an update records only a write by manager: every managedFields
// entry it adds, changes or drops is manager's. Any other writer's change, a status
// written by the target's own controller, or a deletion, shows in an entry of theirs or
// in the deletion timestamp.
func ownWrite(old, updated client.Object, manager string) bool {
	if manager == "" || !old.GetDeletionTimestamp().Equal(updated.GetDeletionTimestamp()) {
		return false
	}
	before, after := old.GetManagedFields(), updated.GetManagedFields()
	changed := false
	for _, pair := range [][2][]metav1.ManagedFieldsEntry{{after, before}, {before, after}} {
		for _, e := range pair[0] {
			if slices.ContainsFunc(pair[1], func(o metav1.ManagedFieldsEntry) bool { return equality.Semantic.DeepEqual(e, o) }) {
				continue
			}
			if e.Manager != manager {
				return false
			}
			changed = true
		}
	}
	return changed
}

// statusOnly tells whether an update leaves everything a plan is rendered from of the
// object as it was: its generation (the API server counts a change of the spec there),
// labels, annotations and deletion.
func statusOnly(old, updated client.Object) bool {
	return old.GetGeneration() == updated.GetGeneration() &&
		maps.Equal(old.GetLabels(), updated.GetLabels()) &&
		maps.Equal(old.GetAnnotations(), updated.GetAnnotations()) &&
		old.GetDeletionTimestamp().Equal(updated.GetDeletionTimestamp())
}

// digestManagedFields is the transform of the target and input caches: an object keeps its
// managedFields entries (ownWrite judges by them), each with a digest of its field set in
// place of the set.
func digestManagedFields(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	entries := o.GetManagedFields()
	for i := range entries {
		if f := entries[i].FieldsV1; f != nil && !digested(f.GetRawBytes()) {
			sum := sha256.Sum256(f.GetRawBytes())
			entries[i].FieldsV1 = metav1.NewFieldsV1(`"` + hex.EncodeToString(sum[:16]) + `"`)
		}
	}
	return o, nil
}

// digested tells whether digestManagedFields made raw: a JSON string of 32 hex digits, where
// a field set is a JSON object.
func digested(raw []byte) bool { return len(raw) == 34 && raw[0] == '"' }

// configsOf are the configs whose plans name object k, but those skip tells apart by the
// field manager of their profile (nil: none).
func (w *Watches) configsOf(k plan.TargetKey, skip func(manager string) bool) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]reconcile.Request, 0, len(w.configs[k]))
	for name := range w.configs[k] {
		if skip != nil && skip(w.managers[name]) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return out
}

// CRDMetadata is the metadata-only object the controller watches CRDs with.
func CRDMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return o
}

// CacheOptions keeps the manager's cache to what the operator owns or watches: its
// configs and CRD metadata in full, and of every managed kind only the objects that carry
// the managed-by label (metadata only). Targets themselves are always read uncached.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{plan.ManagedByLabel: plan.ManagedByValue}),
		DefaultTransform:     cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&advisorv1alpha1.VirtPlatformConfig{}: {Label: labels.Everything()},
			CRDMetadata():                         {Label: labels.Everything()},
		},
	}
}
