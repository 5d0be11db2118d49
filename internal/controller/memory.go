package controller

import (
	"context"
	"reflect"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
}

type configMemory struct {
	// reads are the reads of the last reconcile that rendered the profile: the next one
	// sends them ahead, concurrently.
	reads []readSpec
	// newest is the newest version of the config this process has seen for certain: the
	// answer to its last status write, or its last uncached read (see readConfig).
	newest *advisorv1alpha1.VirtPlatformConfig
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
	for _, sp := range append(append([]readSpec(nil), history...), targets...) {
		// CRDs are served from memory while unchanged (see crdReader): copying one is
		// no round trip, and is left to the reader that needs it.
		if sp.key.typ != crdType {
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
	s.reads.invalidate(ref.Namespace, ref.Name)
	if s.engineReads != s.reads {
		s.engineReads.invalidate(ref.Namespace, ref.Name)
	}
}
