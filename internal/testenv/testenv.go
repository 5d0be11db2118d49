// Package testenv starts the control plane the tests run against: a real kube-apiserver
// and etcd (envtest) built by hack/build-envtest-binaries.sh, with this project's CRD and
// the third-party test CRDs of test/crds installed.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/controller"
)

// RepoRoot is the root of this repository, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path joins elements onto the repository root.
func Path(elem ...string) string {
	return filepath.Join(append([]string{RepoRoot()}, elem...)...)
}

// CRD directories of test/crds.
var (
	// OwnCRDs is this project's generated CRD.
	OwnCRDs = Path("config", "crd", "bases")
	// BaseCRDs are MachineConfig, MachineConfigPool, HyperConverged, and the
	// MachineConfiguration, Scheduler and ClusterVersion the node disruption forecast and
	// gates read.
	BaseCRDs = Path("test", "crds", "base")
	// KubeVirtCRDs are VirtualMachineInstance, VirtualMachine, VirtualMachineInstanceMigration
	// and KubeVirt, which the VM disruption forecast reads and the pool simulator plays.
	KubeVirtCRDs = Path("test", "crds", "kubevirt")
)

// DeschedulerCRDs is the KubeDescheduler CRD of one operator generation: 4.16, 4.17,
// 4.18 (also 4.19) or 4.20 (4.20 and later).
func DeschedulerCRDs(generation string) string {
	return Path("test", "crds", "kubedescheduler", generation)
}

// ClusterCRDs are the CRD directories of a cluster the operator runs in: OwnCRDs, BaseCRDs
// and the KubeDescheduler CRD of 4.20.
func ClusterCRDs() []string {
	return []string{OwnCRDs, BaseCRDs, DeschedulerCRDs("4.20")}
}

// Scheme is the operator's scheme.
func Scheme() *k8sruntime.Scheme { return controller.NewScheme() }

// startTimeout bounds the start of etcd and of kube-apiserver.
const startTimeout = 2 * time.Minute

// New returns an envtest environment that installs the CRDs of the given directories.
// It fails when KUBEBUILDER_ASSETS is not set: `make test` or `make envtest` sets it up.
func New(crdDirs ...string) (*envtest.Environment, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"or export KUBEBUILDER_ASSETS=$(make -s envtest)")
	}
	return NewWithAssets(assets, crdDirs...)
}

// NewWithAssets is New with kube-apiserver and etcd taken from the directory assets.
func NewWithAssets(assets string, crdDirs ...string) (*envtest.Environment, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: run `make envtest`", assets, bin)
		}
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
		// Suites start their control planes side by side on machines that may be busy:
		// envtest's 20 seconds are not enough for a kube-apiserver there.
		ControlPlaneStartTimeout: startTimeout,
	}, nil
}

// UpstreamCRDs is the directory of the real upstream CRDs the project's test CRDs follow:
// $UPSTREAM_CRDS, else ../shared/upstream-crds beside the repository. Tests that install
// an upstream CRD as it is read it from there; it is reference data, not part of the
// repository.
func UpstreamCRDs() string {
	if dir := os.Getenv("UPSTREAM_CRDS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "..", "shared", "upstream-crds")
}

// ReadCRD reads one CustomResourceDefinition from a YAML file.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CRD %s (set UPSTREAM_CRDS to the directory of the upstream CRDs if it is elsewhere): %w", path, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decode CRD %s: %w", path, err)
	}
	return crd, nil
}
