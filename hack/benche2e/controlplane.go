package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	testcluster "github.com/kubevirt/virt-advisor-operator/test/cluster"
)

// fieldManager is the field manager of the benchmark's own writes.
const fieldManager = "virt-advisor-bench"

// controlPlane is a running kube-apiserver + etcd with the CRDs installed.
type controlPlane struct {
	env *envtest.Environment
	// cfg is the benchmark's own client configuration: no client-side rate limit, so that
	// it never delays a stage.
	cfg      *rest.Config
	dyn      dynamic.Interface
	mapper   meta.RESTMapper
	auditLog string
	// operatorKubeconfig authenticates as the operator's own user.
	operatorKubeconfig string
	apiserverLog       *os.File
}

// startControlPlane starts a control plane in dir with the CRDs of a cluster the operator
// runs in (testenv.ClusterCRDs), those of testcluster.UpstreamCRDFiles if upstream is
// set, KubeVirt's (testenv.KubeVirtCRDs) if kubeVirt is set, and the API server's audit
// log (testenv.Audit) in dir/audit.log.
func startControlPlane(opts *options, upstream, kubeVirt bool, dir string) (cp *controlPlane, err error) {
	crdDirs := testenv.ClusterCRDs()
	if kubeVirt {
		crdDirs = append(crdDirs, testenv.KubeVirtCRDs)
	}
	env, err := testenv.NewWithAssets(opts.assets, crdDirs...)
	if err != nil {
		return nil, err
	}
	if upstream {
		if env.CRDs, err = testcluster.UpstreamCRDsIn(opts.upstreamCRDs); err != nil {
			return nil, err
		}
	}
	env.ControlPlaneStartTimeout, env.ControlPlaneStopTimeout = time.Minute, 30*time.Second
	cp = &controlPlane{env: env}
	if cp.auditLog, err = testenv.Audit(env, dir); err != nil {
		return nil, err
	}
	if cp.apiserverLog, err = testenv.LogAPIServer(env, filepath.Join(dir, "apiserver.log")); err != nil {
		return nil, err
	}
	if _, err := env.Start(); err != nil {
		_ = env.Stop()
		_ = cp.apiserverLog.Close()
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	defer func() {
		if err != nil {
			cp.stop()
		}
	}()
	if cp.operatorKubeconfig, err = cp.userKubeconfig(opts.operatorUser, dir); err != nil {
		return nil, err
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cp.cfg = cfg
	if cp.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cp.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return cp, nil
}

// userKubeconfig writes dir/<user>.kubeconfig for a new user of group system:masters and
// returns its path.
func (cp *controlPlane) userKubeconfig(user, dir string) (string, error) {
	path := filepath.Join(dir, user+".kubeconfig")
	return path, testenv.WriteUserKubeconfig(cp.env, user, path)
}

func (cp *controlPlane) stop() {
	if err := cp.env.Stop(); err != nil {
		logf("stop the control plane: %v", err)
	}
	_ = cp.apiserverLog.Close()
}

// createNamespace creates a namespace (if it does not exist yet).
func (cp *controlPlane) createNamespace(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	_, err := cp.dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).
		Create(ctx, ns, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// readManifest decodes the objects of a multi-document YAML file.
func readManifest(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// resourceFor is the client of obj's resource (in obj's namespace for a namespaced kind).
func (cp *controlPlane) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := cp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return cp.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return cp.dyn.Resource(mapping.Resource), nil
}

// apply server-side applies obj.
func (cp *controlPlane) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := cp.resourceFor(obj)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if _, err := ri.Apply(ctx, obj.GetName(), obj, opts); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// applyFile server-side applies every object of a manifest, in order.
func (cp *controlPlane) applyFile(ctx context.Context, path string) error {
	objs, err := readManifest(path)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := cp.apply(ctx, obj); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

var (
	vpcGVR = schema.GroupVersion{Group: "advisor.kubevirt.io", Version: "v1alpha1"}.WithResource("virtplatformconfigs")
	mcGVR  = machineConfiguration.WithResource("machineconfigs")
	mcpGVR = machineConfiguration.WithResource("machineconfigpools")

	machineConfiguration = schema.GroupVersion{Group: "machineconfiguration.openshift.io", Version: "v1"}
)
