package targets_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// The tests that read what the Machine Config Operator and OpenShift report (the rollout
// health checks, the node disruption policy, the scheduler) run against a real
// kube-apiserver and etcd (envtest) with the test CRDs of test/crds/base and the upstream
// KubeletConfig CRD, started once by the first of them and stopped by TestMain.

var (
	apiServerOnce   sync.Once
	apiServerEnv    *envtest.Environment
	apiServerClient client.Client
	apiServerErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServerEnv != nil {
		if err := apiServerEnv.Stop(); err != nil && code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// apiServer is a client of the envtest control plane, started on first use.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	apiServerOnce.Do(func() {
		env, err := testenv.New(testenv.BaseCRDs)
		if err != nil {
			apiServerErr = err
			return
		}
		kubeletConfigs, err := testenv.ReadCRD(filepath.Join(testenv.UpstreamCRDs(), "machineconfiguration.openshift.io", "kubeletconfigs.yaml"))
		if err != nil {
			apiServerErr = err
			return
		}
		env.CRDs = append(env.CRDs, kubeletConfigs)
		cfg, err := env.Start()
		if err != nil {
			apiServerErr = err
			return
		}
		apiServerEnv = env
		apiServerClient, apiServerErr = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	})
	if apiServerErr != nil {
		t.Fatalf("start the control plane: %v", apiServerErr)
	}
	return apiServerClient
}

// create creates obj (its status, when it has one, written through the status subresource
// as its controller does) and deletes it when the test ends.
func create(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	obj = obj.DeepCopy()
	status, hasStatus := obj.Object["status"]
	delete(obj.Object, "status")
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	t.Cleanup(func() { deleteNow(t, c, obj) })
	if hasStatus {
		writeStatus(t, c, obj, status.(map[string]any))
	}
	return obj
}

// writeStatus merge-patches obj's status subresource.
func writeStatus(t *testing.T, c client.Client, obj *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("write the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// deleteNow deletes obj; the test objects carry no finalizers, so it is gone when the
// API server answers.
func deleteNow(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	if err := c.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
