package plan_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// slowCluster answers every read with NotFound and every (dry-run) apply with success, and
// counts how many requests are in flight at once. With atOnce set, each request is held
// until that many have been in flight together (or holdLimit passed, when they never are):
// requests sent one after the other never get there.
type slowCluster struct {
	client.Writer
	atOnce int32

	inFlight, maxInFlight atomic.Int32
	reachedOnce           sync.Once
	reached               chan struct{}
	mu                    sync.Mutex
	reads                 map[string]int
}

// holdLimit bounds how long a request is held waiting for others.
const holdLimit = 2 * time.Second

func newSlowCluster(atOnce int32) *slowCluster {
	return &slowCluster{atOnce: atOnce, reached: make(chan struct{}), reads: map[string]int{}}
}

func (c *slowCluster) request() func() {
	n := c.inFlight.Add(1)
	for {
		m := c.maxInFlight.Load()
		if n <= m || c.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if c.atOnce > 0 {
		if n >= c.atOnce {
			c.reachedOnce.Do(func() { close(c.reached) })
		}
		select {
		case <-c.reached:
		case <-time.After(holdLimit):
		}
	}
	return func() { c.inFlight.Add(-1) }
}

func (c *slowCluster) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	defer c.request()()
	c.mu.Lock()
	c.reads[key.String()]++
	c.mu.Unlock()
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}

func (c *slowCluster) List(context.Context, client.ObjectList, ...client.ListOption) error {
	defer c.request()()
	return nil
}

func (c *slowCluster) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	defer c.request()()
	return nil
}

func configMapItems(n int) []plan.Item {
	items := make([]plan.Item, n)
	for i := range items {
		items[i] = plan.Item{
			Name:   fmt.Sprintf("item-%02d", i),
			Impact: advisorv1alpha1.ImpactLow,
			Desired: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": "tuning"},
				"data":     map[string]any{"key": fmt.Sprintf("value-%d", i)},
			}},
		}
	}
	return items
}

// The items of one plan are read and dry-run concurrently, within the engine's bound, and
// come back in plan order: a plan of ten items costs about one round trip per stage, not
// ten.
func TestDraftReadsAndDryRunsItemsConcurrently(t *testing.T) {
	const items, limit = 10, 5
	// Every request waits until the bound is reached: drafting one item after the other
	// would never get there.
	cluster := newSlowCluster(limit)
	engine := &plan.Engine{Reader: cluster, Writer: cluster, Concurrency: limit}

	p, err := engine.Draft(context.Background(), plan.Request{Profile: "load-aware-rebalancing", Items: configMapItems(items)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != items {
		t.Fatalf("drafted %d items, want %d", len(p.Items), items)
	}
	for i, it := range p.Items {
		if want := fmt.Sprintf("item-%02d", i); it.Name != want || it.State != advisorv1alpha1.ItemPending {
			t.Errorf("item %d is %s (%s), want %s Pending: items keep the plan's order", i, it.Name, it.State, want)
		}
	}
	if got := cluster.maxInFlight.Load(); got != limit {
		t.Errorf("%d requests were in flight at once, want the bound %d: the items were not drafted concurrently, or beyond the bound", got, limit)
	}
	for key, n := range cluster.reads {
		if n != 1 {
			t.Errorf("%s was read %d times, want once", key, n)
		}
	}
}

// Concurrent readers of one object share one read through the recorder.
func TestRecorderSharesConcurrentReads(t *testing.T) {
	cluster := newSlowCluster(0)
	rec := plan.NewRecorder(cluster)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("ConfigMap")
			if err := rec.Get(context.Background(), client.ObjectKey{Namespace: "tuning", Name: "shared"}, u); !apierrors.IsNotFound(err) {
				t.Errorf("read: %v, want NotFound", err)
			}
		})
	}
	wg.Wait()
	if n := cluster.reads["tuning/shared"]; n != 1 {
		t.Errorf("the object was read %d times by 16 concurrent readers, want once", n)
	}
	refs, _ := rec.Inputs(nil)
	if len(refs) != 1 {
		t.Errorf("inputs: %v, want the one object", refs)
	}
}

// fixedReader answers every Get with a copy of one object of the requested kind.
type fixedReader struct {
	client.Reader
	objects map[string]*unstructured.Unstructured
}

func (f fixedReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o, ok := f.objects[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	obj.(*unstructured.Unstructured).Object = o.DeepCopy().Object
	return nil
}

// The inputs hash depends on what was read only: not on whether the fingerprint of an
// object at a given resourceVersion was computed before.
func TestInputsHashIsTheSameWhetherFingerprintsAreKeptOrNot(t *testing.T) {
	objects := func(versioned bool) map[string]*unstructured.Unstructured {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "things.example.com"},
			"spec":     map[string]any{"group": "example.com", "versions": []any{map[string]any{"name": "v1", "served": true}}},
		}}
		pool := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
			"metadata": map[string]any{"name": "worker", "labels": map[string]any{"role": "worker"}},
			"spec": map[string]any{"paused": false, "maxUnavailable": int64(1),
				"configuration": map[string]any{"description": "<a & b>", "max": int64(1 << 60)}},
		}}
		empty := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "empty.example.com"},
		}}
		for i, o := range []*unstructured.Unstructured{crd, pool, empty} {
			o.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
			if versioned {
				o.SetResourceVersion("42")
			}
		}
		return map[string]*unstructured.Unstructured{"things.example.com": crd, "worker": pool, "empty.example.com": empty}
	}
	hash := func(versioned bool) string {
		rec := plan.NewRecorder(fixedReader{objects: objects(versioned)})
		for _, k := range []struct{ apiVersion, kind, name string }{
			{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "things.example.com"},
			{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "empty.example.com"},
			{"machineconfiguration.openshift.io/v1", "MachineConfigPool", "worker"},
			{"machineconfiguration.openshift.io/v1", "MachineConfig", "missing"},
		} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(k.apiVersion)
			u.SetKind(k.kind)
			_ = rec.Get(context.Background(), client.ObjectKey{Name: k.name}, u)
		}
		_, h := rec.Inputs(nil)
		return h
	}
	computed, kept, unversioned := hash(true), hash(true), hash(false)
	if computed != kept || computed != unversioned {
		t.Errorf("inputs hashes differ: computed %s, kept %s, without versions %s", computed, kept, unversioned)
	}
}

// A CRD counts by which object it is and which spec it has (its generation): a status
// change is no input change; a spec change, or the CRD created again, is.
func TestCRDInputsCountByIdentityAndSpecGeneration(t *testing.T) {
	hash := func(uid, resourceVersion string, generation int64, storedVersions ...any) string {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "things.example.com", "uid": uid, "resourceVersion": resourceVersion, "generation": generation},
			"spec":     map[string]any{"group": "example.com"},
			"status":   map[string]any{"storedVersions": storedVersions},
		}}
		rec := plan.NewRecorder(fixedReader{objects: map[string]*unstructured.Unstructured{"things.example.com": crd}})
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := rec.Get(context.Background(), client.ObjectKey{Name: "things.example.com"}, u); err != nil {
			t.Fatal(err)
		}
		_, h := rec.Inputs(nil)
		return h
	}
	first := hash("uid-1", "10", 1, "v1")
	if h := hash("uid-1", "11", 1, "v1", "v2"); h != first {
		t.Error("a status change of the CRD (new resourceVersion, same generation) changed the inputs hash")
	}
	if h := hash("uid-1", "12", 2, "v1"); h == first {
		t.Error("a spec change of the CRD (new generation) did not change the inputs hash")
	}
	if h := hash("uid-2", "13", 1, "v1"); h == first {
		t.Error("the CRD created again (new uid) did not change the inputs hash")
	}
}
