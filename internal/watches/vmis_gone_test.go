package watches

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// crdStillCached is a manager's cache that has not seen the deletion of the
// VirtualMachineInstance CRD yet.
type crdStillCached struct{ cache.Cache }

func (crdStillCached) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.SetName(key.Name)
	return nil
}

// listsOnce is an uncached reader whose one probe of the instances still succeeds.
type listsOnce struct{ client.Reader }

func (listsOnce) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestAnInformerWhoseKindGoesAwayIsDroppedAtOnce: the API server may still serve a kind a
// moment after its CRD is deleted, so the informer can start and then find the kind gone.
// Its first list fails with NotFound: the forecast says so at once, instead of waiting for
// the sync timeout, and the informer is dropped so that the next forecast checks again.
func TestAnInformerWhoseKindGoesAwayIsDroppedAtOnce(t *testing.T) {
	var lists atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/apis/kubevirt.io/v1/virtualmachineinstances") {
			lists.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,` +
			`"message":"the server could not find the requested resource"}`))
	}))
	defer server.Close()

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(targets.VirtualMachineInstance.GVK, meta.RESTScopeNamespace)
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	cfg := &rest.Config{Host: server.URL}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := New(nil, crdStillCached{}, mapper, cfg, httpClient, scheme, logr.Discard())
	w.ctx = ctx

	// Well before the sync timeout: a wait until it would end as this deadline.
	wait, stop := context.WithTimeout(ctx, vmiSyncTimeout/2)
	defer stop()
	_, err = w.VMIs(wait, listsOnce{})
	if err == nil || !strings.Contains(err.Error(), "stopped before its first list") {
		t.Fatalf("the forecast does not say the informer stopped: %v", err)
	}
	if wait.Err() != nil {
		t.Fatalf("the forecast waited until its deadline: %v", err)
	}
	if lists.Load() == 0 {
		t.Fatal("the informer never listed the instances")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.vmis != nil {
		t.Fatal("the informer whose kind is gone is kept: every later forecast would wait for it")
	}
}
