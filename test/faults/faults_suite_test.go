// Package faults proves that faults lose nothing: the manager binary is killed between an
// apply and its status write, and on either side of a revert's writes, the API server is
// stopped and started again on the same etcd, every status write is answered 409 once, the
// leader is killed while a standby waits, and a target or the VirtPlatformConfig itself is
// deleted during execution. The manager runs as the process it is in a cluster
// (bin/manager, with leader election) and every assertion reads the API or the API
// server's audit log; each spec prints the writes each target received.
package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

var (
	ctx context.Context
	env *envtest.Environment
	// k8s is the tests' own client, with the administrator's credentials.
	k8s client.Client
	// workDir holds the kubeconfigs, the logs and the API server's certificates.
	workDir string
	// adminKubeconfig is what kubectl runs with.
	adminKubeconfig string
	// managerBin is bin/manager (`make test-faults` builds it).
	managerBin string
	// audit is the API server's audit log.
	audit *auditLog
	// poolSimLog is the log of the pool simulator, which plays the Machine Config Operator
	// for the whole run; stopPoolSimulator stops it.
	poolSimLog        string
	stopPoolSimulator func() error
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "virt-advisor-operator faults")
}

var _ = BeforeSuite(func() {
	ctx = context.Background()
	managerBin = os.Getenv("MANAGER_BINARY")
	Expect(managerBin).NotTo(BeEmpty(), "set MANAGER_BINARY to the manager binary (make test-faults builds it)")
	workDir = GinkgoT().TempDir()

	var err error
	env, err = testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	api := env.ControlPlane.GetAPIServer()
	// A certificate directory of our own survives a stop of the API server: started again,
	// it serves the same certificates on the same port, so every kubeconfig still works.
	api.CertDir = filepath.Join(workDir, "apiserver")
	Expect(os.MkdirAll(api.CertDir, 0o700)).To(Succeed())
	// Every request once, at Metadata level: verb, URI (with fieldManager and dryRun), user
	// and response code, in one file for the whole run.
	auditPath, err := testenv.Audit(env, workDir)
	Expect(err).NotTo(HaveOccurred())
	audit = &auditLog{path: auditPath}
	_, err = testenv.LogAPIServer(env, filepath.Join(workDir, "kube-apiserver.log"))
	Expect(err).NotTo(HaveOccurred())

	_, err = env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(rest.CopyConfig(env.Config), client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	adminKubeconfig = filepath.Join(workDir, "admin.kubeconfig")
	Expect(os.WriteFile(adminKubeconfig, env.KubeConfig, 0o600)).To(Succeed())

	// Three workers, the worker pool's nodes (the pool itself is the samples' mock baseline).
	poolSimLog = filepath.Join(workDir, "poolsim.log")
	var sim *poolsim.Simulator
	sim, stopPoolSimulator = startPoolSimulator(rest.CopyConfig(env.Config), poolSimLog)
	_, err = sim.CreateNodes(ctx, "worker", 3)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopPoolSimulator != nil {
		Expect(stopPoolSimulator()).To(Succeed(), "the pool simulator stops")
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
