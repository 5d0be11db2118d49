package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var _ = Describe("Installing with kubectl from dist/install.yaml", Ordered, func() {
	var (
		cp      *controlPlane
		objects []*unstructured.Unstructured
	)

	BeforeAll(func() {
		cp = startControlPlane()
		cp.createNamespaces(foreignNamespaces...)
		objects = readObjects(installYAML)
	})

	It("kubectl apply --server-side creates every object, the operator's own Namespace among them", func() {
		cp.kubectl("apply", "--server-side", "-f", installYAML)

		for _, obj := range objects {
			_, err := cp.get(obj)
			Expect(err).NotTo(HaveOccurred(), "%s was not created", ref(obj))
		}
		namespaces := ofKind(objects, "Namespace")
		Expect(namespaces).To(HaveLen(1))
		Expect(namespaces[0].GetName()).To(Equal(operatorNamespace))
		cp.expectNamespacesIntact(foreignNamespaces...)
	})

	It("has the OpenShift service CA sign the metrics Service's certificate into a Secret the manager mounts "+
		"as an optional volume, so the manager starts on a cluster without the service CA", func() {
		service, err := cp.get(object("v1", "Service", operatorNamespace, "virt-advisor-operator-controller-manager-metrics-service"))
		Expect(err).NotTo(HaveOccurred())
		Expect(service.GetAnnotations()).To(HaveKeyWithValue(serviceCAAnnotation, metricsCertSecret))

		deployment, err := cp.get(managerDeployment())
		Expect(err).NotTo(HaveOccurred())
		volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
		Expect(volumes).To(ContainElement(Equal(map[string]any{
			"name": "metrics-cert", "secret": map[string]any{"secretName": metricsCertSecret, "optional": true, "defaultMode": int64(420)},
		})))
		container := managerContainer([]*unstructured.Unstructured{deployment})
		Expect(container["args"]).To(ContainElement("--metrics-cert-path=/var/run/secrets/metrics-cert"))
		Expect(container["volumeMounts"]).To(ContainElement(And(
			HaveKeyWithValue("name", "metrics-cert"), HaveKeyWithValue("mountPath", "/var/run/secrets/metrics-cert"))))
	})

	It("serves VirtPlatformConfigs once applied", func() {
		// The admission policies on VirtPlatformConfigs need the CRD's schema, which the API
		// server publishes a moment after the CRD is served: until then writes get a 503.
		Eventually(func() error {
			return cp.client.Create(context.Background(), virtPlatformConfig())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("has the admission policies in force: an editor cannot approve, an approver's approval is recorded", func() {
		cp.expectPoliciesWork()
	})

	It("kubectl apply --server-side of a changed install.yaml updates the objects", func() {
		changed := filepath.Join(GinkgoT().TempDir(), "install.yaml")
		data, err := os.ReadFile(installYAML)
		Expect(err).NotTo(HaveOccurred())
		text := string(data)
		for old, new := range map[string]string{
			"  replicas: 1\n":            "  replicas: 2\n",
			"--health-poll-interval=10s": "--health-poll-interval=30s",
		} {
			Expect(strings.Count(text, old)).To(Equal(1), "dist/install.yaml has no single %q: adapt the test", old)
			text = strings.Replace(text, old, new, 1)
		}
		Expect(os.WriteFile(changed, []byte(text), 0o644)).To(Succeed())
		cp.kubectl("apply", "--server-side", "-f", changed)

		deployment, err := cp.get(managerDeployment())
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", BeEquivalentTo(2))))
		Expect(managerContainer([]*unstructured.Unstructured{deployment})["args"]).
			To(ContainElement("--health-poll-interval=30s"))
	})

	It("kubectl delete removes every object, the CRD and with it every VirtPlatformConfig; "+
		"of the namespaces only the operator's own goes", func() {
		// --wait=false: the test control plane runs no namespace controller, so the operator's
		// namespace stays Terminating instead of going away.
		cp.kubectl("delete", "--wait=false", "-f", installYAML)

		for _, obj := range objects {
			if obj.GetKind() == "Namespace" {
				continue
			}
			Eventually(func() bool { return cp.gone(obj) }).Should(BeTrue(), "%s was not removed", ref(obj))
		}
		Eventually(func() bool { return cp.gone(virtPlatformConfig()) }).Should(BeTrue(),
			"the VirtPlatformConfig outlived its CRD")
		namespace := object("v1", "Namespace", "", operatorNamespace)
		Eventually(func() bool {
			live, err := cp.get(namespace)
			return cp.gone(namespace) || (err == nil && live.GetDeletionTimestamp() != nil)
		}).Should(BeTrue(), "the operator's namespace is not being deleted")
		cp.expectNamespacesIntact(foreignNamespaces...)
	})
})
