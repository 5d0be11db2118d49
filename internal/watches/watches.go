// Package watches watches what the configs' plans depend on: their targets and their
// inputs, metadata only, registered while the manager runs.
package watches

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

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

	// nodes is the manager's cache: its one metadata-only informer of Nodes serves every
	// read and watch of them (nil: Nodes are read from the API server and not watched).
	nodes        cache.Cache
	nodesWatched bool
	// vmis is the informer of the VirtualMachineInstances (nil until a forecast needs it).
	vmis *vmiWatch

	kinds    map[schema.GroupKind]context.CancelFunc
	inputs   map[plan.TargetKey]*inputWatch
	configs  map[plan.TargetKey]map[string]bool
	byConfig map[string][]plan.TargetKey
}

// inputWatch is the cache of one input, and the configs that read it.
type inputWatch struct {
	stop    context.CancelFunc
	configs map[string]bool
}

// New watches for controller c, whose events it enqueues; nodes is the manager's cache,
// made with CacheOptions.
func New(c controller.Controller, nodes cache.Cache, mapper meta.RESTMapper, cfg *rest.Config, httpClient *http.Client,
	scheme *runtime.Scheme, log logr.Logger) *Watches {
	return &Watches{
		ctrl: c, nodes: nodes, mapper: mapper, cfg: cfg, httpClient: httpClient, scheme: scheme, log: log,
		kinds:    map[schema.GroupKind]context.CancelFunc{},
		inputs:   map[plan.TargetKey]*inputWatch{},
		configs:  map[plan.TargetKey]map[string]bool{},
		byConfig: map[string][]plan.TargetKey{},
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
	inputs = append(inputs, vmForecastInputs(vpc)...)
	for _, in := range vpc.Status.Inputs {
		k := plan.KeyOf(advisorv1alpha1.TargetReference{APIVersion: in.APIVersion, Kind: in.Kind, Namespace: in.Namespace, Name: in.Name})
		if watchedInput(k) {
			inputs = append(inputs, k)
		}
	}
	w.untrackLocked(name)
	for _, k := range keys {
		w.addConfigLocked(k, name)
		w.watchKindLocked(k.GroupKind())
	}
	for _, k := range inputs {
		w.addConfigLocked(k, name)
		w.watchInputLocked(k, name)
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
}

func (w *Watches) stopUnusedInputsLocked() {
	for k, in := range w.inputs {
		if len(in.configs) == 0 {
			in.stop()
			delete(w.inputs, k)
			w.log.V(1).Info("stopped watching input", "input", k.String())
		}
	}
	w.stopUnusedVMIsLocked()
}

// CRDMetadata is the metadata-only object the controller watches CRDs with.
func CRDMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return o
}

// CacheOptions keeps the manager's cache to what the operator owns or watches: its
// configs, the ApprovalPolicy and CRD metadata in full, every Node as its name and the labels the profiles
// decide from (see nodeFacts), and of every managed kind only the objects that carry the
// managed-by label (metadata only). Targets themselves are always read uncached. The
// Nodes' informer starts with the first read or watch of them.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{plan.ManagedByLabel: plan.ManagedByValue}),
		DefaultTransform:     cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&advisorv1alpha1.VirtPlatformConfig{}: {Label: labels.Everything()},
			&advisorv1alpha1.ApprovalPolicy{}:     {Label: labels.Everything()},
			CRDMetadata():                         {Label: labels.Everything()},
			NodeMetadata():                        {Label: labels.Everything(), Transform: nodeFacts},
		},
	}
}
