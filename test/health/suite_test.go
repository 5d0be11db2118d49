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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *envtest.Environment
	k8s    client.Client
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

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Cache:                  watches.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	registry, err := profiles.NewRegistry(loadaware.New(), higherdensity.New())
	Expect(err).NotTo(HaveOccurred())
	reconciler := &controller.VirtPlatformConfigReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Profiles:           registry,
		Engine:             &plan.Engine{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()},
		Recorder:           mgr.GetEventRecorder("virt-advisor-operator"),
		Version:            "v1.0.0-test",
		HealthPollInterval: 200 * time.Millisecond,
	}
	Expect(reconciler.SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
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
