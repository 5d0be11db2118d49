// Package fleetsamples checks the fleet samples of config/samples/fleet against the real CRDs
// of the engines they are written for (test/crds/fleet, copied from the engines' releases;
// see test/crds/fleet/SOURCES.md): every document must be accepted by a real kube-apiserver
// in a server-side dry run, schema and CEL rules included, and so must every
// VirtPlatformConfig and ConfigurationPolicy a sample carries inside another object, which
// the engine writes on a managed cluster later. The CEL condition rules of the
// ManifestWorkReplicaSet sample are type-checked against the VirtPlatformConfig schema the API
// server publishes. Negative specs show that the checks refuse what the CRDs refuse.
//
// The engines' controllers (OCM's placement and work controllers, the governance policy
// propagator and config policy controller, Argo CD's ApplicationSet controller) do not run
// here: the specs say that a hub and a managed cluster accept the samples, not what the
// engines then do with them.
package fleetsamples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var (
	env        *envtest.Environment
	cfg        *rest.Config
	kubeconfig string
)

func TestFleetSamples(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Fleet samples")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.New(testenv.OwnCRDs, testenv.Path("test", "crds", "fleet"))
	Expect(err).NotTo(HaveOccurred())
	// The ApplicationSet CRD is 1.3 MB: on a busy machine the API server takes longer than
	// envtest's default 10 s to serve it.
	env.CRDInstallOptions.MaxTime = 2 * time.Minute
	cfg, err = env.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)

	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())
	// The namespaces the samples name: a dry run does not create a namespace, and a
	// namespaced object is refused in a namespace that does not exist.
	for _, ns := range []string{hubNamespace, argoCDNamespace} {
		out, err := kubectl("", "create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred(), out)
	}
})

// kubectl runs the real kubectl of KUBEBUILDER_ASSETS against the test's API server, with
// stdin as its input, and returns its combined output.
func kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// dryRun applies manifest (one or more YAML documents) with a server-side dry run: the API
// server decodes, defaults and validates it (OpenAPI schema, CEL rules, unknown fields
// refused) and stores nothing.
func dryRun(manifest string, args ...string) (string, error) {
	return kubectl(manifest, append([]string{"apply", "--dry-run=server", "--validate=strict", "-f", "-"}, args...)...)
}
