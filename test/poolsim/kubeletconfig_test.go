package poolsim_test

import (
	"encoding/base64"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// kubeletConfig creates a KubeletConfig with annotations (YAML) that selects the pool by
// its pools.operator.machineconfiguration.openshift.io/<pool> label and sets maxPods; it is
// deleted when the spec ends.
func kubeletConfig(name, pool, annotations, maxPods string) {
	GinkgoHelper()
	testenv.CreateForSpec(ctx, k8s, `
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: `+name+`
  annotations:
`+indent(annotations, "    ")+`
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/`+pool+`: ""
  kubeletConfig:
    maxPods: `+maxPods)
}

// kubeletConfigStatus is the KubeletConfig's generation, observedGeneration and last
// condition.
func kubeletConfigStatus(g Gomega, name string) (int64, int64, conditionView) {
	kc := read(g, kubeletConfigGVK, name)
	observed, _, _ := unstructured.NestedInt64(kc.Object, "status", "observedGeneration")
	conditions, _, _ := unstructured.NestedSlice(kc.Object, "status", "conditions")
	var last conditionView
	if len(conditions) > 0 {
		c, _ := conditions[len(conditions)-1].(map[string]any)
		last = conditionView{Type: c["type"].(string), Status: c["status"].(string), Message: c["message"].(string)}
	}
	return kc.GetGeneration(), observed, last
}

// generatedKubeletFile is the path and content of the file of the pool's generated kubelet
// MachineConfig.
func generatedKubeletFile(g Gomega, pool string) (string, string) {
	mc := read(g, machineConfigGVK, "99-"+pool+"-generated-kubelet")
	g.Expect(mc.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", pool))
	files, _, _ := unstructured.NestedSlice(mc.Object, "spec", "config", "storage", "files")
	g.Expect(files).To(HaveLen(1))
	file, _ := files[0].(map[string]any)
	path, _, _ := unstructured.NestedString(file, "path")
	source, _, _ := unstructured.NestedString(file, "contents", "source")
	data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(source, "data:text/plain;charset=utf-8;base64,"))
	g.Expect(err).NotTo(HaveOccurred())
	return path, string(data)
}

var success = conditionView{Type: "Success", Status: "True", Message: "Success"}

var _ = Describe("KubeletConfigs", func() {
	It("replaces every annotation of a KubeletConfig it handles the first time with mc-name-suffix, generates 99-<pool>-generated-kubelet, reports Success and rolls it out", func() {
		sim := startSimulator()
		nodes := newPool(sim, "kubelet", 2, "")
		before := rolledOut("kubelet")
		kubeletConfig("max-pods", "kubelet", `
example.com/owner: team-a
kubectl.kubernetes.io/last-applied-configuration: "{}"`, "300")

		Eventually(func(g Gomega) {
			g.Expect(read(g, kubeletConfigGVK, "max-pods").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: ""}))
			generation, observed, last := kubeletConfigStatus(g, "max-pods")
			g.Expect(observed).To(Equal(generation))
			g.Expect(last).To(Equal(success))
			path, content := generatedKubeletFile(g, "kubelet")
			g.Expect(path).To(Equal("/etc/kubernetes/kubelet.conf"))
			g.Expect(content).To(ContainSubstring(`"maxPods":300`))
		}).Should(Succeed())

		rolledOut("kubelet", before)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "kubelet").Status.Configuration.sources()).To(ContainElement("99-kubelet-generated-kubelet"))
		}).Should(Succeed())
		Expect(reboots(sim, nodes)).To(Equal(map[string]int{"kubelet-0": 1, "kubelet-1": 1}), "a kubelet.conf change reboots")
	})

	It("keeps the annotations of a KubeletConfig that has mc-name-suffix, and rewrites the generated MachineConfig when its spec changes", func() {
		sim := startSimulator()
		newPool(sim, "suffixed", 1, "")
		rolledOut("suffixed")
		kubeletConfig("suffixed-max-pods", "suffixed", `
machineconfiguration.openshift.io/mc-name-suffix: ""
example.com/owner: team-a`, "300")
		kept := map[string]string{poolsim.MCNameSuffixAnnotation: "", "example.com/owner": "team-a"}
		Eventually(func(g Gomega) {
			_, _, last := kubeletConfigStatus(g, "suffixed-max-pods")
			g.Expect(last).To(Equal(success))
			g.Expect(read(g, kubeletConfigGVK, "suffixed-max-pods").GetAnnotations()).To(Equal(kept))
		}).Should(Succeed())

		Expect(k8s.Patch(ctx, object(kubeletConfigGVK, "suffixed-max-pods"), rawMergePatch(`{"spec":{"kubeletConfig":{"maxPods":250}}}`))).To(Succeed())
		Eventually(func(g Gomega) {
			generation, observed, last := kubeletConfigStatus(g, "suffixed-max-pods")
			g.Expect(generation).To(BeNumerically("==", 2))
			g.Expect(observed).To(Equal(generation))
			g.Expect(last).To(Equal(success))
			_, content := generatedKubeletFile(g, "suffixed")
			g.Expect(content).To(ContainSubstring(`"maxPods":250`))
			g.Expect(read(g, kubeletConfigGVK, "suffixed-max-pods").GetAnnotations()).To(Equal(kept))
		}).Should(Succeed())
	})

	It("reports Failure, status False, on a KubeletConfig that selects no pool, and leaves its annotations alone", func() {
		startSimulator()
		kubeletConfig("no-pool", "nonexistent", `example.com/owner: team-a`, "300")
		Eventually(func(g Gomega) {
			generation, observed, last := kubeletConfigStatus(g, "no-pool")
			g.Expect(observed).To(Equal(generation))
			g.Expect(last).To(Equal(conditionView{
				Type: "Failure", Status: "False", Message: "Error: could not find any MachineConfigPool set for KubeletConfig",
			}))
		}).Should(Succeed())
		Expect(read(Default, kubeletConfigGVK, "no-pool").GetAnnotations()).To(Equal(map[string]string{"example.com/owner": "team-a"}))
	})
})
