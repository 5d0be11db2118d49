package poolsim_test

import (
	"encoding/base64"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// kubeletConfig creates a KubeletConfig with annotations (YAML) that selects the pool by
// its pools.operator.machineconfiguration.openshift.io/<pool> label and sets maxPods. When
// the spec ends it is deleted and awaited: the simulator, still running, removes the
// finalizers it gave it.
func kubeletConfig(name, pool, annotations, maxPods string) *unstructured.Unstructured {
	GinkgoHelper()
	kc := create(`
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: ` + name + `
  annotations:
` + indent(annotations, "    ") + `
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/` + pool + `: ""
  kubeletConfig:
    maxPods: ` + maxPods)
	DeferCleanup(testenv.DeleteAndWait, ctx, k8s, object(kubeletConfigGVK, name))
	return kc
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

// succeeded asserts that the KubeletConfig reports Success for its generation.
func succeeded(g Gomega, name string) {
	generation, observed, last := kubeletConfigStatus(g, name)
	g.Expect(observed).To(Equal(generation), "KubeletConfig %s observed", name)
	g.Expect(last).To(Equal(success), "KubeletConfig %s", name)
}

// generatedKubeletFile is the path and content of the file of the generated kubelet
// MachineConfig name, which must be labelled with the pool's role.
func generatedKubeletFile(g Gomega, name, pool string) (string, string) {
	mc := read(g, machineConfigGVK, name)
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

// generatedFrom asserts that the MachineConfig name was generated from the KubeletConfig
// kc: kc is its only owner, and its controller, and kc's finalizers name it.
func generatedFrom(g Gomega, name string, kc *unstructured.Unstructured) {
	mc := read(g, machineConfigGVK, name)
	g.Expect(mc.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{{
		APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: kc.GetName(), UID: kc.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}), "the owners of MachineConfig %s", name)
	g.Expect(read(g, kubeletConfigGVK, kc.GetName()).GetFinalizers()).To(ContainElement(name),
		"the finalizers of KubeletConfig %s", kc.GetName())
}

var success = conditionView{Type: "Success", Status: "True", Message: "Success"}

var _ = Describe("KubeletConfigs", func() {
	It("replaces every annotation of a KubeletConfig it handles the first time with mc-name-suffix, generates 99-<pool>-generated-kubelet controlled by it, reports Success and rolls it out", func() {
		sim := startSimulator()
		nodes := newPool(sim, "kubelet", 2, "")
		before := rolledOut("kubelet")
		kc := kubeletConfig("max-pods", "kubelet", `
example.com/owner: team-a
kubectl.kubernetes.io/last-applied-configuration: "{}"`, "300")

		Eventually(func(g Gomega) {
			g.Expect(read(g, kubeletConfigGVK, "max-pods").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: ""}))
			succeeded(g, "max-pods")
			path, content := generatedKubeletFile(g, "99-kubelet-generated-kubelet", "kubelet")
			g.Expect(path).To(Equal("/etc/kubernetes/kubelet.conf"))
			g.Expect(content).To(ContainSubstring(`"maxPods":300`))
		}).Should(Succeed())
		generatedFrom(Default, "99-kubelet-generated-kubelet", kc)
		Expect(read(Default, kubeletConfigGVK, "max-pods").GetFinalizers()).To(Equal([]string{"99-kubelet-generated-kubelet"}))

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
			succeeded(g, "suffixed-max-pods")
			g.Expect(read(g, kubeletConfigGVK, "suffixed-max-pods").GetAnnotations()).To(Equal(kept))
		}).Should(Succeed())

		Expect(k8s.Patch(ctx, object(kubeletConfigGVK, "suffixed-max-pods"), rawMergePatch(`{"spec":{"kubeletConfig":{"maxPods":250}}}`))).To(Succeed())
		Eventually(func(g Gomega) {
			generation, _, _ := kubeletConfigStatus(g, "suffixed-max-pods")
			g.Expect(generation).To(BeNumerically("==", 2))
			succeeded(g, "suffixed-max-pods")
			_, content := generatedKubeletFile(g, "99-suffixed-generated-kubelet", "suffixed")
			g.Expect(content).To(ContainSubstring(`"maxPods":250`))
			g.Expect(read(g, kubeletConfigGVK, "suffixed-max-pods").GetAnnotations()).To(Equal(kept))
		}).Should(Succeed())
	})

	It("generates a MachineConfig per KubeletConfig on one pool: 99-<pool>-generated-kubelet for the first, 99-<pool>-generated-kubelet-1 for the second, each controlled by its KubeletConfig, and renders both", func() {
		sim := startSimulator()
		newPool(sim, "two", 1, "")
		before := rolledOut("two")
		first := kubeletConfig("two-max-pods", "two", "", "300")
		Eventually(func(g Gomega) { succeeded(g, "two-max-pods") }).Should(Succeed())
		second := kubeletConfig("two-more-pods", "two", "", "400")

		Eventually(func(g Gomega) {
			succeeded(g, "two-more-pods")
			g.Expect(read(g, kubeletConfigGVK, "two-more-pods").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: "1"}))
			_, content := generatedKubeletFile(g, "99-two-generated-kubelet-1", "two")
			g.Expect(content).To(ContainSubstring(`"maxPods":400`))
		}).Should(Succeed())
		_, content := generatedKubeletFile(Default, "99-two-generated-kubelet", "two")
		Expect(content).To(ContainSubstring(`"maxPods":300`), "the first KubeletConfig's MachineConfig is its own")
		Expect(read(Default, kubeletConfigGVK, "two-max-pods").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: ""}))
		generatedFrom(Default, "99-two-generated-kubelet", first)
		generatedFrom(Default, "99-two-generated-kubelet-1", second)

		rolledOut("two", before)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "two").Status.Configuration.sources()).To(
				Equal([]string{"00-two", "99-two-generated-kubelet", "99-two-generated-kubelet-1"}))
		}).Should(Succeed())
	})

	It("names the MachineConfigs of two KubeletConfigs it first handles together -1 and -2, oldest first, as neither is the only one", func() {
		startSimulator()
		// The pool has no rendered configuration until its first MachineConfig exists: both
		// KubeletConfigs wait for it.
		createPool("together-kc", "")
		kubeletConfig("together-kc-a", "together-kc", "", "300")
		kubeletConfig("together-kc-b", "together-kc", "", "400")
		newMachineConfig("together-kc", "00-together-kc", `config: {ignition: {version: 3.2.0}}`)

		Eventually(func(g Gomega) {
			succeeded(g, "together-kc-a")
			succeeded(g, "together-kc-b")
			g.Expect(read(g, kubeletConfigGVK, "together-kc-a").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: "1"}))
			g.Expect(read(g, kubeletConfigGVK, "together-kc-b").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: "2"}))
			_, content := generatedKubeletFile(g, "99-together-kc-generated-kubelet-1", "together-kc")
			g.Expect(content).To(ContainSubstring(`"maxPods":300`))
			_, content = generatedKubeletFile(g, "99-together-kc-generated-kubelet-2", "together-kc")
			g.Expect(content).To(ContainSubstring(`"maxPods":400`))
		}).Should(Succeed())
	})

	It("deletes the MachineConfig of a KubeletConfig being deleted, removes its finalizer so that it goes, and the pool renders and rolls out without it", func() {
		sim := startSimulator()
		nodes := newPool(sim, "dropped", 2, "")
		before := rolledOut("dropped")
		kubeletConfig("dropped-max-pods", "dropped", "", "300")
		Eventually(func(g Gomega) { succeeded(g, "dropped-max-pods") }).Should(Succeed())
		withKubeletConfig := rolledOut("dropped", before)
		Expect(readPool(Default, "dropped").Status.Configuration.sources()).To(Equal([]string{"00-dropped", "99-dropped-generated-kubelet"}))

		Expect(k8s.Delete(ctx, object(kubeletConfigGVK, "dropped-max-pods"))).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Name: "dropped-max-pods"}, object(kubeletConfigGVK, "dropped-max-pods"))
		}).Should(Satisfy(apierrors.IsNotFound), "the KubeletConfig goes")
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Name: "99-dropped-generated-kubelet"}, object(machineConfigGVK, "99-dropped-generated-kubelet"))
		}).Should(Satisfy(apierrors.IsNotFound), "its MachineConfig goes with it")

		Expect(rolledOut("dropped", withKubeletConfig)).To(Equal(before), "the pool's content is what it was before the KubeletConfig")
		Expect(readPool(Default, "dropped").Status.Configuration.sources()).To(Equal([]string{"00-dropped"}))
		Expect(reboots(sim, nodes)).To(Equal(map[string]int{"dropped-0": 2, "dropped-1": 2}))
	})

	It("reports Failure, status False, on a KubeletConfig that selects no pool, and leaves its annotations and finalizers alone", func() {
		startSimulator()
		kubeletConfig("no-pool", "nonexistent", `example.com/owner: team-a`, "300")
		Eventually(func(g Gomega) {
			generation, observed, last := kubeletConfigStatus(g, "no-pool")
			g.Expect(observed).To(Equal(generation))
			g.Expect(last).To(Equal(conditionView{
				Type: "Failure", Status: "False", Message: "Error: could not find any MachineConfigPool set for KubeletConfig",
			}))
		}).Should(Succeed())
		kc := read(Default, kubeletConfigGVK, "no-pool")
		Expect(kc.GetAnnotations()).To(Equal(map[string]string{"example.com/owner": "team-a"}))
		Expect(kc.GetFinalizers()).To(BeEmpty())
	})
})
