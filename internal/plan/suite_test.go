package plan_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// The engine specs run against a real kube-apiserver and etcd (envtest) with the
// KubeDescheduler CRD of the 4.20 generation and the MachineConfig/MachineConfigPool CRDs,
// so server-side apply, dry-run, defaulting and CEL validation are the API server's own.

const deschedulerNamespace = "openshift-kube-descheduler-operator"

var (
	env       *envtest.Environment
	k8sClient client.Client
	engine    *plan.Engine
	ctx       = context.Background()
)

func TestPlanEngine(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Plan engine")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	env, err = testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deschedulerNamespace}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())

	engine = &plan.Engine{Reader: k8sClient, Writer: k8sClient}
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
