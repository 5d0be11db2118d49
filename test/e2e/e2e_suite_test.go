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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var (
	env        *envtest.Environment
	workDir    string
	kubeconfig string
	manager    *exec.Cmd
	managerLog *os.File
	managerBin string
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
	env, err = testenv.New(testenv.OwnCRDs, testenv.BaseCRDs, testenv.DeschedulerCRDs("4.20"))
	Expect(err).NotTo(HaveOccurred())
	_, err = env.Start()
	Expect(err).NotTo(HaveOccurred())

	workDir = GinkgoT().TempDir()
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())

	kubectl("create", "namespace", "virt-advisor-operator-system")
	managerLog, err = os.Create(filepath.Join(workDir, "manager.log"))
	Expect(err).NotTo(HaveOccurred())
	manager = exec.Command(managerBin,
		"--leader-elect", "--namespace=virt-advisor-operator-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0", "--health-poll-interval=1s")
	manager.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	manager.Stdout, manager.Stderr = managerLog, managerLog
	Expect(manager.Start()).To(Succeed())
})

var _ = AfterSuite(func() {
	if manager != nil && manager.Process != nil {
		_ = manager.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- manager.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = manager.Process.Kill()
		}
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// Show the manager's log for a failed spec.
var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() && managerLog != nil {
		data, _ := os.ReadFile(managerLog.Name())
		AddReportEntry("manager log", string(data))
	}
})

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

// script runs one of the project's scripts in hack/ against the control plane.
func script(name string, args ...string) string {
	GinkgoHelper()
	out, errOut, err := runWithEnv(testenv.Path("hack", name), args...)
	Expect(err).NotTo(HaveOccurred(), "%s %s\n%s%s", name, strings.Join(args, " "), out, errOut)
	return out
}

func jsonpath(resource, path string, extra ...string) string {
	GinkgoHelper()
	return kubectl(append([]string{"get", resource, "-o", fmt.Sprintf("jsonpath=%s", path)}, extra...)...)
}
