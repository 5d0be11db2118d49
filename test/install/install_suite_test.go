// Package install installs the operator the two ways it ships, the Helm chart in dist/chart
// and dist/install.yaml, on a local control plane (real kube-apiserver and etcd) with the real
// helm and kubectl, and runs the manager binary on the credentials install.yaml gives it.
//
// There are no controllers but the API server's own: Deployments never get pods and a deleted
// Namespace stays Terminating. The specs assert objects, never pods.
package install

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

const (
	// operatorNamespace is the namespace of dist/install.yaml, and the release namespace here.
	operatorNamespace = "virt-advisor-operator-system"
	releaseName       = "virt-advisor-operator"
	crdName           = "virtplatformconfigs.advisor.kubevirt.io"
	namespaceFlag     = "--namespace=" + operatorNamespace
)

// foreignNamespaces belong to other operators; installing or removing this one must never
// touch them.
var foreignNamespaces = []string{"openshift-cnv", "openshift-kube-descheduler-operator"}

var (
	helmBin, kubectlBin, managerBin string
	chartDir, installYAML           string
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "installing the operator with helm and kubectl")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	helmBin = os.Getenv("HELM")
	Expect(helmBin).To(BeAnExistingFile(), "set HELM to the helm binary (make test-install builds it)")
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "set KUBEBUILDER_ASSETS (make test-install does)")
	kubectlBin = filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	Expect(kubectlBin).To(BeAnExistingFile())
	managerBin = os.Getenv("MANAGER_BINARY")
	Expect(managerBin).To(BeAnExistingFile(), "set MANAGER_BINARY to the manager binary (make test-install builds it)")
	chartDir = testenv.Path("dist", "chart")
	installYAML = testenv.Path("dist", "install.yaml")
})

// controlPlane is one kube-apiserver and etcd, with a kubeconfig for its admin.
type controlPlane struct {
	config     *rest.Config
	client     client.Client
	kubeconfig string
	// helmHome keeps helm's cache, configuration and data out of the user's home.
	helmHome string
	// stopPoolSimulator stops the pool simulator rollOutWorkerPool started (nil: none).
	stopPoolSimulator func() error
}

// startControlPlane starts a control plane with the CRDs of crdDirs installed, for the
// specs of the calling container; it stops when they are done.
func startControlPlane(crdDirs ...string) *controlPlane {
	GinkgoHelper()
	env, err := testenv.New(crdDirs...)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(env *envtest.Environment) { Expect(env.Stop()).To(Succeed()) }, env)
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	cp := &controlPlane{
		config: cfg, client: c,
		kubeconfig: filepath.Join(dir, "kubeconfig"), helmHome: filepath.Join(dir, "helm"),
	}
	Expect(os.WriteFile(cp.kubeconfig, env.KubeConfig, 0o600)).To(Succeed())
	// Registered after the control plane's cleanup, so it runs before it.
	DeferCleanup(func() {
		if cp.stopPoolSimulator != nil {
			Expect(cp.stopPoolSimulator()).To(Succeed(), "the pool simulator stops")
		}
	})
	return cp
}

// kubectl runs the real kubectl as the admin.
func (cp *controlPlane) kubectl(args ...string) {
	GinkgoHelper()
	cp.run(kubectlBin, args...)
}

// helm runs the real helm as the admin and returns its stdout.
func (cp *controlPlane) helm(args ...string) string {
	GinkgoHelper()
	return cp.run(helmBin, args...)
}

func (cp *controlPlane) run(bin string, args ...string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.kubeconfig, "KUBECTL="+kubectlBin,
		"HELM_CACHE_HOME="+filepath.Join(cp.helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(cp.helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(cp.helmHome, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "%s %s\n%s%s",
		filepath.Base(bin), strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// The pool simulator's delays: short, so that a roll-out of three workers takes seconds.
const (
	poolRenderDelay = time.Second
	poolRebootTime  = 500 * time.Millisecond
)

// rollOutWorkerPool has the pool simulator play the Machine Config Operator on the control
// plane: the first call starts it, for as long as the control plane runs, and waits until the
// worker pool (created before, with its Nodes) has rolled out its first configuration. From
// then on the simulator renders and rolls out every change on its own, so a later call has
// nothing left to do.
func (cp *controlPlane) rollOutWorkerPool() {
	GinkgoHelper()
	if cp.stopPoolSimulator != nil {
		return
	}
	var err error
	_, cp.stopPoolSimulator, err = poolsim.Run(context.Background(), cp.config, poolsim.Options{
		RenderDelay: poolRenderDelay, RebootTime: poolRebootTime, Out: GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error { return poolsim.RolledOut(context.Background(), cp.client, "worker") }).
		WithTimeout(time.Minute).Should(Succeed())
}

// waitsForMachineConfigOperator tells whether an item's message says it waits for what the
// Machine Config Operator does: a pool's rollout, or the handling of a KubeletConfig.
func waitsForMachineConfigOperator(message string) bool {
	return strings.Contains(message, "MachineConfigPool worker") || strings.Contains(message, "the Machine Config Operator")
}

// createNamespaces creates namespaces, as their owners would have.
func (cp *controlPlane) createNamespaces(names ...string) {
	GinkgoHelper()
	for _, name := range names {
		cp.kubectl("create", "namespace", name)
	}
}

// get reads the live state of obj (by its kind, namespace and name).
func (cp *controlPlane) get(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := cp.client.Get(context.Background(), client.ObjectKeyFromObject(obj), live)
	return live, err
}

// gone says whether obj no longer exists, its kind included.
func (cp *controlPlane) gone(obj *unstructured.Unstructured) bool {
	_, err := cp.get(obj)
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// expectNamespacesIntact fails if a namespace is missing or being deleted.
func (cp *controlPlane) expectNamespacesIntact(names ...string) {
	GinkgoHelper()
	for _, name := range names {
		ns, err := cp.get(object("v1", "Namespace", "", name))
		Expect(err).NotTo(HaveOccurred(), "namespace %s", name)
		Expect(ns.GetDeletionTimestamp()).To(BeNil(), "namespace %s is being deleted", name)
	}
}

// object is a reference to an object of any kind.
func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// managerDeployment is a reference to the operator's Deployment.
func managerDeployment() *unstructured.Unstructured {
	return object("apps/v1", "Deployment", operatorNamespace, "virt-advisor-operator-controller-manager")
}

// virtPlatformConfig is an advertised-style config that asks for nothing (action Ignore).
func virtPlatformConfig() *unstructured.Unstructured {
	obj := object("advisor.kubevirt.io/v1alpha1", "VirtPlatformConfig", "", "load-aware-rebalancing")
	Expect(unstructured.SetNestedField(obj.Object, "load-aware-rebalancing", "spec", "profile")).To(Succeed())
	Expect(unstructured.SetNestedField(obj.Object, "Ignore", "spec", "action")).To(Succeed())
	return obj
}

// decodeObjects splits a multi-document YAML stream into its objects.
func decodeObjects(stream string) []*unstructured.Unstructured {
	GinkgoHelper()
	var objects []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+stream, "\n---") {
		obj := map[string]any{}
		Expect(yaml.Unmarshal([]byte(doc), &obj)).To(Succeed(), doc)
		if len(obj) > 0 {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
	return objects
}

// readObjects reads the objects of a manifest file.
func readObjects(path string) []*unstructured.Unstructured {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return decodeObjects(string(data))
}

// ref names an object in failure messages and map keys: Kind namespace/name.
func ref(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// ofKind returns the objects of one kind.
func ofKind(objects []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}
