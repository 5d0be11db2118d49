package install

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// The plugin's web server: its Service, whose serving certificate the OpenShift service CA
// writes into a Secret, and its Deployment.
const (
	pluginServiceName = "virt-advisor-operator-console-plugin"
	pluginCertSecret  = "virt-advisor-operator-console-plugin-cert"
)

// consolePluginName is the plugin's name in console/package.json, which the console loads it
// by: the name of the ConsolePlugin.
func consolePluginName() string {
	GinkgoHelper()
	data, err := os.ReadFile(testenv.Path("console", "package.json"))
	Expect(err).NotTo(HaveOccurred())
	var pkg struct {
		ConsolePlugin struct {
			Name string `json:"name"`
		} `json:"consolePlugin"`
	}
	Expect(json.Unmarshal(data, &pkg)).To(Succeed())
	Expect(pkg.ConsolePlugin.Name).NotTo(BeEmpty())
	return pkg.ConsolePlugin.Name
}

// kustomizeConsolePlugin renders config/console-plugin, as `make build-installer
// CONSOLE_PLUGIN=true` appends it to dist/install.yaml.
func kustomizeConsolePlugin() []*unstructured.Unstructured {
	GinkgoHelper()
	out, err := exec.Command(kubectlBin, "kustomize", testenv.Path("config", "console-plugin")).Output()
	Expect(err).NotTo(HaveOccurred())
	return decodeObjects(string(out))
}

// withConsolePlugin are the values that turn the plugin on, with the image of config/console-plugin.
var withConsolePlugin = []string{"--set", "consolePlugin.enable=true",
	"--set", "consolePlugin.image.repository=console-plugin,consolePlugin.image.tag=latest"}

var _ = Describe("The console plugin in dist/chart", func() {
	It("is left out by default: no ConsolePlugin, and no web server", func() {
		objects := renderChart()
		Expect(ofKind(objects, "ConsolePlugin")).To(BeEmpty())
		for _, obj := range objects {
			Expect(obj.GetName()).NotTo(Equal(pluginServiceName), ref(obj))
		}
	})

	It("with consolePlugin.enable=true renders the objects of config/console-plugin", func() {
		chart := byRef(renderChart(withConsolePlugin...))
		plugin := kustomizeConsolePlugin()
		Expect(plugin).To(HaveLen(3))
		for _, want := range plugin {
			got, ok := chart[ref(want)]
			Expect(ok).To(BeTrue(), "the chart lacks %s", ref(want))
			expectSameObject(withoutHelmMetadata(got), want, "config/console-plugin")
		}
		Expect(ofKind(renderChart("--set", "consolePlugin.enable=true"), "Deployment")).To(ContainElement(
			WithTransform(func(d *unstructured.Unstructured) any {
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				return containers[0].(map[string]any)["image"]
			}, HavePrefix("quay.io/kubevirt/virt-advisor-console-plugin:"))))
	})

	It("names the plugin as console/package.json does, served by the Service it names over HTTPS "+
		"with a certificate from the OpenShift service CA", func() {
		objects := renderChart("--set", "consolePlugin.enable=true")
		plugins := ofKind(objects, "ConsolePlugin")
		Expect(plugins).To(HaveLen(1))
		Expect(plugins[0].GetName()).To(Equal(consolePluginName()))
		Expect(plugins[0].GetAPIVersion()).To(Equal("console.openshift.io/v1"))
		backend, _, _ := unstructured.NestedMap(plugins[0].Object, "spec", "backend")
		Expect(backend).To(HaveKeyWithValue("type", "Service"))
		Expect(backend).To(HaveKeyWithValue("service", And(
			HaveKeyWithValue("name", pluginServiceName), HaveKeyWithValue("namespace", operatorNamespace),
			HaveKeyWithValue("port", BeEquivalentTo(9443)), HaveKeyWithValue("basePath", "/"))))

		services := byRef(ofKind(objects, "Service"))
		service := services["Service "+operatorNamespace+"/"+pluginServiceName]
		Expect(service).NotTo(BeNil())
		Expect(service.GetAnnotations()).To(HaveKeyWithValue(serviceCAAnnotation, pluginCertSecret))
		ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
		Expect(ports).To(ConsistOf(And(HaveKeyWithValue("port", BeEquivalentTo(9443)), HaveKeyWithValue("targetPort", "https"))))

		var server *unstructured.Unstructured
		for _, d := range ofKind(objects, "Deployment") {
			if d.GetName() == pluginServiceName {
				server = d
			}
		}
		Expect(server).NotTo(BeNil())
		selector, _, _ := unstructured.NestedStringMap(service.Object, "spec", "selector")
		podLabels, _, _ := unstructured.NestedStringMap(server.Object, "spec", "template", "metadata", "labels")
		for k, v := range selector {
			Expect(podLabels).To(HaveKeyWithValue(k, v), "the Service does not select the web server's pods")
		}
		volumes, _, _ := unstructured.NestedSlice(server.Object, "spec", "template", "spec", "volumes")
		Expect(volumes).To(ContainElement(HaveKeyWithValue("secret", HaveKeyWithValue("secretName", pluginCertSecret))))
		containers, _, _ := unstructured.NestedSlice(server.Object, "spec", "template", "spec", "containers")
		Expect(containers).To(HaveLen(1))
		container := containers[0].(map[string]any)
		Expect(container["ports"]).To(ConsistOf(And(HaveKeyWithValue("name", "https"),
			HaveKeyWithValue("containerPort", BeEquivalentTo(9443)))))
		Expect(container["securityContext"]).To(HaveKeyWithValue("readOnlyRootFilesystem", true))
	})

	It("passes helm lint --strict with the console plugin", func() {
		out, err := exec.Command(helmBin, "lint", "--strict", chartDir, "--set", "consolePlugin.enable=true").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("refuses a consolePlugin.enable that is not true or false", func() {
		_, errOut, err := renderChartRaw("--set", "consolePlugin.enable=yes")
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring(`consolePlugin.enable is true or false, not "yes"`))
	})
})

var _ = Describe("Installing the console plugin with helm on OpenShift", Ordered, func() {
	var (
		cp      *controlPlane
		objects []*unstructured.Unstructured
	)

	BeforeAll(func() {
		// The ConsolePlugin CRD of OpenShift, as it is: the API server checks the chart's
		// ConsolePlugin against its schema.
		cp = startControlPlane(filepath.Join(testenv.UpstreamCRDs(), "console.openshift.io"))
	})

	It("helm install with consolePlugin.enable=true creates the ConsolePlugin, its Service and its web server", func() {
		cp.helm("install", releaseName, chartDir, namespaceFlag, "--create-namespace", "--set", "consolePlugin.enable=true")
		objects = decodeObjects(cp.helm("get", "manifest", releaseName, namespaceFlag))
		Expect(ofKind(objects, "ConsolePlugin")).To(HaveLen(1))
		for _, obj := range objects {
			_, err := cp.get(obj)
			Expect(err).NotTo(HaveOccurred(), "%s was not created", ref(obj))
		}
	})

	It("helm uninstall removes them", func() {
		cp.helm("uninstall", releaseName, namespaceFlag)
		for _, obj := range objects {
			if obj.GetKind() == "CustomResourceDefinition" {
				continue
			}
			Eventually(func() bool { return cp.gone(obj) }).Should(BeTrue(), "%s is left", ref(obj))
		}
	})
})
