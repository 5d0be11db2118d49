package poolsim_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

var (
	vmiGVK       = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}
	vmGVK        = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}
	migrationGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}
	kubeVirtGVK  = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "KubeVirt"}
)

// migrationTime is the simulator's live migration in the specs with VMs.
const migrationTime = 50 * time.Millisecond

// startVMSimulator runs a simulator that plays VMs until the spec ends.
func startVMSimulator() *poolsim.Simulator {
	GinkgoHelper()
	sim, stop, err := poolsim.Run(ctx, cfg, poolsim.Options{
		RenderDelay: renderDelay, RebootTime: rebootTime, Out: GinkgoWriter, VMs: true, MigrationTime: migrationTime,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(stop()).To(Succeed(), "the simulator stops") })
	return sim
}

// newVMNamespace creates the namespace with a KubeVirt CR whose cluster-wide eviction
// strategy is strategy; the KubeVirt CR and every VM object of the namespace are deleted
// when the spec ends (envtest runs no garbage collector).
func newVMNamespace(name, strategy string) {
	GinkgoHelper()
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	DeferCleanup(func() {
		for _, gvk := range []schema.GroupVersionKind{vmGVK, vmiGVK, migrationGVK, kubeVirtGVK} {
			Expect(k8s.DeleteAllOf(ctx, object(gvk, ""), client.InNamespace(name))).To(Succeed())
		}
	})
	create(fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata: {name: kubevirt, namespace: %s}
spec:
  configuration: {evictionStrategy: %s}`, name, strategy))
}

// forecastOf is what the VM forecast says a roll-out of the pool does to each VM of the
// namespace, read from the cluster as it is now.
func forecastOf(namespace, pool string, maxUnavailable int, clusterStrategy string) []vmforecast.VMForecast {
	GinkgoHelper()
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/" + pool})).To(Succeed())
	var order []vmforecast.Node
	labels := map[string]map[string]string{}
	for _, n := range nodes.Items {
		order = append(order, vmforecast.Node{Name: n.Name, Zone: n.Labels["topology.kubernetes.io/zone"], Created: n.CreationTimestamp.Time})
		labels[n.Name] = n.Labels
	}
	vmis := &unstructured.UnstructuredList{}
	vmis.SetGroupVersionKind(vmiGVK.GroupVersion().WithKind("VirtualMachineInstanceList"))
	Expect(k8s.List(ctx, vmis, client.InNamespace(namespace))).To(Succeed())
	var facts []vmforecast.VM
	for i := range vmis.Items {
		vm := object(vmGVK, vmis.Items[i].GetName())
		err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: vm.GetName()}, vm)
		if client.IgnoreNotFound(err) != nil {
			Expect(err).NotTo(HaveOccurred())
		}
		if err != nil {
			vm = nil
		}
		f, running, err := vmforecast.FromObjects(&vmis.Items[i], vm, labels)
		Expect(err).NotTo(HaveOccurred())
		if running {
			facts = append(facts, f)
		}
	}
	p := vmforecast.Pool{Name: pool, Nodes: vmforecast.UpdateOrder(order), MaxUnavailable: maxUnavailable}
	return vmforecast.ForecastVMs(p, facts, clusterStrategy)
}

// migrationObjects counts the VirtualMachineInstanceMigrations of the namespace.
func migrationObjects(namespace string) int {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(migrationGVK.GroupVersion().WithKind("VirtualMachineInstanceMigrationList"))
	Expect(k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return len(list.Items)
}

// vmsOnNodes gives every node room for 20 VMs of 2Gi and starts perNode VMs on it,
// vm-<node>-<i>, with the VirtualMachine run strategy Always; change adjusts each.
func vmsOnNodes(sim *poolsim.Simulator, namespace string, nodes []string, perNode int, change func(node string, i int, vm *poolsim.VMSpec)) {
	GinkgoHelper()
	for _, node := range nodes {
		Expect(sim.SetAllocatableMemory(ctx, node, "40Gi")).To(Succeed())
		for i := range perNode {
			spec := poolsim.VMSpec{Namespace: namespace, Name: fmt.Sprintf("vm-%s-%d", node, i), Node: node, RunStrategy: "Always"}
			if change != nil {
				change(node, i, &spec)
			}
			Expect(sim.CreateVM(ctx, spec)).To(Succeed())
		}
	}
}

var _ = Describe("Draining nodes with VMs", func() {
	It("migrates 6 workers × 10 VMs at maxUnavailable 1 70 times, the first wave's 10 twice and the other 50 once, as the VM forecast says", func() {
		newVMNamespace("six-by-ten", vmforecast.StrategyLiveMigrate)
		sim := startVMSimulator()
		nodes := newPool(sim, "sixvm", 6, "maxUnavailable: 1")
		before := rolledOut("sixvm")
		vmsOnNodes(sim, "six-by-ten", nodes, 10, nil)

		forecast := forecastOf("six-by-ten", "sixvm", 1, vmforecast.StrategyLiveMigrate)
		Expect(forecast).To(HaveLen(60))
		summary := vmforecast.Summarize(vmforecast.Pool{Name: "sixvm", Nodes: nodes, MaxUnavailable: 1}, forecast)
		Expect(vmforecast.Summary(summary)).To(Equal("60 VMs live-migrate (70 migrations)"))
		want := map[string]int{}
		for _, f := range forecast {
			want[f.VM.Key()] = f.Migrations
		}

		newMachineConfig("sixvm", "50-sixvm-psi", `kernelArguments: [psi=1]`)
		rolledOut("sixvm", before)

		got := sim.Migrations()
		Expect(got).To(Equal(want), "each VM migrates as often as forecast")
		times := map[int]int{}
		total := 0
		for _, n := range got {
			times[n]++
			total += n
		}
		Expect(total).To(Equal(70))
		Expect(times).To(Equal(map[int]int{2: 10, 1: 50}))
		for i := range 10 {
			Expect(got).To(HaveKeyWithValue(fmt.Sprintf("six-by-ten/vm-sixvm-0-%d", i), 2), "the first wave's VMs move twice")
		}
		Expect(migrationObjects("six-by-ten")).To(Equal(70), "one VirtualMachineInstanceMigration per migration")
		Expect(sim.Shutdowns()).To(BeEmpty())
		Expect(reboots(sim, nodes)).To(HaveEach(1))
	})

	It("stalls the drain on a VM that cannot migrate under LiveMigrate, with its node cordoned, until the VM is stopped", func() {
		newVMNamespace("stalled", vmforecast.StrategyLiveMigrate)
		sim := startVMSimulator()
		nodes := newPool(sim, "stallvm", 3, "maxUnavailable: 1")
		before := rolledOut("stallvm")
		vmsOnNodes(sim, "stalled", nodes, 2, func(node string, i int, vm *poolsim.VMSpec) {
			if node == "stallvm-0" && i == 0 {
				vm.Name, vm.NotMigratable = "pg-0", true
			}
		})
		forecast := forecastOf("stalled", "stallvm", 1, vmforecast.StrategyLiveMigrate)
		summary := vmforecast.Summarize(vmforecast.Pool{Name: "stallvm", Nodes: nodes, MaxUnavailable: 1}, forecast)
		Expect(vmforecast.Summary(summary)).To(Equal("5 VMs live-migrate (6 migrations), 1 blocks the drain (stalled/pg-0)"))

		newMachineConfig("stallvm", "50-stallvm-psi", `kernelArguments: [psi=1]`)
		Eventually(func(g Gomega) {
			g.Expect(sim.BlockingDrain("stallvm-0")).To(Equal([]string{"stalled/pg-0"}))
			node := &corev1.Node{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Name: "stallvm-0"}, node)).To(Succeed())
			g.Expect(node.Spec.Unschedulable).To(BeTrue(), "cordoned")
			g.Expect(sim.Migrations()).To(HaveKeyWithValue("stalled/vm-stallvm-0-1", 1), "the migratable VM left")
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(sim.Reboots("stallvm-0")).To(Equal(0), "no reboot while the drain is blocked")
			g.Expect(desiredConfigs(g, nodes[1:])).To(Equal(allSetTo(nodes[1:], before)), "the pool stalls")
			g.Expect(sim.BlockingDrain("stallvm-0")).To(Equal([]string{"stalled/pg-0"}))
		}).Should(Succeed())

		By("stopping the VM")
		Expect(k8s.Patch(ctx, namespaced(vmGVK, "stalled", "pg-0"), rawMergePatch(`{"spec":{"runStrategy":"Halted"}}`))).To(Succeed())
		rolledOut("stallvm", before)
		Expect(sim.BlockingDrain("stallvm-0")).To(BeEmpty())
		Expect(reboots(sim, nodes)).To(HaveEach(1))
		Expect(sim.Shutdowns()).To(BeEmpty(), "stopped by its owner, not shut down by the drain")
	})
})

func namespaced(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := object(gvk, name)
	u.SetNamespace(namespace)
	return u
}
