// Package e2e runs the manager binary against a local control plane (real kube-apiserver
// and etcd) and drives it the way an administrator does: with kubectl only.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
)

var (
	env        *envtest.Environment
	workDir    string
	kubeconfig string
	manager    *cluster.Manager
	managerBin string
	// admin reads the control plane with the administrator's credentials.
	admin client.Client
	// poolSimLog is the log of the pool simulator; stopPoolSimulator stops it.
	poolSimLog        string
	stopPoolSimulator func() error
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "virt-advisor-operator end to end")
}

var _ = BeforeSuite(func() {
	managerBin = os.Getenv("MANAGER_BINARY")
	Expect(managerBin).NotTo(BeEmpty(), "set MANAGER_BINARY to the manager binary (make test-e2e builds it)")

	var err error
	env, err = testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	env.CRDs = upstreamCRDs()
	_, err = env.Start()
	Expect(err).NotTo(HaveOccurred())

	workDir = GinkgoT().TempDir()
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())
	admin, err = client.New(env.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())

	// The pool simulator plays the Machine Config Operator for the whole run. The pool's
	// nodes are the workers of the platform-baseline cluster: three of them, labelled by Node
	// Feature Discovery (the specs of that profile count them).
	kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
	poolSimLog = filepath.Join(workDir, "poolsim.log")
	_, stopPoolSimulator = startPoolSimulator(env.Config, poolSimLog)

	// The manager runs on the credentials it has in a cluster: a token of its ServiceAccount,
	// bound by exactly the RBAC of dist/install.yaml (which also creates the namespace). A
	// permission the workflow needs and install.yaml lacks fails the specs.
	kubectl("apply", "--server-side", "-f", installRBAC())
	manager, err = cluster.StartManager(context.Background(), env.Config, managerBin, workDir)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopPoolSimulator != nil {
		Expect(stopPoolSimulator()).To(Succeed(), "the pool simulator stops")
	}
	// The RBAC of dist/install.yaml allowed every request the manager made in the workflow.
	if manager != nil {
		Expect(manager.Stop()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// Show the manager's and the pool simulator's logs for a failed spec.
var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() && manager != nil {
		data, _ := os.ReadFile(manager.LogPath)
		AddReportEntry("manager log", string(data))
	}
	if report.Failed() && poolSimLog != "" {
		data, _ := os.ReadFile(poolSimLog)
		AddReportEntry("pool simulator log", string(data))
	}
})

// upstreamCRDFiles are the real CRDs, under testenv.UpstreamCRDs(), of the operators the
// control plane has besides the base ones (cluster.UpstreamCRDFiles). The MetalLB CRD is
// installed while the operator runs.
var upstreamCRDFiles = cluster.UpstreamCRDFiles

// upstreamCRDs reads the CRDs of upstreamCRDFiles.
func upstreamCRDs() []*apiextensionsv1.CustomResourceDefinition {
	GinkgoHelper()
	crds, err := cluster.UpstreamCRDs()
	Expect(err).NotTo(HaveOccurred())
	return crds
}

// upstreamCRD is the path of an upstream CRD file, "<group>/<plural>.yaml".
func upstreamCRD(file string) string {
	return filepath.Join(testenv.UpstreamCRDs(), filepath.FromSlash(file))
}

// installRBAC writes the Namespace, ServiceAccount and RBAC objects of dist/install.yaml
// (`make test-e2e` renders it first) to a file and returns its path.
func installRBAC() string {
	GinkgoHelper()
	rbac, err := cluster.InstallRBAC()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(workDir, "install-rbac.yaml")
	Expect(os.WriteFile(path, rbac, 0o600)).To(Succeed())
	return path
}

// kubectl runs the control plane's real kubectl and returns its stdout.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, errOut, err := runKubectl(args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s\n%s%s", strings.Join(args, " "), out, errOut)
	return out
}

func runKubectl(args ...string) (string, string, error) {
	return runWithEnv(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
}

func runWithEnv(bin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"KUBECTL="+filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func jsonpath(resource, path string, extra ...string) string {
	GinkgoHelper()
	return kubectl(append([]string{"get", resource, "-o", fmt.Sprintf("jsonpath=%s", path)}, extra...)...)
}
