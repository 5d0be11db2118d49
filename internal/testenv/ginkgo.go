package testenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
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

// DeleteAndWait deletes obj with c and waits until it is gone. It is deleted again while
// it exists: a reconcile still in flight may write it once more.
func DeleteAndWait(ctx context.Context, c client.Client, obj client.Object) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func() bool {
		gomega.Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(gomega.Succeed())
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).Should(gomega.BeTrue(), "%s was not deleted", obj.GetName())
}

// Object is an empty unstructured object of the kind, named key.
func Object(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// Read returns the live object of the kind named key, or nil when it does not exist.
func Read(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	ginkgo.GinkgoHelper()
	u := Object(gvk, key)
	err := c.Get(ctx, key, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return u
}

// DescribeConditions lists the config's True conditions with their reasons and messages,
// for failure messages.
func DescribeConditions(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	var parts []string
	for _, c := range vpc.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("%s(%s: %s)", c.Type, c.Reason, c.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// Item returns the config's plan item of that name; the spec fails when there is none.
func Item(vpc *advisorv1alpha1.VirtPlatformConfig, name string) advisorv1alpha1.PlanItem {
	ginkgo.GinkgoHelper()
	for _, it := range vpc.Status.Items {
		if it.Name == name {
			return it
		}
	}
	ginkgo.Fail("no item " + name)
	return advisorv1alpha1.PlanItem{}
}
