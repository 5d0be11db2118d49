package install

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("Installing with helm", Ordered, func() {
	var (
		cp *controlPlane
		// installed are the objects of the release, as `helm get manifest` lists them.
		installed []*unstructured.Unstructured
	)
	monitoring := []string{"--set", "prometheus.enable=true,prometheusRule.enable=true"}

	BeforeAll(func() {
		cp = startControlPlane(testenv.Path("test", "crds", "monitoring"))
		cp.createNamespaces(foreignNamespaces...)
	})

	It("helm install --create-namespace creates every object of the chart, "+
		"the ServiceMonitor and the PrometheusRule among them", func() {
		cp.helm(append([]string{"install", releaseName, chartDir, namespaceFlag, "--create-namespace"}, monitoring...)...)

		installed = decodeObjects(cp.helm("get", "manifest", releaseName, namespaceFlag))
		kinds := map[string]bool{}
		for _, obj := range installed {
			kinds[obj.GetKind()] = true
			_, err := cp.get(obj)
			Expect(err).NotTo(HaveOccurred(), "%s was not created", ref(obj))
		}
		Expect(kinds).To(HaveKey("CustomResourceDefinition"))
		Expect(kinds).To(HaveKey("Deployment"))
		Expect(kinds).To(HaveKey("ServiceMonitor"))
		Expect(kinds).To(HaveKey("PrometheusRule"))
		Expect(kinds).NotTo(HaveKey("Namespace"))
		cp.expectNamespacesIntact(append(foreignNamespaces, operatorNamespace)...)
	})

	It("creates a ServiceMonitor that verifies the metrics endpoint's certificate with the service CA bundle "+
		"and the metrics Service's DNS name, never skipping verification", func() {
		monitor, err := cp.get(object("monitoring.coreos.com/v1", "ServiceMonitor", operatorNamespace,
			"virt-advisor-operator-controller-manager-metrics-monitor"))
		Expect(err).NotTo(HaveOccurred())
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		Expect(endpoints).To(HaveLen(1))
		Expect(endpoints[0]).To(HaveKeyWithValue("tlsConfig", Equal(map[string]any{
			"ca":         map[string]any{"configMap": map[string]any{"name": "openshift-service-ca.crt", "key": "service-ca.crt"}},
			"serverName": "virt-advisor-operator-controller-manager-metrics-service." + operatorNamespace + ".svc",
		})))
	})

	It("serves VirtPlatformConfigs once installed", func() {
		// The admission policies on VirtPlatformConfigs need the CRD's schema, which the API
		// server publishes a moment after the CRD is served: until then writes get a 503.
		Eventually(func() error {
			return cp.client.Create(context.Background(), virtPlatformConfig())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("has the admission policies in force: an editor cannot approve, an approver's approval is recorded", func() {
		cp.expectPoliciesWork()
	})

	It("helm upgrade to the next chart version with changed values updates the objects, the CRD included", func() {
		next := nextChartVersion()
		cp.helm(append([]string{"upgrade", releaseName, next, namespaceFlag,
			"--set=manager.replicas=2,manager.args={--advertise-profiles=true,--health-poll-interval=30s}," +
				"manager.resources.limits.memory=512Mi,prometheus.labels.release=kube-prometheus-stack"},
			monitoring...)...)

		deployment, err := cp.get(managerDeployment())
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", BeEquivalentTo(2))))
		container := managerContainer([]*unstructured.Unstructured{deployment})
		Expect(container["args"]).To(ContainElement("--health-poll-interval=30s"))
		Expect(container["resources"]).To(HaveKeyWithValue("limits", HaveKeyWithValue("memory", "512Mi")))

		monitor, err := cp.get(object("monitoring.coreos.com/v1", "ServiceMonitor", operatorNamespace,
			"virt-advisor-operator-controller-manager-metrics-monitor"))
		Expect(err).NotTo(HaveOccurred())
		Expect(monitor.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))

		crd, err := cp.get(object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName))
		Expect(err).NotTo(HaveOccurred())
		Expect(crd.GetLabels()).To(HaveKeyWithValue("helm.sh/chart", "virt-advisor-operator-99.0.0"))
		shortNames, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
		Expect(shortNames).To(ContainElement("vpcupgrade"))
	})

	It("helm uninstall removes the operator's objects but keeps the CRD and every VirtPlatformConfig, "+
		"and deletes no namespace", func() {
		cp.helm("uninstall", releaseName, namespaceFlag)

		for _, obj := range installed {
			if obj.GetKind() == "CustomResourceDefinition" {
				continue
			}
			Eventually(func() bool { return cp.gone(obj) }).Should(BeTrue(), "%s was not removed", ref(obj))
		}
		crd, err := cp.get(object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName))
		Expect(err).NotTo(HaveOccurred(), "helm uninstall deleted the CRD")
		Expect(crd.GetDeletionTimestamp()).To(BeNil(), "helm uninstall deletes the CRD")
		_, err = cp.get(virtPlatformConfig())
		Expect(err).NotTo(HaveOccurred(), "the VirtPlatformConfig did not survive helm uninstall")
		cp.expectNamespacesIntact(append(foreignNamespaces, operatorNamespace)...)
	})

	It("helm install of the same release again adopts the kept CRD", func() {
		cp.helm("install", releaseName, chartDir, namespaceFlag)

		crd, err := cp.get(object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName))
		Expect(err).NotTo(HaveOccurred())
		Expect(crd.GetLabels()).To(HaveKeyWithValue("helm.sh/chart", "virt-advisor-operator-"+chartVersion()))
		_, err = cp.get(virtPlatformConfig())
		Expect(err).NotTo(HaveOccurred())
	})
})

// chartVersion is the version in dist/chart/Chart.yaml.
func chartVersion() string {
	GinkgoHelper()
	chart, err := readChartYAML()
	Expect(err).NotTo(HaveOccurred())
	return chart.Version
}

// nextChartVersion is a copy of dist/chart as a next version would be: another chart
// version and a CRD with one more short name.
func nextChartVersion() string {
	GinkgoHelper()
	dir := filepath.Join(GinkgoT().TempDir(), "chart")
	Expect(os.CopyFS(dir, os.DirFS(chartDir))).To(Succeed())
	edit := func(file string, old *regexp.Regexp, new string) {
		GinkgoHelper()
		path := filepath.Join(dir, file)
		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(old.Match(data)).To(BeTrue(), "%s has no %s: adapt the test", file, old)
		Expect(os.WriteFile(path, old.ReplaceAll(data, []byte(new)), 0o644)).To(Succeed())
	}
	edit("Chart.yaml", regexp.MustCompile(`(?m)^version: .*$`), "version: 99.0.0")
	edit(filepath.Join("templates", "crd", crdName+".yaml"),
		regexp.MustCompile(`(?m)^( +)shortNames:\n( +)- vpc$`), "${1}shortNames:\n${2}- vpc\n${2}- vpcupgrade")
	return dir
}
