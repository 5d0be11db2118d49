package controller

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// node is the metadata of a Node as an input cache hands it over.
func node(name, rv string, labels map[string]string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
	o.SetName(name)
	o.SetResourceVersion(rv)
	o.SetLabels(labels)
	return o
}

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

// sourceOfNodes starts the source of a Node input watched by config c, on an informer
// that has not synced, and returns the informer, the queue the source feeds and what the
// handler reported to observe.
func sourceOfNodes(t *testing.T, labelsOnly bool, m *memory) (
	*informer, workqueue.TypedRateLimitingInterface[reconcile.Request], *[]string) {
	t.Helper()
	notSynced := false
	inf := &informer{FakeInformer: controllertest.NewFakeInformer()}
	nodeKind := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(nodeKind, &metav1.PartialObjectMetadata{})
	informers := &informertest.FakeInformers{Scheme: scheme, Synced: &notSynced,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{nodeKind: inf}}
	var observed []string
	w := newWatches(nil, nil, nil, nil, nil, logr.Discard())
	w.observe = func(_, name, rv string, deleted bool) {
		if deleted {
			rv += " deleted"
		}
		observed = append(observed, name+"@"+rv)
	}
	if m != nil {
		w.wake = m.wake
	}
	key := targetKey{Kind: "Node", Name: "n1"}
	w.addConfigLocked(key, "c")
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	keyOf := func(o client.Object) targetKey { return targetKey{Kind: "Node", Name: o.GetName()} }
	if err := w.source(informers, node("", "", nil), keyOf, labelsOnly).Start(context.Background(), q); err != nil {
		t.Fatalf("start the source: %v", err)
	}
	return inf, q, &observed
}

// takeAll empties the queue and returns the configs it held.
func takeAll(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		req, _ := q.Get()
		out = append(out, req.Name)
		q.Done(req)
		q.Forget(req)
	}
	return out
}

func TestEventsOfAWatchReachTheConfigBeforeItsCacheSynced(t *testing.T) {
	inf, q, observed := sourceOfNodes(t, false, nil)
	if inf.HasSynced() {
		t.Fatal("the informer of the test must not have synced")
	}
	inf.Add(node("n1", "5", nil))
	inf.Add(node("other", "6", nil))
	if got := takeAll(q); len(got) != 1 || got[0] != "c" {
		t.Fatalf("an object of a plan seen before the cache synced must wake its config once, got %v", got)
	}
	if len(*observed) != 2 {
		t.Fatalf("every event is observed, also of objects no plan names: %v", *observed)
	}
}

func TestAnInputWatchedForItsLabelsWakesItsConfigOnlyWhenTheyChange(t *testing.T) {
	inf, q, _ := sourceOfNodes(t, true, nil)
	old := node("n1", "5", map[string]string{"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"})
	heartbeat := node("n1", "6", map[string]string{"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"})
	inf.Update(old, heartbeat)
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("an update that leaves the labels as they were must not wake the config, got %v", got)
	}
	relabelled := node("n1", "7", map[string]string{"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"})
	inf.Update(heartbeat, relabelled)
	if got := takeAll(q); len(got) != 1 {
		t.Fatalf("a label change must wake the config, got %v", got)
	}
}

func TestADeletionSeenLateWakesTheConfigEvenAtAVersionItSaw(t *testing.T) {
	m := &memory{}
	m.wrote("c", objectVersion{kind: "Node", name: "n1"}, "6")
	inf, q, observed := sourceOfNodes(t, false, m)
	inf.Update(node("n1", "5", nil), node("n1", "6", nil))
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("an event of a version the config saw is no news, got %v", got)
	}
	inf.handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: node("n1", "6", nil)})
	if got := takeAll(q); len(got) != 1 {
		t.Fatalf("a deletion known only from a relist must wake the config, got %v", got)
	}
	if last := (*observed)[len(*observed)-1]; last != "n1@6 deleted" {
		t.Fatalf("the deletion must be observed as one, got %q", last)
	}
}

func TestAnEventThatArrivesWhileTheConfigReconcilesWakesItOnlyIfTheReconcileDidNotReadIt(t *testing.T) {
	m := &memory{}
	inf, q, _ := sourceOfNodes(t, false, m)
	// during sends event while a reconcile of the config runs and reads version of the
	// object, and returns the configs woken while it ran and once it ended.
	during := func(event func(), version string) (meanwhile, after []string) {
		m.begin("c")
		event()
		meanwhile = takeAll(q)
		m.wrote("c", objectVersion{kind: "Node", name: "n1"}, version)
		m.end("c")
		return meanwhile, takeAll(q)
	}

	meanwhile, after := during(func() { inf.Update(node("n1", "5", nil), node("n1", "6", nil)) }, "6")
	if len(meanwhile) != 0 || len(after) != 0 {
		t.Fatalf("an event of the version the reconcile read must not wake the config, got %v while it ran, %v after", meanwhile, after)
	}
	// The reconcile read the object before the event.
	meanwhile, after = during(func() { inf.Update(node("n1", "6", nil), node("n1", "7", nil)) }, "6")
	if len(meanwhile) != 0 || len(after) != 1 {
		t.Fatalf("an event of a version the reconcile did not read must wake the config once, when it ends: got %v while it ran, %v after", meanwhile, after)
	}
	meanwhile, after = during(func() { inf.Delete(node("n1", "7", nil)) }, "7")
	if len(meanwhile) != 1 || len(after) != 0 {
		t.Fatalf("a deletion must wake the config at once, and once: got %v while it ran, %v after", meanwhile, after)
	}
	inf.Update(node("n1", "7", nil), node("n1", "8", nil))
	if got := takeAll(q); len(got) != 1 {
		t.Fatalf("an event that arrives between reconciles must wake the config at once, got %v", got)
	}
}
