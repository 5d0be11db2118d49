package controller

import (
	"context"
	"reflect"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// memory is what the reconciler keeps of each config between reconciles, in this process
// only: nothing in it is needed for correctness after a restart.
type memory struct {
	mu      sync.Mutex
	configs map[string]*configMemory
	// events are the latest watch events of targets and inputs, oldest first, numbered by
	// seq (see changed).
	events []watchEvent
	seq    uint64
}

type configMemory struct {
	// reads are the reads of the last reconcile that rendered the profile: the next one
	// sends them ahead, concurrently.
	reads []readSpec
	// newest is the newest version of the config this process has seen for certain: the
	// answer to its last status write, or its last uncached read (see readConfig).
	newest *advisorv1alpha1.VirtPlatformConfig
	// carried are the reads of the last execution step, for the next one (see carriedReads).
	carried *carriedReads
	// versions are the resourceVersions of the objects the config's reconciles last read
	// or wrote (see wake).
	versions map[objectVersion]string
	// progressItem is the waiting item whose message last changed, at progressShown (see
	// showProgress).
	progressItem  string
	progressShown time.Time
	// busy is set while a reconcile of the config runs; the wakes of the watch events that
	// arrive meanwhile are held until it ends (see wake).
	busy bool
	held []heldWake
}

// heldWake is a watch event of one of a config's objects that arrived while a reconcile
// of the config ran, and the wake it would have caused.
type heldWake struct {
	obj             objectVersion
	resourceVersion string
	wake            func()
}

// objectVersion names an object whose version a config saw.
type objectVersion struct {
	kind, namespace, name string
}

// maxCarryAge is how long the reads of an execution step may serve the step after it.
const maxCarryAge = time.Second

// carriedReads are the answers an execution step read (and the objects its apply
// wrote), kept for the step taken right after it, so that consecutive steps do not read
// again what they read a moment before. They serve only that next step, only while the
// config still executes the same plan of the same spec, and only for maxCarryAge; a step
// that waits for a rollout carries nothing.
// Every watch event of a target or input drops what they hold of that object and every
// list (see memory.changed), except an event that reports the very version they hold (the
// echo of the operator's own apply): a change made by anybody else after the read is not
// served. The step that enters InProgress (the optimistic lock check of rule 4) and every
// draft read afresh: they never start from carried reads.
type carriedReads struct {
	at                 time.Time
	uid                types.UID
	generation         int64
	planHash           string
	reads, engineReads map[cacheKey]*cacheEntry
}

func (m *memory) of(name string) *configMemory {
	if m.configs == nil {
		m.configs = map[string]*configMemory{}
	}
	c, ok := m.configs[name]
	if !ok {
		c = &configMemory{}
		m.configs[name] = c
	}
	return c
}

func (m *memory) forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.configs, name)
}

func (m *memory) rendered(name string, reads []readSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(name).reads = reads
}

// carry keeps the reads of an execution step for the next one (see carriedReads), after
// dropping what the watch events reported since the step started (since is the event
// sequence number takeCarried returned then). When some of those events are no longer
// kept, nothing is carried.
func (m *memory) carry(name string, c *carriedReads, since uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seq != since && (len(m.events) == 0 || m.events[0].seq > since+1) {
		return
	}
	for _, ev := range m.events {
		if ev.seq > since {
			dropChanged(c.reads, ev)
			dropChanged(c.engineReads, ev)
		}
	}
	m.of(name).carried = c
}

// takeCarried returns, once, the reads the last step of the execution the config is in
// kept for this one, or nil (see carriedReads); and the sequence number of the last watch
// event so far, for carry.
func (m *memory) takeCarried(vpc *advisorv1alpha1.VirtPlatformConfig, now time.Time) (*carriedReads, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept, ok := m.configs[vpc.Name]
	if !ok || kept.carried == nil {
		return nil, m.seq
	}
	c := kept.carried
	kept.carried = nil
	if vpc.Status.Phase != advisorv1alpha1.PhaseInProgress || c.uid != vpc.UID || c.generation != vpc.Generation ||
		c.planHash != vpc.Status.PlanHash || now.Sub(c.at) > maxCarryAge || now.Before(c.at) {
		return nil, m.seq
	}
	return c, m.seq
}

// watchEvent is what a watch reported of a target or input.
type watchEvent struct {
	seq                              uint64
	at                               time.Time
	namespace, name, resourceVersion string
	deleted                          bool
}

// maxEvents bounds the watch events kept for the steps running (see carry).
const maxEvents = 1024

// changed drops, from the reads kept for every config, what they hold of an object a
// watch reported (by namespace and name, whatever its kind) and every list, unless the
// event reports the very version they hold: an object deleted, or written by anybody
// after it was read, is read again. The event is kept a while, for the steps running now
// (see carry).
func (m *memory) changed(now time.Time, namespace, name, resourceVersion string, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	ev := watchEvent{seq: m.seq, at: now, namespace: namespace, name: name, resourceVersion: resourceVersion, deleted: deleted}
	drop := 0
	for drop < len(m.events) && (len(m.events)-drop >= maxEvents || now.Sub(m.events[drop].at) > 2*maxCarryAge) {
		drop++
	}
	m.events = append(m.events[drop:], ev)
	for _, c := range m.configs {
		if c.carried != nil {
			dropChanged(c.carried.reads, ev)
			dropChanged(c.carried.engineReads, ev)
		}
	}
}

func dropChanged(entries map[cacheKey]*cacheEntry, ev watchEvent) {
	same := false
	for k, e := range entries {
		if k.list || k.namespace != ev.namespace || k.name != ev.name {
			continue
		}
		if !ev.deleted && resourceVersionOf(e.obj) == ev.resourceVersion {
			same = true
			continue
		}
		delete(entries, k)
	}
	if same {
		return
	}
	for k := range entries {
		if k.list {
			delete(entries, k)
		}
	}
}

// resourceVersionOf is the resourceVersion of a read object, "" for NotFound.
func resourceVersionOf(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return a.GetResourceVersion()
}

// read remembers the versions of the objects a reconcile of the config used (read, or
// wrote and kept as read): entries a reader was served, not reads only sent ahead.
func (m *memory) read(name string, caches ...*readCache) {
	seen := map[objectVersion]string{}
	for _, c := range caches {
		c.usedVersions(seen)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range seen {
		m.of(name).saw(k, v)
	}
}

// saw notes a version of an object the config read or wrote.
func (c *configMemory) saw(obj objectVersion, resourceVersion string) {
	if c.versions == nil {
		c.versions = map[objectVersion]string{}
	}
	c.versions[obj] = resourceVersion
}

// wrote remembers the version of an object a reconcile of the config just wrote, before
// the watch reports it (see wake).
func (m *memory) wrote(name string, obj objectVersion, resourceVersion string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(name).saw(obj, resourceVersion)
}

// knows tells whether the config's reconciles last read or wrote that version of the object.
func (c *configMemory) knows(obj objectVersion, resourceVersion string) bool {
	seen, ok := c.versions[obj]
	return ok && seen == resourceVersion
}

// wake wakes a config for a watch event of one of its objects at a resourceVersion, unless
// the event is no news to it: the config's reconciles last read or wrote that very version,
// so the decisions taken since already account for it. A deletion, or an event without a
// version, always wakes it. While a reconcile of the config runs, the wake is held until that reconcile
// ends and is judged then, against what it read and wrote: a read sent after the event
// arrived returns that version or a newer one, so an event the reconcile's own reads
// already answered does not take the config through another reconcile that reads it all
// again (a pool reporting a rollout while the health check that reads it runs).
func (m *memory) wake(name string, obj objectVersion, resourceVersion string, deleted bool, wake func()) {
	m.mu.Lock()
	c, ok := m.configs[name]
	if deleted || !ok || resourceVersion == "" {
		m.mu.Unlock()
		wake()
		return
	}
	if c.busy {
		c.held = append(c.held, heldWake{obj: obj, resourceVersion: resourceVersion, wake: wake})
		m.mu.Unlock()
		return
	}
	news := !c.knows(obj, resourceVersion)
	m.mu.Unlock()
	if news {
		wake()
	}
}

// begin notes that a reconcile of the config runs (see wake).
func (m *memory) begin(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(name).busy = true
}

// end notes that the reconcile of the config ended, after it noted what it read and wrote:
// the wakes held meanwhile that are news to it now wake it.
func (m *memory) end(name string) {
	m.mu.Lock()
	c, ok := m.configs[name]
	if !ok {
		m.mu.Unlock()
		return
	}
	var due []func()
	for _, h := range c.held {
		if !c.knows(h.obj, h.resourceVersion) {
			due = append(due, h.wake)
		}
	}
	c.busy, c.held = false, nil
	m.mu.Unlock()
	for _, wake := range due {
		wake()
	}
}

// progressDue tells whether a waiting item of the config may show a new progress message
// now (its first one always), and if so notes that it does.
func (m *memory) progressDue(name, item string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(name)
	if c.progressItem == item && now.Sub(c.progressShown) < progressInterval && !now.Before(c.progressShown) {
		return false
	}
	c.progressItem, c.progressShown = item, now
	return true
}

// progressShown notes that a waiting item of the config shows a new progress message now.
func (m *memory) progressShown(name, item string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.of(name)
	c.progressItem, c.progressShown = item, now
}

// saw remembers a version of the config read uncached or written by this process.
func (m *memory) saw(vpc *advisorv1alpha1.VirtPlatformConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(vpc.Name).newest = vpc.DeepCopy()
}

// doubt forgets the newest version seen of a config: somebody else wrote it since, so the
// next reconcile reads it uncached.
func (m *memory) doubt(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.configs[name]; ok {
		c.newest = nil
	}
}

// newestSeen returns the newest version of the config this process has seen for certain,
// or nil. It is never changed: a caller that keeps it copies it.
func (m *memory) newestSeen(name string) *advisorv1alpha1.VirtPlatformConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.configs[name]; ok {
		return c.newest
	}
	return nil
}

// history returns the reads of the config's last rendering.
func (m *memory) history(name string) []readSpec {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.configs[name]; ok {
		return c.reads
	}
	return nil
}

// readConfig reads the config a reconcile starts from. A requeue never acts on a status
// older than the operator's own last write, nor on a spec older than what this process
// has seen: the manager's cache is used when its version is at least as new as the
// newest one this process read or wrote (resourceVersions of one resource compare as
// integers), the newest one seen when the cache has not caught up with it yet, and an
// uncached read when there is none (the first reconcile of a process, a new leader) or
// somebody else wrote the config since (see doubt).
func (r *VirtPlatformConfigReconciler) readConfig(ctx context.Context, key types.NamespacedName) (*advisorv1alpha1.VirtPlatformConfig, error) {
	if newest := r.memory.newestSeen(key.Name); newest != nil {
		cached := &advisorv1alpha1.VirtPlatformConfig{}
		if err := r.Client.Get(ctx, key, cached); err == nil && cached.UID == newest.UID {
			cmp, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, newest.ResourceVersion)
			switch {
			case err != nil:
			case cmp >= 0:
				return cached, nil
			default:
				return newest.DeepCopy(), nil
			}
		}
	}
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	if err := r.APIReader.Get(ctx, key, vpc); err != nil {
		return nil, err
	}
	r.memory.saw(vpc)
	return vpc, nil
}

// crdType is the Go type profiles read CRDs as.
var crdType = reflect.TypeOf(&apiextensionsv1.CustomResourceDefinition{})

// startReads prepares the reads of a reconcile, on first use: the reads the config's last
// rendering made and its plan's targets are sent ahead, concurrently.
func (r *VirtPlatformConfigReconciler) startReads(s *scope) {
	if s.readsStarted {
		return
	}
	s.readsStarted = true
	history := r.memory.history(s.vpc.Name)
	targets := targetReads(s.vpc.Status.Items)
	specs := make([]readSpec, 0, len(history)+len(targets))
	crds := r.crdCache()
	for _, sp := range append(append([]readSpec(nil), history...), targets...) {
		// CRDs are served from memory while unchanged (see crdReader): copying one is
		// no round trip, and is left to the reader that needs it. A CRD memory does not
		// hold (the last rendering found none) is a round trip like any other read.
		if sp.key.typ != crdType || !crds.holds(sp.objKey.Name) {
			specs = append(specs, sp)
		}
	}
	s.reads.prefetch(s.readCtx, specs)
	if s.engineReads != s.reads {
		s.engineReads.prefetch(s.readCtx, targets)
	}
}

// targetReads are the reads of a plan's targets, as the plan engine reads them.
func targetReads(items []advisorv1alpha1.PlanItem) []readSpec {
	var out []readSpec
	for _, it := range items {
		if it.TargetRef.Kind == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(it.TargetRef.APIVersion)
		u.SetKind(it.TargetRef.Kind)
		out = append(out, getSpec(client.ObjectKey{Namespace: it.TargetRef.Namespace, Name: it.TargetRef.Name}, u))
	}
	return out
}

// profileReader is the reader under every reconcile's reads: uncached, except for CRDs
// that the manager's CRD watch shows unchanged since they were last read (see crdReader).
func (r *VirtPlatformConfigReconciler) profileReader() client.Reader {
	return r.crdCache()
}

func (r *VirtPlatformConfigReconciler) crdCache() *crdReader {
	r.crdsOnce.Do(func() {
		r.crds = &crdReader{Reader: r.APIReader, watched: r.Client}
	})
	return r.crds
}

// reader is what profiles render through in this reconcile (see readCache).
func (r *VirtPlatformConfigReconciler) reader(s *scope) client.Reader {
	r.startReads(s)
	return s.reads
}

// newRecorder records one rendering, reading through this reconcile's reads.
func (r *VirtPlatformConfigReconciler) newRecorder(s *scope) *plan.Recorder {
	s.rendered = true
	return plan.NewRecorder(r.reader(s))
}

// engine is the plan engine of this reconcile: its target reads share this reconcile's
// reads. Health checks are not made with it: they judge the cluster as it is now.
func (r *VirtPlatformConfigReconciler) engine(s *scope) *plan.Engine {
	r.startReads(s)
	e := *r.Engine
	e.Reader = s.engineReads
	return &e
}

// wroteTarget drops what this reconcile read of a target it just wrote.
func (s *scope) wroteTarget(ref advisorv1alpha1.TargetReference) {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	for _, c := range s.caches() {
		c.invalidate(gk, ref.Namespace, ref.Name)
	}
}
