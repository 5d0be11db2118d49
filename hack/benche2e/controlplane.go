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
)

// auditPolicy logs every request once, at Metadata level: when its response completes (or,
// for a watch, when the response starts and again when it ends).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: Metadata
`

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

// startControlPlane starts a control plane in dir, with the project's CRD, the test CRDs
// of the kinds the profiles write and the upstream CRDs given, and the audit log in
// dir/audit.log.
func startControlPlane(opts *options, upstreamCRDs []string, dir string) (*controlPlane, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	apiLog, err := os.Create(filepath.Join(dir, "apiserver.log"))
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{auditLog: filepath.Join(dir, "audit.log"), apiserverLog: apiLog}
	crdPaths := []string{
		filepath.Join(opts.root, "config", "crd", "bases"),
		filepath.Join(opts.root, "test", "crds", "base"),
		filepath.Join(opts.root, "test", "crds", "kubedescheduler", "4.20"),
	}
	for _, f := range upstreamCRDs {
		crdPaths = append(crdPaths, filepath.Join(opts.upstreamCRDs, filepath.FromSlash(f)))
	}
	cp.env = &envtest.Environment{
		BinaryAssetsDirectory:    opts.assets,
		CRDDirectoryPaths:        crdPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	api := cp.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	api.Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", cp.auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")

	if _, err := cp.env.Start(); err != nil {
		_ = cp.env.Stop()
		_ = apiLog.Close()
		return nil, fmt.Errorf("start the control plane: %w", err)
	}

	if cp.operatorKubeconfig, err = cp.kubeconfig(opts.operatorUser, dir); err != nil {
		cp.stop()
		return nil, err
	}

	cfg := rest.CopyConfig(cp.env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cp.cfg = cfg
	if cp.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		cp.stop()
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		cp.stop()
		return nil, err
	}
	cp.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return cp, nil
}

// kubeconfig writes dir/<user>.kubeconfig for a new user of group system:masters and
// returns its path.
func (cp *controlPlane) kubeconfig(user, dir string) (string, error) {
	u, err := cp.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("add the user %s: %w", user, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("the kubeconfig of %s: %w", user, err)
	}
	path := filepath.Join(dir, user+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
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
