package watches

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
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

func (i *informer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return i.FakeInformer.AddEventHandlerWithOptions(h, o)
}

// sourceOfNodes starts the source of Node n1 watched by config c, its updates judged as
// events says, and returns the informer and the queue the source feeds, once the source's
// handler is registered.
func sourceOfNodes(t *testing.T, events eventKind) (*informer, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	_, inf, q := sourceWith(t, events)
	return inf, q
}

// sourceWith is sourceOfNodes that also returns the watches, for their state.
func sourceWith(t *testing.T, events eventKind) (*Watches, *informer, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	return sourceOf(t, events, schema.GroupVersionKind{Version: "v1", Kind: "Node"}, nil)
}

// sourceOf is sourceWith for object n1 of kind gvk, whose initial list wakes its config
// while initialListWakes says so (nil: always).
func sourceOf(t *testing.T, events eventKind, gvk schema.GroupVersionKind, initialListWakes func() bool) (*Watches, *informer, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	synced := true
	inf := &informer{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced)}
	nodeKind := gvk
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(nodeKind, &metav1.PartialObjectMetadata{})
	informers := &informertest.FakeInformers{Scheme: scheme, Synced: &synced,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{nodeKind: inf}}
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	key := plan.TargetKey{Group: gvk.Group, Kind: gvk.Kind, Name: "n1"}
	w.addConfigLocked(key, "c")
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	keyOf := func(o named) plan.TargetKey {
		return plan.TargetKey{Group: gvk.Group, Kind: gvk.Kind, Name: o.GetName()}
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := w.source(informers, obj, keyOf, events, initialListWakes)
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

func TestADeletionSeenLateWakesTheConfig(t *testing.T) {
	inf, q := sourceOfNodes(t, inputEvents)
	inf.handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: node("n1", "6", nil)})
	if got := takeAll(q); len(got) != 1 || got[0] != "c" {
		t.Fatalf("a deletion known only from a relist must wake the config, got %v", got)
	}
}

func TestANodeInAnInputCacheKeepsItsIdentityAndADigestOfItsLabels(t *testing.T) {
	full := node("n1", "5", map[string]string{"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel", "kubernetes.io/hostname": "n1"})
	full.SetUID("uid-1")
	full.SetAnnotations(map[string]string{"k8s.ovn.org/node-subnets": `{"default":["10.128.0.0/23"]}`})
	full.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubelet"}})
	kept := transformed(t, full)
	if kept.Name != "n1" || kept.ResourceVersion != "5" || kept.Kind != "Node" || kept.LabelsDigest != labelsDigest(full.Labels) {
		t.Errorf("the cached Node must keep its name, resourceVersion, kind and the digest of its labels: %+v", kept)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(kept); err != nil || key != "n1" {
		t.Errorf("the informer keys a cached Node by its name: got %q, %v", key, err)
	}
	again, err := keepLabelsDigest(kept)
	if err != nil {
		t.Fatal(err)
	}
	if again != any(kept) {
		t.Errorf("a Node transformed again (as the informer does with the initial events of a watch-list) is not kept as it was: %+v", again)
	}

	inf, q := sourceOfNodes(t, inputEvents)
	heartbeat := full.DeepCopy()
	heartbeat.SetResourceVersion("6")
	heartbeat.SetAnnotations(map[string]string{"kubevirt.io/heartbeat": "2026-01-05T10:00:00Z"})
	inf.handler.OnUpdate(kept, transformed(t, heartbeat))
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("an update of a cached Node that leaves its labels as they were must not wake the config, got %v", got)
	}
	relabelled := heartbeat.DeepCopy()
	relabelled.SetResourceVersion("7")
	relabelled.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	inf.handler.OnUpdate(transformed(t, heartbeat), transformed(t, relabelled))
	if got := takeAll(q); len(got) != 1 {
		t.Fatalf("a label change of a cached Node must wake the config, got %v", got)
	}
	inf.handler.OnAdd(transformed(t, relabelled), false)
	inf.handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "n1", Obj: transformed(t, relabelled)})
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a cached Node's creation and deletion must wake the config, got %v", got)
	}
}

func transformed(t *testing.T, o *metav1.PartialObjectMetadata) *labelledObject {
	t.Helper()
	out, err := keepLabelsDigest(o.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*labelledObject)
}

func TestTheInitialListOfACacheWakesItsConfig(t *testing.T) {
	inf, q := sourceOfNodes(t, inputEvents)
	inf.handler.OnAdd(node("n1", "5", nil), true)
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("an object of the initial list of a cache may have changed since the plan read it: it must wake the config, got %v", got)
	}
}

func TestTheInitialListOfAnInputCacheListedBeforeItsReadWakesNoConfigButLaterChangesDo(t *testing.T) {
	wakes := false
	_, inf, q := sourceOf(t, inputEvents, schema.GroupVersionKind{Version: "v1", Kind: "Node"}, func() bool { return wakes })
	inf.handler.OnAdd(node("n1", "5", nil), true)
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("the read came after this list and saw it: it must wake no config, got %v", got)
	}
	inf.handler.OnAdd(node("n1", "6", nil), false)
	inf.handler.OnUpdate(node("n1", "6", nil), node("n1", "7", map[string]string{"a": "b"}))
	inf.handler.OnDelete(node("n1", "7", nil))
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a creation, a change and a deletion after the list must wake the config, got %v", got)
	}
	wakes = true // the read went ahead before the cache listed
	inf.handler.OnAdd(node("n1", "8", nil), true)
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("an initial list that came after the read must wake the config, got %v", got)
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

func TestTheLabelsDigestTellsLabelSetsApart(t *testing.T) {
	base := map[string]string{"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-numa": "true", "node-role.kubernetes.io/worker": ""}
	same := map[string]string{}
	for k, v := range base {
		same[k] = v
	}
	if labelsDigest(base) != labelsDigest(same) {
		t.Errorf("equal labels give different digests")
	}
	for name, other := range map[string]map[string]string{
		"a value changed":            {"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-numa": "false", "node-role.kubernetes.io/worker": ""},
		"a label added":              {"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-numa": "true", "node-role.kubernetes.io/worker": "", "a": ""},
		"a label removed":            {"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-numa": "true"},
		"a value moved into its key": {"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-numatrue": "", "node-role.kubernetes.io/worker": ""},
		"a key moved into the value": {"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/memory-": "numatrue", "node-role.kubernetes.io/worker": ""},
		"no labels":                  nil,
	} {
		if labelsDigest(other) == labelsDigest(base) {
			t.Errorf("%s: the digest did not change", name)
		}
	}
}

// written is o after a write by manager at second s of a day, recorded as the API server
// records it.
func written(o *metav1.PartialObjectMetadata, rv, manager string, s int, fields string) *metav1.PartialObjectMetadata {
	out := o.DeepCopy()
	out.SetResourceVersion(rv)
	t := metav1.NewTime(time.Date(2026, 1, 5, 10, 0, s, 0, time.UTC))
	entry := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	var kept []metav1.ManagedFieldsEntry
	for _, e := range out.ManagedFields {
		if e.Manager != manager {
			kept = append(kept, e)
		}
	}
	out.SetManagedFields(append(kept, entry))
	return out
}

func TestATargetUpdateWakesEveryConfigButTheOneWhoseProfileWroteIt(t *testing.T) {
	w, inf, q := sourceWith(t, targetEvents)
	key := plan.TargetKey{Kind: "Node", Name: "n1"}
	w.addConfigLocked(key, "other")
	w.managers["c"] = plan.FieldManagerFor("load-aware-rebalancing")
	w.managers["other"] = plan.FieldManagerFor("platform-baseline")
	before := written(node("n1", "5", nil), "5", "kube-descheduler-operator", 1, `{"f:status":{}}`)
	ours := written(before, "6", plan.FieldManagerFor("load-aware-rebalancing"), 2, `{"f:spec":{"f:mode":{}}}`)
	inf.Update(before, ours)
	if got := takeAll(q); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("config c's own write must wake only the other config that watches the target, got %v", got)
	}
	theirs := written(ours, "7", "kubectl-edit", 3, `{"f:spec":{"f:mode":{}}}`)
	inf.Update(ours, theirs)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("somebody else's write must wake every config that watches the target, got %v", got)
	}
	status := written(theirs, "8", "kube-descheduler-operator", 4, `{"f:status":{"f:conditions":{}}}`)
	inf.Update(theirs, status)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("a status written by the target's own controller must wake every config, got %v", got)
	}
	deleting := written(status, "9", plan.FieldManagerFor("load-aware-rebalancing"), 5, `{"f:spec":{}}`)
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	inf.Update(status, deleting)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("a target being deleted must wake every config, got %v", got)
	}
	sameEntries := status.DeepCopy()
	sameEntries.SetResourceVersion("10")
	inf.Update(status, sameEntries)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("an update whose writer does not show must wake every config, got %v", got)
	}
}

func TestAnInputUpdateOfItsStatusAloneWakesNoConfigAndAnOwnWriteWakesNoneOfItsOwn(t *testing.T) {
	w, inf, q := sourceWith(t, inputEvents)
	key := plan.TargetKey{Kind: "Node", Name: "n1"}
	w.addConfigLocked(key, "other")
	before := node("n1", "5", map[string]string{"app": "virt"})
	before.SetGeneration(3)
	status := before.DeepCopy()
	status.SetResourceVersion("6")
	inf.Update(before, status)
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("a change of the input's status alone must wake no config, got %v", got)
	}
	for name, change := range map[string]func(o *metav1.PartialObjectMetadata){
		"spec":   func(o *metav1.PartialObjectMetadata) { o.SetGeneration(4) },
		"labels": func(o *metav1.PartialObjectMetadata) { o.SetLabels(map[string]string{"custom": ""}) },
		"annotations": func(o *metav1.PartialObjectMetadata) {
			o.SetAnnotations(map[string]string{plan.ModeAnnotation: "unmanaged"})
		},
	} {
		changed := status.DeepCopy()
		changed.SetResourceVersion("7")
		change(changed)
		inf.Update(status, changed)
		if got := takeAll(q); len(got) != 2 {
			t.Errorf("a change of the input's %s must wake every config that depends on it, got %v", name, got)
		}
	}
	w.managers["c"] = plan.FieldManagerFor("virt-higher-density")
	w.managers["other"] = plan.FieldManagerFor("load-aware-rebalancing")
	ours := written(status, "8", plan.FieldManagerFor("virt-higher-density"), 2, `{"f:spec":{}}`)
	ours.SetGeneration(5)
	inf.Update(status, ours)
	if got := takeAll(q); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("config c's own write of a target it also reads must wake only the other config, got %v", got)
	}
}

func TestAnyChangeOfAPoolWakesItsConfigs(t *testing.T) {
	poolKind := schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	_, inf, q := sourceOf(t, inputEvents, poolKind, nil)
	before := &metav1.PartialObjectMetadata{}
	before.SetGroupVersionKind(poolKind)
	before.SetName("n1")
	before.SetResourceVersion("5")
	before.SetGeneration(3)
	status := before.DeepCopy()
	status.SetResourceVersion("6")
	inf.Update(before, status)
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a pool's status (the configuration it runs, its machines) is read by profiles and rollouts: it must wake the config, got %v", got)
	}
}

func TestARenderedMachineConfigIsNotWatched(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, logr.Discard())
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

func TestATargetCacheKeepsADigestOfEachFieldSet(t *testing.T) {
	o := written(node("n1", "5", nil), "5", "kubectl-edit", 1, `{"f:spec":{"f:mode":{}}}`)
	first, err := digestManagedFields(o.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	entries := first.(*metav1.PartialObjectMetadata).ManagedFields
	if len(entries) != 1 || entries[0].Manager != "kubectl-edit" || !digested(entries[0].FieldsV1.GetRawBytes()) {
		t.Fatalf("want the entry kept with a digest of its field set, got %+v", entries)
	}
	again, err := digestManagedFields(first)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.(*metav1.PartialObjectMetadata).ManagedFields[0].FieldsV1.GetRawBytes(), entries[0].FieldsV1.GetRawBytes()) {
		t.Errorf("a digest must stay as it is when the informer hands the object over again")
	}
	other := written(node("n1", "5", nil), "5", "kubectl-edit", 1, `{"f:spec":{"f:profiles":{}}}`)
	second, _ := digestManagedFields(other)
	if slices.Equal(second.(*metav1.PartialObjectMetadata).ManagedFields[0].FieldsV1.GetRawBytes(), entries[0].FieldsV1.GetRawBytes()) {
		t.Errorf("two field sets must have two digests")
	}
}

func TestATargetComingIntoItsCacheByAWriteWakesEveryConfigButTheOneThatWroteLast(t *testing.T) {
	w, inf, q := sourceWith(t, targetEvents)
	key := plan.TargetKey{Kind: "Node", Name: "n1"}
	w.addConfigLocked(key, "other")
	w.managers["c"] = plan.FieldManagerFor("virt-higher-density")
	w.managers["other"] = plan.FieldManagerFor("platform-baseline")
	status := written(node("n1", "5", nil), "5", "hyperconverged-operator", 1, `{"f:status":{}}`)
	ours := written(status, "6", plan.FieldManagerFor("virt-higher-density"), 2, `{"f:metadata":{"f:labels":{}}}`)
	inf.handler.OnAdd(ours, false)
	if got := takeAll(q); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("a target labelled by config c's own first write must wake only the other config, got %v", got)
	}
	sameSecond := written(ours, "7", "hyperconverged-operator", 2, `{"f:status":{"f:conditions":{}}}`)
	inf.handler.OnAdd(sameSecond, false)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("another writer in the same second must wake every config, got %v", got)
	}
	inf.handler.OnAdd(ours, true)
	if got := takeAll(q); len(got) != 2 {
		t.Fatalf("a target in the initial list of the cache must wake every config, got %v", got)
	}
}
