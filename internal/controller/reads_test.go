package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// countingReader answers reads of objects named in objects (NotFound for others), failing
// the first failures reads; it counts the reads that reach it. While notServed, it answers
// every read as the API server does for a resource it does not serve.
type countingReader struct {
	mu        sync.Mutex
	objects   map[string]map[string]any
	failures  int
	notServed bool
	reads     map[string]int
}

func (c *countingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[key.Name]++
	if c.failures > 0 {
		c.failures--
		return apierrors.NewServiceUnavailable("overloaded")
	}
	if c.notServed {
		// What client-go makes of the API server's "404 page not found" (see the plan
		// engine's spec of a kind that is not served, against a real API server).
		return apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", schema.GroupResource{}, "", "404 page not found", 0, true)
	}
	o, ok := c.objects[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, key.Name)
	}
	switch t := obj.(type) {
	case *unstructured.Unstructured:
		t.Object = (&unstructured.Unstructured{Object: o}).DeepCopy().Object
	case *apiextensionsv1.CustomResourceDefinition:
		t.Name = key.Name
		t.Spec.Group = o["group"].(string)
	}
	return nil
}

func (c *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

func (c *countingReader) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[name]
}

func configMap(name, value string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "data": map[string]any{"k": value}}
}

func emptyConfigMap() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	return u
}

func TestReadCache(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "a"}

	t.Run("concurrent and later reads of one object share one read, each with its own copy", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"a": configMap("a", "1")}, reads: map[string]int{}}
		c := newReadCache(r)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				u := emptyConfigMap()
				if err := c.Get(ctx, key, u); err != nil {
					t.Error(err)
				}
				u.Object["data"].(map[string]any)["k"] = "changed by a reader"
			})
		}
		wg.Wait()
		u := emptyConfigMap()
		if err := c.Get(ctx, key, u); err != nil {
			t.Fatal(err)
		}
		if got := u.Object["data"].(map[string]any)["k"]; got != "1" {
			t.Errorf("a reader's change leaked into the cache: %v", got)
		}
		if n := r.count("a"); n != 1 {
			t.Errorf("read %d times, want once", n)
		}
	})

	t.Run("NotFound is an answer and is kept; other errors are not, the next reader reads again", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"a": configMap("a", "1")}, failures: 1, reads: map[string]int{}}
		c := newReadCache(r)
		if err := c.Get(ctx, key, emptyConfigMap()); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("first read: %v, want the server's error", err)
		}
		if err := c.Get(ctx, key, emptyConfigMap()); err != nil {
			t.Fatalf("second read: %v", err)
		}
		missing := client.ObjectKey{Namespace: "ns", Name: "missing"}
		for range 2 {
			if err := c.Get(ctx, missing, emptyConfigMap()); !apierrors.IsNotFound(err) {
				t.Fatalf("read of a missing object: %v", err)
			}
		}
		if a, m := r.count("a"), r.count("missing"); a != 2 || m != 1 {
			t.Errorf("reads: %d of the failing object (want 2), %d of the missing one (want 1)", a, m)
		}
		if got := len(c.usedReads()); got != 2 {
			t.Errorf("%d reads noted for the next prefetch, want the 2 that got an answer", got)
		}
	})

	t.Run("the 404 of a resource that is not served is no NotFound: not kept, read again, never an absent object", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"a": configMap("a", "1")}, notServed: true, reads: map[string]int{}}
		c := newReadCache(r)
		err := c.Get(ctx, key, emptyConfigMap())
		if apierrors.IsNotFound(err) || !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("read while not served: %v, want a passing error that is not NotFound", err)
		}
		r.mu.Lock()
		r.notServed = false
		r.mu.Unlock()
		if err := c.Get(ctx, key, emptyConfigMap()); err != nil {
			t.Fatalf("read once served: %v", err)
		}
		if n := r.count("a"); n != 2 {
			t.Errorf("read %d times, want twice: the first answer is not kept", n)
		}
	})

	t.Run("a prefetched read serves the reader that asks for it, typed objects by their type", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"crd": {"group": "example.com"}}, reads: map[string]int{}}
		c := newReadCache(r)
		c.prefetch(ctx, []readSpec{getSpec(client.ObjectKey{Name: "crd"}, &apiextensionsv1.CustomResourceDefinition{})})
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: "crd"}, crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Group != "example.com" {
			t.Errorf("read %+v", crd.Spec)
		}
		if n := r.count("crd"); n != 1 {
			t.Errorf("read %d times, want once", n)
		}
		if got := len(c.usedReads()); got != 1 {
			t.Errorf("%d reads noted, want 1", got)
		}
	})

	t.Run("a prefetch nobody asks for is not noted for the next one", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"a": configMap("a", "1")}, reads: map[string]int{}}
		c := newReadCache(r)
		c.prefetch(ctx, []readSpec{getSpec(key, emptyConfigMap())})
		if got := len(c.usedReads()); got != 0 {
			t.Errorf("%d reads noted, want none", got)
		}
	})

	t.Run("an object written is read again", func(t *testing.T) {
		r := &countingReader{objects: map[string]map[string]any{"a": configMap("a", "1")}, reads: map[string]int{}}
		c := newReadCache(r)
		if err := c.Get(ctx, key, emptyConfigMap()); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		r.objects["a"] = configMap("a", "2")
		r.mu.Unlock()
		c.invalidate(schema.GroupKind{Kind: "ConfigMap"}, "ns", "a")
		u := emptyConfigMap()
		if err := c.Get(ctx, key, u); err != nil {
			t.Fatal(err)
		}
		if got := u.Object["data"].(map[string]any)["k"]; got != "2" {
			t.Errorf("read %v after the write, want 2", got)
		}
	})

	t.Run("a write drops the lists of its kind and typed lists, and keeps the lists of other kinds", func(t *testing.T) {
		r := &listingReader{current: []string{"a"}}
		c := newReadCache(r)
		list := func(kind string) *unstructured.UnstructuredList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: kind})
			return l
		}
		read := func() {
			t.Helper()
			for _, l := range []client.ObjectList{list("ThingList"), list("OtherList"), &metav1.PartialObjectMetadataList{}} {
				if err := c.List(ctx, l); err != nil {
					t.Fatal(err)
				}
			}
		}
		read()
		c.invalidate(schema.GroupKind{Group: "example.io", Kind: "Thing"}, "ns", "a")
		read()
		if got := len(r.lists); got != 5 {
			t.Errorf("%d lists reached the server, want 5: three, then the list of the written kind and the typed list again", got)
		}
	})
}

// listingReader answers lists of ConfigMaps: from the watch cache (resourceVersion 0) with
// cached, consistently with current; a list of another type is answered empty. It records which kind of list each was, and its
// options as the client sends them (which writes them into the options' Raw field).
type listingReader struct {
	client.Reader
	cached, current []string
	lists           []string
	sent            []metav1.ListOptions
}

func (l *listingReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	l.sent = append(l.sent, *lo.AsListOptions())
	names := l.current
	kind := "consistent"
	if lo.Raw != nil && lo.Raw.ResourceVersion == "0" {
		names, kind = l.cached, "watch cache"
	}
	l.lists = append(l.lists, kind)
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		for _, n := range names {
			ul.Items = append(ul.Items, unstructured.Unstructured{Object: configMap(n, "1")})
		}
	}
	return nil
}

func TestListsOfAnExecutionStepComeFromTheWatchCache(t *testing.T) {
	ctx := context.Background()
	list := func(c *readCache, opts ...client.ListOption) []string {
		t.Helper()
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion("v1")
		ul.SetKind("ConfigMapList")
		if err := c.List(ctx, ul, opts...); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range ul.Items {
			names = append(names, it.GetName())
		}
		return names
	}
	for _, tc := range []struct {
		name                string
		fromWatchCache      bool
		cached, current     []string
		opts                []client.ListOption
		wantNames, wantSent []string
	}{
		{name: "other steps list consistently", cached: []string{"a"}, current: []string{"a", "b"},
			wantNames: []string{"a", "b"}, wantSent: []string{"consistent"}},
		{name: "an execution step takes what the watch cache shows", fromWatchCache: true, cached: []string{"a"}, current: []string{"a", "b"},
			wantNames: []string{"a"}, wantSent: []string{"watch cache"}},
		{name: "even when it shows nothing", fromWatchCache: true, current: []string{"b"},
			wantSent: []string{"watch cache"}},
		{name: "a list that names its resourceVersion is sent as it is", fromWatchCache: true, current: []string{"b"},
			opts: []client.ListOption{targets.FromWatchCache()}, wantSent: []string{"watch cache"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &listingReader{cached: tc.cached, current: tc.current}
			c := newReadCache(r)
			c.listsFromWatchCache = tc.fromWatchCache
			got := list(c, tc.opts...)
			if fmt.Sprint(got) != fmt.Sprint(tc.wantNames) || fmt.Sprint(r.lists) != fmt.Sprint(tc.wantSent) {
				t.Errorf("listed %v with %v, want %v with %v", got, r.lists, tc.wantNames, tc.wantSent)
			}
			if again := list(c, tc.opts...); fmt.Sprint(again) != fmt.Sprint(got) || len(r.lists) != len(tc.wantSent) {
				t.Errorf("the second list of the reconcile was %v after %v; want the first answer, not sent again", again, r.lists)
			}
		})
	}
}

func TestListsFromTheWatchCacheKeepTheirSelectorsApart(t *testing.T) {
	ctx := context.Background()
	r := &listingReader{cached: []string{"a"}}
	c := newReadCache(r)
	c.listsFromWatchCache = true
	for _, opts := range [][]client.ListOption{{client.HasLabels{"node-role.kubernetes.io/worker"}}, nil} {
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion("v1")
		ul.SetKind("ConfigMapList")
		if err := c.List(ctx, ul, opts...); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.sent) != 2 || r.sent[0].LabelSelector == "" || r.sent[1].LabelSelector != "" || r.sent[1].ResourceVersion != "0" {
		t.Errorf("sent %+v; want the label selector on the first list only, both from the watch cache", r.sent)
	}
}

func TestOnlyTheStepsOfAnExecutionListFromTheWatchCache(t *testing.T) {
	registry, err := profiles.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	r := &VirtPlatformConfigReconciler{Profiles: registry, Engine: &plan.Engine{}}
	for _, phase := range []advisorv1alpha1.Phase{"", advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting,
		advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.PhaseInProgress, advisorv1alpha1.PhaseCompleted,
		advisorv1alpha1.PhaseDrifted, advisorv1alpha1.PhaseFailed, advisorv1alpha1.PhasePrerequisiteFailed} {
		vpc := &advisorv1alpha1.VirtPlatformConfig{}
		vpc.Name = "load-aware-rebalancing"
		vpc.Status.Phase = phase
		s := r.newScope(context.Background(), vpc)
		s.stopReads()
		want := phase == advisorv1alpha1.PhaseInProgress
		for _, c := range s.caches() {
			if c.listsFromWatchCache != want {
				t.Errorf("a reconcile that starts in phase %q lists from the watch cache: %v, want %v", phase, c.listsFromWatchCache, want)
			}
		}
	}
}

func TestACRDMemoryDoesNotHoldIsReadAheadWithTheOtherReads(t *testing.T) {
	registry, err := profiles.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	api := &countingReader{objects: map[string]map[string]any{"held.example.io": {"group": "example.io"}}, reads: map[string]int{}}
	r := &VirtPlatformConfigReconciler{Profiles: registry, Engine: &plan.Engine{}, APIReader: api}
	r.crdCache().crds = map[string]*apiextensionsv1.CustomResourceDefinition{"held.example.io": {}}
	held := getSpec(client.ObjectKey{Name: "held.example.io"}, &apiextensionsv1.CustomResourceDefinition{})
	missing := getSpec(client.ObjectKey{Name: "missing.example.io"}, &apiextensionsv1.CustomResourceDefinition{})
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	vpc.Name = "load-aware-rebalancing"
	r.memory.rendered(vpc.Name, []readSpec{held, missing})

	s := r.newScope(context.Background(), vpc)
	defer s.stopReads()
	r.startReads(s)
	s.reads.mu.Lock()
	_, heldSent := s.reads.entries[held.key]
	_, missingSent := s.reads.entries[missing.key]
	s.reads.mu.Unlock()
	if heldSent || !missingSent {
		t.Errorf("read ahead: the CRD memory holds %v (want false), the one the last rendering did not find %v (want true)",
			heldSent, missingSent)
	}
	if err := s.reads.Get(context.Background(), missing.objKey, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Fatalf("read of the missing CRD: %v, want NotFound", err)
	}
	if n := api.count("missing.example.io"); n != 1 {
		t.Errorf("the missing CRD was read %d times, want once", n)
	}
}
