package install

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// helmLabels are the labels the chart adds to every object (config/helm for the templates
// kubebuilder's helm/v2-alpha plugin generates, templates/_helpers.tpl for the others).
var helmLabels = []string{
	"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version",
}

// defaultImageRepository is the chart's default manager.image.repository.
const defaultImageRepository = "quay.io/kubevirt/virt-advisor-operator"

// keepPolicy is the annotation that makes `helm uninstall` leave an object in place.
const keepPolicy = "helm.sh/resource-policy"

// The Secret of the metrics endpoint's serving certificate, and the annotation of the metrics
// Service that has the OpenShift service CA write it.
const (
	metricsCertSecret   = "virt-advisor-operator-metrics-cert"
	serviceCAAnnotation = "service.beta.openshift.io/serving-cert-secret-name"
)

// renderChart runs `helm template` on dist/chart in the operator's namespace, without a cluster.
func renderChart(args ...string) []*unstructured.Unstructured {
	GinkgoHelper()
	out, errOut, err := renderChartRaw(args...)
	Expect(err).NotTo(HaveOccurred(), "helm template %s\n%s", strings.Join(args, " "), errOut)
	return decodeObjects(out)
}

func renderChartRaw(args ...string) (string, string, error) {
	return renderChartIn(operatorNamespace, args...)
}

// renderInNamespace runs `helm template` on dist/chart in namespace and returns the stream.
func renderInNamespace(namespace string, args ...string) string {
	GinkgoHelper()
	out, errOut, err := renderChartIn(namespace, args...)
	Expect(err).NotTo(HaveOccurred(), "helm template %s\n%s", strings.Join(args, " "), errOut)
	return out
}

func renderChartIn(namespace string, args ...string) (string, string, error) {
	cmd := exec.Command(helmBin, append([]string{"template", releaseName, chartDir, "--namespace=" + namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// installImage is the image dist/install.yaml runs (IMG of `make build-installer`).
func installImage() (repository, tag string) {
	GinkgoHelper()
	deployments := ofKind(readObjects(installYAML), "Deployment")
	Expect(deployments).To(HaveLen(1))
	containers, _, _ := unstructured.NestedSlice(deployments[0].Object, "spec", "template", "spec", "containers")
	Expect(containers).To(HaveLen(1))
	image, _ := containers[0].(map[string]any)["image"].(string)
	i := strings.LastIndex(image, ":")
	Expect(i).To(BeNumerically(">", 0), "the image %q of dist/install.yaml has no tag", image)
	return image[:i], image[i+1:]
}

func byRef(objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	GinkgoHelper()
	out := map[string]*unstructured.Unstructured{}
	for _, obj := range objects {
		Expect(out).NotTo(HaveKey(ref(obj)), "two objects are %s", ref(obj))
		out[ref(obj)] = obj
	}
	return out
}

// withoutHelmMetadata is obj without the labels and annotations Helm's templates add.
func withoutHelmMetadata(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	for _, key := range helmLabels {
		delete(labels, key)
	}
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	delete(annotations, keepPolicy)
	obj.SetAnnotations(annotations)
	return obj
}

// expectSameObject compares two objects field by field and shows a diff when they differ.
func expectSameObject(got, want *unstructured.Unstructured, what string) {
	GinkgoHelper()
	gotYAML, err := yaml.Marshal(got.Object)
	Expect(err).NotTo(HaveOccurred())
	wantYAML, err := yaml.Marshal(want.Object)
	Expect(err).NotTo(HaveOccurred())
	if string(gotYAML) == string(wantYAML) {
		return
	}
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(wantYAML)), B: difflib.SplitLines(string(gotYAML)),
		FromFile: what, ToFile: "dist/chart", Context: 3,
	})
	Fail(ref(want) + " differs:\n" + diff)
}

var _ = Describe("The Helm chart in dist/chart", func() {
	It("passes helm lint --strict, with the default values and with every option on", func() {
		cmd := exec.Command(helmBin, "lint", "--strict", chartDir)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		cmd = exec.Command(helmBin, "lint", "--strict", chartDir,
			"--set", "prometheus.enable=true,prometheusRule.enable=true",
			"--set", "prometheus.labels.release=prometheus,prometheusRule.labels.release=prometheus",
			"--set", "manager.priorityClassName=system-cluster-critical,manager.args={--zap-log-level=debug}")
		out, err = cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		cmd = exec.Command(helmBin, "lint", "--strict", chartDir, "--set", "prometheus.enable=true",
			"--set", "certManager.enable=true,certManager.issuerRef.kind=ClusterIssuer,certManager.issuerRef.name=ca")
		out, err = cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("renders with the default values the objects of dist/install.yaml apart from Helm's labels, "+
		"leaving out only the operator's Namespace", func() {
		// The image of dist/install.yaml is IMG of `make build-installer`; the chart's default is
		// its appVersion (checked in the next spec).
		repository, tag := installImage()
		chart := byRef(renderChart("--set", "manager.image.repository="+repository, "--set", "manager.image.tag="+tag))
		install := byRef(readObjects(installYAML))

		namespaces := ofKind(readObjects(installYAML), "Namespace")
		Expect(namespaces).To(HaveLen(1))
		Expect(namespaces[0].GetName()).To(Equal(operatorNamespace),
			"dist/install.yaml may create only the operator's own namespace")
		delete(install, ref(namespaces[0]))

		Expect(keys(chart)).To(ConsistOf(keys(install)), "the chart and dist/install.yaml hold different objects")
		for key, want := range install {
			expectSameObject(withoutHelmMetadata(chart[key]), want, "dist/install.yaml")
			for _, label := range helmLabels {
				Expect(chart[key].GetLabels()).To(HaveKey(label), "%s lacks Helm's label %s", key, label)
			}
		}
		Expect(chart["CustomResourceDefinition /"+crdName].GetAnnotations()).To(HaveKeyWithValue(keepPolicy, "keep"),
			"helm uninstall must keep the CRD: deleting it deletes every VirtPlatformConfig")
	})

	It("runs the image of its appVersion unless manager.image.tag is set", func() {
		chart, err := readChartYAML()
		Expect(err).NotTo(HaveOccurred())
		Expect(managerContainer(renderChart())["image"]).To(Equal(defaultImageRepository + ":" + chart.AppVersion))
		Expect(managerContainer(renderChart("--set", "manager.image.tag=v9.9.9"))["image"]).
			To(Equal(defaultImageRepository + ":v9.9.9"))
	})

	It("contains no Namespace and nothing outside the release namespace, whatever the values", func() {
		for _, objects := range [][]*unstructured.Unstructured{
			renderChart(),
			renderChart("--set", "prometheus.enable=true,prometheusRule.enable=true"),
			renderChart("--set", "metrics.enable=false"),
			renderChart("--set", "certManager.enable=true"),
		} {
			for _, obj := range objects {
				Expect(obj.GetKind()).NotTo(Equal("Namespace"))
				Expect(obj.GetNamespace()).To(BeElementOf("", operatorNamespace), ref(obj))
				subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
				for _, s := range subjects {
					Expect(s).To(HaveKeyWithValue("namespace", operatorNamespace), ref(obj))
				}
			}
		}
	})

	It("renders the ServiceMonitor of config/prometheus, scraping the metrics Service over HTTPS "+
		"with the service-account token only after verifying its certificate with the OpenShift service CA "+
		"and the Service's DNS name", func() {
		objects := renderChart("--set", "prometheus.enable=true,prometheus.labels.release=prometheus")
		monitors := ofKind(objects, "ServiceMonitor")
		Expect(monitors).To(HaveLen(1))
		monitor := monitors[0]
		Expect(monitor.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))

		configured := readObjects(testenv.Path("config", "prometheus", "monitor.yaml"))[0]
		Expect(monitor.Object["spec"]).To(Equal(configured.Object["spec"]))
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		Expect(endpoints).To(ConsistOf(And(
			HaveKeyWithValue("scheme", "https"),
			HaveKeyWithValue("port", "https"),
			HaveKeyWithValue("bearerTokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"),
			HaveKeyWithValue("tlsConfig", Equal(map[string]any{
				"ca":         map[string]any{"configMap": map[string]any{"name": "openshift-service-ca.crt", "key": "service-ca.crt"}},
				"serverName": "virt-advisor-operator-controller-manager-metrics-service." + operatorNamespace + ".svc",
			})),
		)))

		services := ofKind(objects, "Service")
		Expect(services).To(HaveLen(1))
		ports, _, _ := unstructured.NestedSlice(services[0].Object, "spec", "ports")
		Expect(ports).To(ContainElement(HaveKeyWithValue("name", "https")))
		selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		for key, value := range selector {
			Expect(services[0].GetLabels()).To(HaveKeyWithValue(key, value),
				"the ServiceMonitor does not select the metrics Service")
		}
		Expect(services[0].GetAnnotations()).To(HaveKeyWithValue(serviceCAAnnotation, metricsCertSecret),
			"the service CA writes no certificate for the metrics Service")
		Expect(endpoints[0]).To(HaveKeyWithValue("tlsConfig", HaveKeyWithValue("serverName",
			services[0].GetName()+"."+services[0].GetNamespace()+".svc")), "the ServiceMonitor verifies another name")
	})

	It("verifies the Service's DNS name in the release namespace", func() {
		objects := decodeObjects(renderInNamespace("monitoring-test", "--set", "prometheus.enable=true"))
		monitors := ofKind(objects, "ServiceMonitor")
		Expect(monitors).To(HaveLen(1))
		endpoints, _, _ := unstructured.NestedSlice(monitors[0].Object, "spec", "endpoints")
		Expect(endpoints).To(ConsistOf(HaveKeyWithValue("tlsConfig", HaveKeyWithValue("serverName",
			"virt-advisor-operator-controller-manager-metrics-service.monitoring-test.svc"))))
	})

	It("mounts the Secret of the serving certificate into the manager as an optional volume and reads it "+
		"with --metrics-cert-path, so the manager starts while the Secret does not exist", func() {
		objects := renderChart()
		Expect(managerContainer(objects)["args"]).To(ContainElement("--metrics-cert-path=/var/run/secrets/metrics-cert"))
		Expect(managerContainer(objects)["volumeMounts"]).To(ConsistOf(And(
			HaveKeyWithValue("name", "metrics-cert"), HaveKeyWithValue("mountPath", "/var/run/secrets/metrics-cert"),
			HaveKeyWithValue("readOnly", true))))
		volumes, _, _ := unstructured.NestedSlice(ofKind(objects, "Deployment")[0].Object, "spec", "template", "spec", "volumes")
		Expect(volumes).To(ConsistOf(Equal(map[string]any{
			"name": "metrics-cert", "secret": map[string]any{"secretName": metricsCertSecret, "optional": true},
		})))
	})

	It("with certManager.enable=true renders a Certificate for the Service's DNS name into that Secret, "+
		"signed by a self-signed Issuer, and a ServiceMonitor that trusts the CA cert-manager puts in the Secret", func() {
		objects := renderChart("--set", "certManager.enable=true,prometheus.enable=true")
		dnsName := "virt-advisor-operator-controller-manager-metrics-service." + operatorNamespace + ".svc"

		certificates := ofKind(objects, "Certificate")
		Expect(certificates).To(HaveLen(1))
		spec, _, _ := unstructured.NestedMap(certificates[0].Object, "spec")
		Expect(spec).To(HaveKeyWithValue("secretName", metricsCertSecret))
		Expect(spec).To(HaveKeyWithValue("dnsNames", ContainElement(dnsName)))
		Expect(spec).To(HaveKeyWithValue("issuerRef", Equal(map[string]any{"kind": "Issuer", "name": "virt-advisor-operator-selfsigned-issuer"})))
		issuers := ofKind(objects, "Issuer")
		Expect(issuers).To(HaveLen(1))
		Expect(issuers[0].GetName()).To(Equal("virt-advisor-operator-selfsigned-issuer"))
		Expect(issuers[0].Object).To(HaveKeyWithValue("spec", HaveKey("selfSigned")))

		endpoints, _, _ := unstructured.NestedSlice(ofKind(objects, "ServiceMonitor")[0].Object, "spec", "endpoints")
		Expect(endpoints).To(ConsistOf(HaveKeyWithValue("tlsConfig", Equal(map[string]any{
			"ca":         map[string]any{"secret": map[string]any{"name": metricsCertSecret, "key": "ca.crt"}},
			"serverName": dnsName,
		}))))
		Expect(ofKind(objects, "Service")[0].GetAnnotations()).NotTo(HaveKey(serviceCAAnnotation),
			"the service CA would write the Secret cert-manager writes")
		Expect(managerContainer(objects)["args"]).To(ContainElement("--metrics-cert-path=/var/run/secrets/metrics-cert"))
	})

	It("with certManager.issuerRef has the Certificate signed by that issuer and creates no Issuer", func() {
		objects := renderChart("--set", "certManager.enable=true",
			"--set", "certManager.issuerRef.kind=ClusterIssuer,certManager.issuerRef.name=cluster-ca")
		Expect(ofKind(objects, "Issuer")).To(BeEmpty())
		issuerRef, _, _ := unstructured.NestedMap(ofKind(objects, "Certificate")[0].Object, "spec", "issuerRef")
		Expect(issuerRef).To(Equal(map[string]any{"kind": "ClusterIssuer", "name": "cluster-ca"}))
	})

	It("renders no Certificate with the default certManager.enable=false", func() {
		objects := renderChart("--set", "prometheus.enable=true")
		Expect(ofKind(objects, "Certificate")).To(BeEmpty())
		Expect(ofKind(objects, "Issuer")).To(BeEmpty())
	})

	It("refuses a certManager.enable that is not true or false", func() {
		_, errOut, err := renderChartRaw("--set", "certManager.enable=self-signed")
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring(`certManager.enable is true or false, not "self-signed"`))
	})

	It("renders the alerts of config/prometheus/prometheus_rule.yaml unchanged, their {{ $labels }} included", func() {
		rules := ofKind(renderChart("--set", "prometheusRule.enable=true,prometheusRule.labels.role=alert-rules"),
			"PrometheusRule")
		Expect(rules).To(HaveLen(1))
		Expect(rules[0].GetLabels()).To(HaveKeyWithValue("role", "alert-rules"))
		configured := readObjects(testenv.Path("config", "prometheus", "prometheus_rule.yaml"))[0]
		Expect(rules[0].Object["spec"]).To(Equal(configured.Object["spec"]))
	})

	It("leaves out the ServiceMonitor and the alerts by default", func() {
		objects := renderChart()
		Expect(ofKind(objects, "ServiceMonitor")).To(BeEmpty())
		Expect(ofKind(objects, "PrometheusRule")).To(BeEmpty())
	})

	It("serves no metrics and has no metrics Service with metrics.enable=false", func() {
		objects := renderChart("--set", "metrics.enable=false")
		Expect(ofKind(objects, "Service")).To(BeEmpty())
		Expect(managerContainer(objects)["args"]).To(ContainElement("--metrics-bind-address=0"))
		Expect(managerContainer(objects)).NotTo(HaveKey("ports"))
	})

	It("refuses a ServiceMonitor when the metrics are not served over HTTPS with authentication", func() {
		_, errOut, err := renderChartRaw("--set", "prometheus.enable=true,metrics.secure=false")
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("prometheus.enable needs metrics.enable and metrics.secure"))
	})

	It("passes the values of the manager's flags and scheduling to the Deployment", func() {
		objects := renderChart("--set", "manager.replicas=2",
			"--set", "manager.args={--advertise-profiles=false,--health-poll-interval=1m,--zap-log-level=debug}",
			"--set", "manager.priorityClassName=system-cluster-critical",
			"--set", "manager.nodeSelector.node-role\\.kubernetes\\.io/infra=",
			"--set", "manager.tolerations[0].key=node-role.kubernetes.io/infra,manager.tolerations[0].operator=Exists",
			"--set", "metrics.secure=false")
		deployment := ofKind(objects, "Deployment")[0]
		Expect(deployment.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", BeEquivalentTo(2))))
		Expect(managerContainer(objects)["args"]).To(ContainElements(
			"--leader-elect", "--advertise-profiles=false", "--health-poll-interval=1m",
			"--zap-log-level=debug", "--metrics-secure=false"))
		Expect(managerContainer(objects)["args"]).NotTo(ContainElement(HavePrefix("--metrics-cert-path=")),
			"plain HTTP has no certificate")
		Expect(managerContainer(objects)).NotTo(HaveKey("volumeMounts"))
		podSpec, _, _ := unstructured.NestedMap(deployment.Object, "spec", "template", "spec")
		Expect(podSpec).To(HaveKeyWithValue("priorityClassName", "system-cluster-critical"))
		Expect(podSpec).To(HaveKeyWithValue("nodeSelector", HaveKey("node-role.kubernetes.io/infra")))
		Expect(podSpec).To(HaveKeyWithValue("tolerations", ContainElement(HaveKeyWithValue("operator", "Exists"))))
	})
})

// managerContainer is the manager container of the rendered Deployment.
func managerContainer(objects []*unstructured.Unstructured) map[string]any {
	GinkgoHelper()
	deployments := ofKind(objects, "Deployment")
	Expect(deployments).To(HaveLen(1))
	containers, _, _ := unstructured.NestedSlice(deployments[0].Object, "spec", "template", "spec", "containers")
	Expect(containers).To(HaveLen(1))
	return containers[0].(map[string]any)
}

type chartYAML struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func readChartYAML() (chartYAML, error) {
	var c chartYAML
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return c, err
	}
	return c, yaml.Unmarshal(data, &c)
}

func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
