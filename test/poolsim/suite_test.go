package poolsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

func TestPoolSimulator(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "MachineConfigPool simulator")
}

var (
	ctx = context.Background()
	cfg *rest.Config
	k8s client.Client
)

var (
	poolGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	machineConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	kubeletConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"}
)

// The simulator's delays in the specs: short, and a reboot long enough that a wave's
// nodes are seen rebooting together.
const (
	renderDelay = 200 * time.Millisecond
	rebootTime  = 300 * time.Millisecond
)

// One control plane for the suite: the base test CRDs (MachineConfig, MachineConfigPool),
// the KubeVirt test CRDs and the upstream KubeletConfig CRD.
var _ = BeforeSuite(func() {
	// The simulator's informers log through controller-runtime: into the spec's output.
	ctrllog.SetLogger(GinkgoLogr)
	env, err := testenv.New(testenv.BaseCRDs, testenv.KubeVirtCRDs)
	Expect(err).NotTo(HaveOccurred())
	crd, err := testenv.ReadCRD(filepath.Join(testenv.UpstreamCRDs(), "machineconfiguration.openshift.io", "kubeletconfigs.yaml"))
	Expect(err).NotTo(HaveOccurred())
	env.CRDs = append(env.CRDs, crd)
	cfg, err = env.Start()
	Expect(err).NotTo(HaveOccurred(), "start the control plane")
	DeferCleanup(env.Stop)
	k8s, err = client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(5 * rebootTime)
	SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
})

// startSimulator runs a simulator until the spec ends.
func startSimulator() *poolsim.Simulator {
	GinkgoHelper()
	sim, stop, err := poolsim.Run(ctx, cfg, poolsim.Options{RenderDelay: renderDelay, RebootTime: rebootTime, Out: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(stop()).To(Succeed(), "the simulator stops") })
	return sim
}

// newPool creates the MachineConfigPool name, which selects the MachineConfigs of role
// name and the Nodes labelled node-role.kubernetes.io/<name>, with extra spec fields (YAML),
// its base MachineConfig 00-<name> and its Nodes; all of them, and the pool's rendered
// MachineConfigs, are deleted when the spec ends. It returns the Nodes' names.
func newPool(sim *poolsim.Simulator, name string, nodes int, extraSpec string) []string {
	GinkgoHelper()
	createPool(name, extraSpec)
	newMachineConfig(name, "00-"+name, `config: {ignition: {version: 3.2.0}}`)
	names, err := sim.CreateNodes(ctx, name, nodes)
	Expect(err).NotTo(HaveOccurred())
	return names
}

// createPool creates the MachineConfigPool name as newPool does, without MachineConfigs or
// Nodes, so that it has no rendered configuration until a MachineConfig of its role exists.
func createPool(name, extraSpec string) {
	GinkgoHelper()
	DeferCleanup(deletePool, name)
	create(fmt.Sprintf(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: %[1]s
  labels:
    pools.operator.machineconfiguration.openshift.io/%[1]s: ""
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: %[1]s
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/%[1]s: ""
%[2]s`, name, indent(extraSpec, "  ")))
}

func deletePool(name string) {
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, object(poolGVK, name)))).To(Succeed())
	Expect(k8s.DeleteAllOf(ctx, &corev1.Node{}, client.HasLabels{"node-role.kubernetes.io/" + name})).To(Succeed())
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(machineConfigGVK.GroupVersion().WithKind("MachineConfigList"))
	Expect(k8s.List(ctx, list)).To(Succeed())
	for i := range list.Items {
		mc := &list.Items[i]
		if mc.GetLabels()["machineconfiguration.openshift.io/role"] == name || strings.HasPrefix(mc.GetName(), "rendered-"+name+"-") {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, mc))).To(Succeed())
		}
	}
}

// newMachineConfig creates the MachineConfig of role pool with spec (YAML).
func newMachineConfig(pool, name, spec string) {
	GinkgoHelper()
	create(fmt.Sprintf(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: %s
  labels:
    machineconfiguration.openshift.io/role: %s
spec:
%s`, name, pool, indent(spec, "  ")))
}

func create(doc string) *unstructured.Unstructured {
	GinkgoHelper()
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	Expect(k8s.Create(ctx, obj)).To(Succeed(), "create %s %s", obj.GetKind(), obj.GetName())
	return obj
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

func object(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	return u
}

// read returns the live object of the kind.
func read(g Gomega, gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := object(gvk, name)
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, u)).To(Succeed())
	return u
}

// poolView is what the specs check of a MachineConfigPool.
type poolView struct {
	Spec struct {
		Configuration configurationView `json:"configuration"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration      int64             `json:"observedGeneration"`
		Configuration           configurationView `json:"configuration"`
		MachineCount            int               `json:"machineCount"`
		UpdatedMachineCount     int               `json:"updatedMachineCount"`
		ReadyMachineCount       int               `json:"readyMachineCount"`
		UnavailableMachineCount int               `json:"unavailableMachineCount"`
		DegradedMachineCount    int               `json:"degradedMachineCount"`
		Conditions              []conditionView   `json:"conditions"`
	} `json:"status"`
}

type configurationView struct {
	Name   string `json:"name"`
	Source []struct {
		Name string `json:"name"`
	} `json:"source"`
}

// sources are the names of the MachineConfigs a configuration was rendered from.
func (c configurationView) sources() []string {
	var out []string
	for _, s := range c.Source {
		out = append(out, s.Name)
	}
	return out
}

type conditionView struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (p poolView) condition(condType string) conditionView {
	for _, c := range p.Status.Conditions {
		if c.Type == condType {
			return c
		}
	}
	return conditionView{}
}

func readPool(g Gomega, name string) poolView {
	var view poolView
	data, err := json.Marshal(read(g, poolGVK, name).Object)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(data, &view)).To(Succeed())
	return view
}

// rolledOut waits until the pool has rolled out a rendered configuration other than
// those of not, to every node, and returns it.
func rolledOut(name string, not ...string) string {
	GinkgoHelper()
	var target string
	Eventually(func(g Gomega) {
		target = readPool(g, name).Spec.Configuration.Name
		g.Expect(target).To(HavePrefix("rendered-"+name+"-"), "rendered")
		g.Expect(not).NotTo(ContainElement(target), "rendered anew")
		g.Expect(poolsim.RolledOut(ctx, k8s, name)).To(Succeed())
		g.Expect(readPool(g, name).Spec.Configuration.Name).To(Equal(target), "rendered nothing since")
	}).Should(Succeed(), "MachineConfigPool %s rolls out", name)
	return target
}

// setPaused pauses or unpauses the pool.
func setPaused(name string, paused bool) {
	GinkgoHelper()
	Expect(k8s.Patch(ctx, object(poolGVK, name), rawMergePatch(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused)))).To(Succeed())
}

// desiredConfigs are the nodes' desiredConfig annotations, by name.
func desiredConfigs(g Gomega, nodes []string) map[string]string {
	out := map[string]string{}
	for _, name := range nodes {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, n)).To(Succeed())
		out[name] = n.Annotations[poolsim.DesiredConfigAnnotation]
	}
	return out
}

// allSetTo is a map of each node to value.
func allSetTo(nodes []string, value string) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		out[n] = value
	}
	return out
}

// reboots are the nodes' reboot counts, by name.
func reboots(sim *poolsim.Simulator, nodes []string) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n] = sim.Reboots(n)
	}
	return out
}

func rawMergePatch(patch string) client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(patch))
}
