// Package health tests what fleet and GitOps engines read of a VirtPlatformConfig: kstatus
// (Flux, kpt, cli-utils) through sigs.k8s.io/cli-utils, the Argo CD health check
// config/health/argocd/health.lua through gopher-lua as Argo CD runs it, and the OCM
// condition rules config/health/ocm-condition-rules.yaml through cel-go as the OCM work
// agent runs them, each on configs the operator, running in the test against a real
// kube-apiserver, drove into the phases it can reach.
package health

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
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
)

func TestHealth(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Health read-back")
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
	create(descheduler)

	done, err := cluster.RunOperator(ctx, cfg, loadaware.New(), higherdensity.New())
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

// descheduler is the KubeDescheduler the load-aware-rebalancing profile tunes, as an
// administrator left it, with its namespace. No HyperConverged exists: a
// virt-higher-density config misses its prerequisite.
const descheduler = `apiVersion: v1
kind: Namespace
metadata:
  name: openshift-kube-descheduler-operator
---
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
spec:
  managementState: Managed
  deschedulingIntervalSeconds: 3600
  profiles:
  - AffinityAndTaints
  - SoftTopologyAndDuplicates
  - LifecycleAndUtilization
`

// workerPool is a MachineConfigPool that selects the worker MachineConfigs and never
// rolls out (no Machine Config Operator runs here): a MachineConfig item waits on it.
const workerPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
  labels:
    pools.operator.machineconfiguration.openshift.io/worker: ""
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: ""
`
