// Package approvals tests the admission policies of config/policies and the roles of
// config/rbac on a real kube-apiserver, driven by kubectl with --as (impersonation), with
// the operator running in the test: who requested and who approved is recorded, approving
// needs the verb approve, four-eyes and its GitOps exception, and what status shows.
package approvals

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
)

var (
	// operatorDone receives what the operator's manager returned once it stopped.
	operatorDone <-chan error
	ctx          context.Context
	cancel       context.CancelFunc
	env          *envtest.Environment
	k8s          client.Client
	kubeconfig   string
)

func TestApprovals(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Approval policies")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	env, err = testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "virt-advisor-approvals-test")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())

	// The policies and the roles for people, as dist/install.yaml ships them.
	kubectlApply(installed(kubectl("kustomize", testenv.Path("config", "default"))))
	kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	// The API server loads policies asynchronously: wait until the identity policy records.
	Eventually(func() string {
		out, _ := run("create", "--dry-run=server", "-o", "jsonpath={.metadata.annotations}", "-f", "-")
		return out
	}).Should(ContainSubstring(advisorv1alpha1.RequestedByAnnotation))

	done, err := cluster.RunOperator(ctx, cfg, loadaware.New())
	Expect(err).NotTo(HaveOccurred())
	operatorDone = done
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if operatorDone != nil {
		Expect(<-operatorDone).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// installed keeps, of the rendered config/default, the admission policies, their bindings
// and the ClusterRoles for people.
func installed(rendered string) string {
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		switch {
		case strings.Contains(doc, "kind: MutatingAdmissionPolicy"), strings.Contains(doc, "kind: ValidatingAdmissionPolicy"):
		case strings.Contains(doc, "\nkind: ClusterRole\n") && strings.Contains(doc, "virtplatformconfig-"):
		default:
			continue
		}
		keep = append(keep, doc)
	}
	Expect(keep).To(HaveLen(13), "3 ClusterRoles, 5 policies and 5 bindings:\n%s", strings.Join(keep, "\n---\n"))
	return strings.Join(keep, "\n---\n")
}

func kubectlPath() string { return filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl") }

// kubectl runs the real kubectl as the test's administrator and returns its output.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := run(args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// as runs kubectl as user (impersonated); it returns the output and whether it succeeded.
func as(user string, args ...string) (string, error) {
	return run(append([]string{"--as=" + user}, args...)...)
}

func run(args ...string) (string, error) {
	cmd := exec.Command(kubectlPath(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if len(args) > 0 && args[0] == "create" {
		cmd.Stdin = strings.NewReader(probeConfig)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// probeConfig is created with a server-side dry run to see the policies in force.
const probeConfig = `
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata: {name: load-aware-rebalancing}
spec: {profile: load-aware-rebalancing, action: DryRun}`

func kubectlApply(manifest string) {
	GinkgoHelper()
	cmd := exec.Command(kubectlPath(), "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}
