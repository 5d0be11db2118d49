package poolsim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// machinesOf are the pool's machine counts: in all, updated, and ready.
func machinesOf(p poolView) []int {
	return []int{p.Status.MachineCount, p.Status.UpdatedMachineCount, p.Status.ReadyMachineCount}
}

var _ = Describe("A roll-out in one go", func() {
	It("renders what the pool selects, KubeletConfigs included, at once, and reports it Updated on the machines asked for without Nodes; DegradeOnce reports one of them Degraded", func() {
		// A render delay no one-shot roll-out waits for; the simulator is not started.
		sim, err := poolsim.New(cfg, poolsim.Options{RenderDelay: time.Hour, Out: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		createPool("once", "")
		newMachineConfig("once", "00-once", `config: {ignition: {version: 3.2.0}}`)
		kubeletConfig("max-pods", "once", "example.com/owner: team-a", "300")

		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		p := readPool(Default, "once")
		first := p.Spec.Configuration.Name
		Expect(first).To(HavePrefix("rendered-once-"))
		Expect(p.Spec.Configuration.sources()).To(Equal([]string{"00-once", "99-once-generated-kubelet"}))
		Expect(p.Status.Configuration).To(Equal(p.Spec.Configuration))
		Expect(p.condition("Updated")).To(Equal(conditionView{
			Type: "Updated", Status: "True", Message: "All nodes are updated with MachineConfig " + first,
		}))
		Expect(p.condition("Updating").Status).To(Equal("False"))
		Expect(p.condition("Degraded").Status).To(Equal("False"))
		Expect(machinesOf(p)).To(Equal([]int{3, 3, 3}))
		Expect(p.Status.ObservedGeneration).To(Equal(read(Default, poolGVK, "once").GetGeneration()))
		Expect(read(Default, kubeletConfigGVK, "max-pods").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: ""}))
		succeeded(Default, "max-pods")
		nodes := &corev1.NodeList{}
		Expect(k8s.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/once"})).To(Succeed())
		Expect(nodes.Items).To(BeEmpty(), "no Node is created")
		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		Expect(readPool(Default, "once")).To(Equal(p), "a roll-out with nothing new changes nothing")

		By("a second KubeletConfig: its MachineConfig, with suffix 1, joins the render")
		kubeletConfig("max-pods-2", "once", "", "400")
		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		p = readPool(Default, "once")
		Expect(p.Spec.Configuration.sources()).To(Equal([]string{"00-once", "99-once-generated-kubelet", "99-once-generated-kubelet-1"}))
		Expect(p.Status.Configuration).To(Equal(p.Spec.Configuration))
		Expect(read(Default, kubeletConfigGVK, "max-pods-2").GetAnnotations()).To(Equal(map[string]string{poolsim.MCNameSuffixAnnotation: "1"}))
		succeeded(Default, "max-pods-2")

		By("the first KubeletConfig deleted: it goes, with its MachineConfig, out of the render")
		Expect(k8s.Delete(ctx, object(kubeletConfigGVK, "max-pods"))).To(Succeed())
		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: "max-pods"}, object(kubeletConfigGVK, "max-pods")))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: "99-once-generated-kubelet"},
			object(machineConfigGVK, "99-once-generated-kubelet")))).To(BeTrue())
		p = readPool(Default, "once")
		Expect(p.Spec.Configuration.sources()).To(Equal([]string{"00-once", "99-once-generated-kubelet-1"}))
		Expect(p.Status.Configuration).To(Equal(p.Spec.Configuration))
		rolled := p.Spec.Configuration.Name

		By("a MachineConfig not rolled out yet, on which one machine fails")
		newMachineConfig("once", "50-once-psi", `kernelArguments: [psi=1]`)
		Expect(sim.DegradeOnce(ctx, "once", 3, "error pulling the new OS image")).To(Succeed())
		message := `Node once-0 is reporting: "error pulling the new OS image"`
		p = readPool(Default, "once")
		Expect(p.condition("Degraded")).To(Equal(conditionView{Type: "Degraded", Status: "True", Message: message}))
		Expect(p.condition("NodeDegraded")).To(Equal(conditionView{
			Type: "NodeDegraded", Status: "True", Reason: "1 nodes are reporting degraded status on sync", Message: message,
		}))
		Expect(p.condition("Updated").Status).To(Equal("False"))
		Expect(p.Status.DegradedMachineCount).To(Equal(1))
		Expect(p.Spec.Configuration.Name).To(Equal(rolled), "DegradeOnce renders nothing")
		Expect(p.Status.Configuration.Name).To(Equal(rolled))

		By("the roll-out, once the machine is repaired")
		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		p = readPool(Default, "once")
		Expect(p.Spec.Configuration.sources()).To(Equal([]string{"00-once", "50-once-psi", "99-once-generated-kubelet-1"}))
		Expect(p.Status.Configuration).To(Equal(p.Spec.Configuration))
		Expect(p.condition("Updated").Status).To(Equal("True"))
		Expect(p.condition("Degraded")).To(Equal(conditionView{Type: "Degraded", Status: "False"}))
		Expect(p.Status.DegradedMachineCount).To(BeZero())
		Expect(machinesOf(p)).To(Equal([]int{3, 3, 3}))

		By("the last KubeletConfig deleted, which only a pass of the simulator lets go")
		Expect(k8s.Delete(ctx, object(kubeletConfigGVK, "max-pods-2"))).To(Succeed())
		Expect(sim.RollOutOnce(ctx, "once", 3)).To(Succeed())
		Expect(readPool(Default, "once").Spec.Configuration.sources()).To(Equal([]string{"00-once", "50-once-psi"}))

		By("a pool that does not exist, or has nothing to render")
		Expect(sim.RollOutOnce(ctx, "absent", 3)).To(MatchError("there is no MachineConfigPool absent"))
		createPool("empty", "")
		Expect(sim.RollOutOnce(ctx, "empty", 3)).To(MatchError(HavePrefix(
			"MachineConfigPool empty is RenderDegraded: Failed to render configuration for pool empty: no MachineConfigs found matching selector")))
		Expect(sim.DegradeOnce(ctx, "empty", 3, "unreachable")).To(MatchError(
			"MachineConfigPool empty has rendered no configuration its nodes could fail to apply"))
	})
})
