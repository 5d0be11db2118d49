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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

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

// sourceOfNodes starts the source of a Node input watched by config c and returns the
// informer and the queue the source feeds, once the source's handler is registered.
func sourceOfNodes(t *testing.T, labelsOnly bool) (*informer, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	synced := true
	inf := &informer{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced)}
	nodeKind := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(nodeKind, &metav1.PartialObjectMetadata{})
	informers := &informertest.FakeInformers{Scheme: scheme, Synced: &synced,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{nodeKind: inf}}
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	key := plan.TargetKey{Kind: "Node", Name: "n1"}
	w.addConfigLocked(key, "c")
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	keyOf := func(o client.Object) plan.TargetKey { return plan.TargetKey{Kind: "Node", Name: o.GetName()} }
	src := w.source(informers, node("", "", nil), keyOf, labelsOnly)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := src.Start(ctx, q); err != nil {
		t.Fatalf("start the source: %v", err)
	}
	if err := src.(source.SyncingSource).WaitForSync(ctx); err != nil {
		t.Fatalf("wait for the source: %v", err)
	}
	return inf, q
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

func TestAnInputWatchedForItsLabelsWakesItsConfigOnlyWhenTheyChange(t *testing.T) {
	inf, q := sourceOfNodes(t, true)
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

func TestADeletionSeenLateWakesTheConfig(t *testing.T) {
	inf, q := sourceOfNodes(t, false)
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
	if kept.Name != "n1" || kept.UID != "uid-1" || kept.ResourceVersion != "5" || kept.GroupVersionKind().Kind != "Node" {
		t.Errorf("the cached Node lost its identity: %+v", kept)
	}
	if len(kept.Annotations) != 0 || len(kept.ManagedFields) != 0 || len(kept.Labels) != 1 {
		t.Errorf("the cached Node keeps annotations %v, managedFields %v and labels %v; want only the digest of its labels",
			kept.Annotations, kept.ManagedFields, kept.Labels)
	}
	again, err := keepLabelsDigest(kept)
	if err != nil {
		t.Fatal(err)
	}
	if again != any(kept) {
		t.Errorf("a Node transformed again (as the informer does with the initial events of a watch-list) is not kept as it was: %+v", again)
	}

	inf, q := sourceOfNodes(t, true)
	heartbeat := full.DeepCopy()
	heartbeat.SetResourceVersion("6")
	heartbeat.SetAnnotations(map[string]string{"kubevirt.io/heartbeat": "2026-01-05T10:00:00Z"})
	inf.Update(kept, transformed(t, heartbeat))
	if got := takeAll(q); len(got) != 0 {
		t.Fatalf("an update of a cached Node that leaves its labels as they were must not wake the config, got %v", got)
	}
	relabelled := heartbeat.DeepCopy()
	relabelled.SetResourceVersion("7")
	relabelled.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	inf.Update(transformed(t, heartbeat), transformed(t, relabelled))
	if got := takeAll(q); len(got) != 1 {
		t.Fatalf("a label change of a cached Node must wake the config, got %v", got)
	}
}

func transformed(t *testing.T, o *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	t.Helper()
	out, err := keepLabelsDigest(o.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*metav1.PartialObjectMetadata)
}

func TestTheInitialListOfACacheWakesItsConfig(t *testing.T) {
	inf, q := sourceOfNodes(t, false)
	inf.handler.OnAdd(node("n1", "5", nil), true)
	if got := takeAll(q); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("an object of the initial list of a cache may have changed since the plan read it: it must wake the config, got %v", got)
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
