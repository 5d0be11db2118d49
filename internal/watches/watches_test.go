package watches

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// informer is a fake informer that keeps the handler added to it, to hand it what a
// real informer hands over and the fake cannot: a deletion seen only by a relist.
type informer struct {
	*controllertest.FakeInformer
	handler toolscache.ResourceEventHandler
}

func (i *informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return i.FakeInformer.AddEventHandler(h)
}

func (i *informer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return i.FakeInformer.AddEventHandlerWithOptions(h, o)
}

// sourceOf starts the source of object n1 of kind gvk watched by config c, keyed by its
// name, its updates judged by changed (nil: every update counts), and returns the watches,
// the informer and the queue the source feeds, once the source's handler is registered.
func sourceOf(t *testing.T, gvk schema.GroupVersionKind, changed func(old, updated any) bool) (*Watches, *informer, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	synced := true
	inf := &informer{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced)}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
	informers := &informertest.FakeInformers{Scheme: scheme, Synced: &synced,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{gvk: inf}}
	w := New(nil, nil, nil, nil, nil, nil, logr.Discard())
	w.addConfigLocked(plan.TargetKey{Group: gvk.Group, Kind: gvk.Kind, Name: "n1"}, "c")
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	keyOf := func(o named) []plan.TargetKey {
		return []plan.TargetKey{{Group: gvk.Group, Kind: gvk.Kind, Name: o.GetName()}}
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := w.source(informers, obj, keyOf, changed)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := src.Start(ctx, q); err != nil {
		t.Fatalf("start the source: %v", err)
	}
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatalf("wait for the source: %v", err)
	}
	return w, inf, q
}

var (
	nodeKind = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	hcoKind  = schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1beta1", Kind: "HyperConverged"}
)

// takeAll empties the queue and returns the configs it held.
func takeAll(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		req, _ := q.Get()
		out = append(out, req.Name)
		q.Done(req)
		q.Forget(req)
	}
	slices.Sort(out)
	return out
}

// object is object n1 of kind gvk at resourceVersion rv.
func object(gvk schema.GroupVersionKind, rv string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(gvk)
	o.SetName("n1")
	o.SetResourceVersion(rv)
	return o
}

// Every event of a target or an input wakes every config that depends on it, its own
// writes and its initial list included: nothing is told apart by who wrote it.
func TestEveryEventOfAWatchedObjectWakesEveryConfigThatDependsOnIt(t *testing.T) {
	w, inf, q := sourceOf(t, hcoKind, nil)
	w.addConfigLocked(plan.TargetKey{Group: hcoKind.Group, Kind: hcoKind.Kind, Name: "n1"}, "other")
	inf.handler.OnAdd(object(hcoKind, "5"), true)
	if got := takeAll(q); !slices.Equal(got, []string{"c", "other"}) {
		t.Fatalf("an object of a cache's initial list may have changed since the plan read it: it must wake its configs, got %v", got)
	}
	before := object(hcoKind, "5")
	before.SetGeneration(3)
	for name, change := range map[string]func(o *metav1.PartialObjectMetadata){
		"status alone": func(*metav1.PartialObjectMetadata) {},
		"spec":         func(o *metav1.PartialObjectMetadata) { o.SetGeneration(4) },
		"labels":       func(o *metav1.PartialObjectMetadata) { o.SetLabels(map[string]string{"custom": ""}) },
		"annotations": func(o *metav1.PartialObjectMetadata) {
			o.SetAnnotations(map[string]string{plan.ModeAnnotation: "unmanaged"})
		},
	} {
		changed := before.DeepCopy()
		changed.SetResourceVersion("6")
		change(changed)
		inf.Update(before, changed)
		if got := takeAll(q); !slices.Equal(got, []string{"c", "other"}) {
			t.Errorf("a change of the object's %s must wake every config that depends on it, got %v", name, got)
		}
	}
	inf.handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: object(hcoKind, "7")})
	if got := takeAll(q); !slices.Equal(got, []string{"c", "other"}) {
		t.Fatalf("a deletion known only from a relist must wake the configs, got %v", got)
	}
	w.Forget("other")
	inf.Update(object(hcoKind, "7"), object(hcoKind, "8"))
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a config forgotten must not be woken, got %v", got)
	}
}

// The one informer of Nodes keeps of each its name and the labels the profiles decide
// from, and nothing else: not its other labels, annotations, managedFields or status.
func TestTheNodeInformerKeepsANodesNameAndFactLabelsOnly(t *testing.T) {
	full := object(nodeKind, "5")
	full.SetUID("uid-1")
	full.SetLabels(map[string]string{
		"node-role.kubernetes.io/worker":                   "",
		"feature.node.kubernetes.io/cpu-model.vendor_id":   "Intel",
		"feature.node.kubernetes.io/pci-0302_10de.present": "true",
		"feature.node.kubernetes.io/cpu-cpuid.AVX512F":     "true",
		"kubernetes.io/hostname":                           "n1",
	})
	full.SetAnnotations(map[string]string{"k8s.ovn.org/node-subnets": `{"default":["10.128.0.0/23"]}`})
	full.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubelet"}})
	kept := nodeFactsOf(t, full)
	want := map[string]string{
		"node-role.kubernetes.io/worker":                   "",
		"feature.node.kubernetes.io/cpu-model.vendor_id":   "Intel",
		"feature.node.kubernetes.io/pci-0302_10de.present": "true",
	}
	if !maps.Equal(kept.Labels, want) || kept.Annotations != nil || kept.ManagedFields != nil || kept.Name != "n1" || kept.Kind != "Node" {
		t.Errorf("the cached Node must keep its name, kind and fact labels only: %+v", kept)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(kept); err != nil || key != "n1" {
		t.Errorf("the informer keys a cached Node by its name: got %q, %v", key, err)
	}
	if again, err := nodeFacts(kept); err != nil || again != any(kept) {
		t.Errorf("a Node transformed again (as the informer does with the initial events of a watch-list) must be kept as it is, not copied: %+v", again)
	}
}

// Nodes that report the same facts share one map of them; a Node whose facts differ has
// its own.
func TestNodesThatReportTheSameFactsShareTheirLabels(t *testing.T) {
	node := func(name, vendor string) *metav1.PartialObjectMetadata {
		o := object(nodeKind, "5")
		o.SetName(name)
		o.SetLabels(map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": name,
			"feature.node.kubernetes.io/cpu-model.vendor_id": vendor})
		return o
	}
	a, b, c := nodeFactsOf(t, node("a", "Intel")), nodeFactsOf(t, node("b", "Intel")), nodeFactsOf(t, node("c", "AMD"))
	if reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() {
		t.Error("two Nodes with the same facts keep two maps of them")
	}
	if reflect.ValueOf(a.Labels).Pointer() == reflect.ValueOf(c.Labels).Pointer() || c.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] != "AMD" {
		t.Errorf("a Node with other facts shares the labels of another: %v", c.Labels)
	}
	if copied := a.DeepCopy(); reflect.ValueOf(copied.Labels).Pointer() == reflect.ValueOf(a.Labels).Pointer() {
		t.Error("a copy of a cached Node (every read of the cache is one) shares its labels")
	}
}

func nodeFactsOf(t *testing.T, o *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	t.Helper()
	o = o.DeepCopy()
	if o.UID == "" {
		o.UID = "uid-" + types.UID(o.Name) // as the API server serves it
	}
	out, err := nodeFacts(o)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*metav1.PartialObjectMetadata)
}

// A Node's events wake the configs that read the Nodes; an update that leaves what the
// cache keeps of it as it was (a heartbeat, its status, another label) is no change of
// anything cached.
func TestANodesEventsWakeItsConfigsWhenWhatTheCacheKeepsChanges(t *testing.T) {
	_, inf, q := sourceOf(t, nodeKind, nodeChanged)
	full := object(nodeKind, "5")
	full.SetLabels(map[string]string{"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel", "kubernetes.io/hostname": "n1"})
	heartbeat := full.DeepCopy()
	heartbeat.SetResourceVersion("6")
	heartbeat.Labels["kubernetes.io/hostname"] = "renamed"
	heartbeat.SetAnnotations(map[string]string{"kubevirt.io/heartbeat": "2026-01-05T10:00:00Z"})
	inf.handler.OnUpdate(nodeFactsOf(t, full), nodeFactsOf(t, heartbeat))
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("an update of a Node that leaves its fact labels as they were must not wake the config, got %v", got)
	}
	relabelled := heartbeat.DeepCopy()
	relabelled.SetResourceVersion("7")
	relabelled.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	inf.handler.OnUpdate(nodeFactsOf(t, heartbeat), nodeFactsOf(t, relabelled))
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a change of a Node's fact labels must wake the config, got %v", got)
	}
	inf.handler.OnAdd(nodeFactsOf(t, relabelled), true)
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a Node's creation must wake the config, got %v", got)
	}
	inf.handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: nodeFactsOf(t, relabelled)})
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a Node's deletion must wake the config, got %v", got)
	}
}

func TestAnExecutionWatchesThePoolsOfItsRolloutsByName(t *testing.T) {
	mc := advisorv1alpha1.TargetReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"}
	hco := advisorv1alpha1.TargetReference{APIVersion: "hco.kubevirt.io/v1beta1", Kind: "HyperConverged", Name: "kubevirt-hyperconverged"}
	vpc := &advisorv1alpha1.VirtPlatformConfig{Status: advisorv1alpha1.VirtPlatformConfigStatus{
		Phase: advisorv1alpha1.PhaseInProgress,
		Items: []advisorv1alpha1.PlanItem{
			{Name: "hco", TargetRef: hco, State: advisorv1alpha1.ItemPending},
			{Name: "karg", TargetRef: mc, State: advisorv1alpha1.ItemInProgress},
		},
		Rollouts: []advisorv1alpha1.PoolRollout{{Pool: "master"}, {Pool: "worker", Items: []string{"karg"}}},
	}}
	pool := plan.TargetKey{Group: "machineconfiguration.openshift.io", Kind: "MachineConfigPool"}
	byName := pool
	byName.Name = "worker"
	if got := rolloutPools(vpc); !slices.Equal(got, []plan.TargetKey{byName}) {
		t.Errorf("an item rolling out in pool worker: want the pool watched by name, got %v", got)
	}
	vpc.Status.Rollouts = nil
	if got := rolloutPools(vpc); !slices.Equal(got, []plan.TargetKey{pool}) {
		t.Errorf("an item rolling out in no pool of status.rollouts: want every pool watched, got %v", got)
	}
	vpc.Status.Phase = advisorv1alpha1.PhaseCompleted
	if got := rolloutPools(vpc); len(got) != 0 {
		t.Errorf("a completed plan waits for no pool, got %v", got)
	}
}

func TestARenderedMachineConfigIsNotWatched(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, nil, logr.Discard())
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	vpc.Name = "load-aware-rebalancing"
	vpc.Status.Inputs = []advisorv1alpha1.InputReference{
		{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool", Name: "worker"},
		{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "rendered-worker-05fb045310c248cd46950b7ad4d0d10a"},
		{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-ssh"},
	}
	w.Track(vpc)
	var names []string
	for _, k := range w.byConfig[vpc.Name] {
		names = append(names, k.Name)
	}
	if !slices.Equal(names, []string{"worker", "99-worker-ssh"}) {
		t.Fatalf("want the pool and the other MachineConfig watched, not the rendered configuration the pool runs; got %v", names)
	}
}
