package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var (
	env       *envtest.Environment
	k8sClient client.Client
	ctx       = context.Background()
)

func TestAPIValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "VirtPlatformConfig admission")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.New(testenv.OwnCRDs)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
