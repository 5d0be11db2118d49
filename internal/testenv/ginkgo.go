package testenv

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// StartForContainer starts env for the enclosing container (call it from BeforeAll), stops
// it when the container is done, creates the namespaces (never deleted: envtest runs no
// namespace controller) and returns a client with the operator's scheme.
func StartForContainer(ctx context.Context, env *envtest.Environment, namespaces ...string) client.Client {
	ginkgo.GinkgoHelper()
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start the control plane")
	ginkgo.DeferCleanup(func(env *envtest.Environment) { gomega.Expect(env.Stop()).To(gomega.Succeed()) }, env)
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	for _, ns := range namespaces {
		gomega.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	}
	return c
}

// CreateForSpec creates obj (YAML) with c and deletes it again when the current spec ends.
func CreateForSpec(ctx context.Context, c client.Client, doc string) *unstructured.Unstructured {
	ginkgo.GinkgoHelper()
	obj := &unstructured.Unstructured{}
	gomega.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(gomega.Succeed())
	gomega.Expect(c.Create(ctx, obj)).To(gomega.Succeed(), "create %s %s", obj.GetKind(), obj.GetName())
	ginkgo.DeferCleanup(func() { gomega.Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(gomega.Succeed()) })
	return obj
}
