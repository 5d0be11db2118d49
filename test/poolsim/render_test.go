package poolsim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("Rendering a pool's MachineConfigs", func() {
	It("names the rendered configuration after its content: a changed MachineConfig renders a new name, the old content the old name", func() {
		sim := startSimulator()
		newPool(sim, "byname", 2, "")
		first := rolledOut("byname")

		newMachineConfig("byname", "50-byname-kargs", `kernelArguments: [psi=1]`)
		second := rolledOut("byname", first)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "byname").Spec.Configuration.sources()).To(Equal([]string{"00-byname", "50-byname-kargs"}))
			args, _, _ := unstructured.NestedStringSlice(read(g, machineConfigGVK, second).Object, "spec", "kernelArguments")
			g.Expect(args).To(Equal([]string{"psi=1"}))
		}).Should(Succeed())

		testenv.DeleteAndWait(ctx, k8s, object(machineConfigGVK, "50-byname-kargs"))
		Expect(rolledOut("byname", second)).To(Equal(first), "the content of the first render has its name")
	})

	It("renders a paused pool without rolling it out, and rolls it out once the pool is unpaused", func() {
		sim := startSimulator()
		nodes := newPool(sim, "paused", 2, "")
		before := rolledOut("paused")
		setPaused("paused", true)

		newMachineConfig("paused", "50-paused-kargs", `kernelArguments: [psi=1]`)
		var target string
		Eventually(func(g Gomega) {
			p := readPool(g, "paused")
			target = p.Spec.Configuration.Name
			g.Expect(target).NotTo(Equal(before))
			g.Expect(p.Spec.Configuration.sources()).To(ContainElement("50-paused-kargs"))
			g.Expect(p.condition("Updating")).To(Equal(conditionView{
				Type: "Updating", Status: "False", Message: "Pool is paused; will not update to MachineConfig " + target,
			}))
		}).Should(Succeed(), "the paused pool renders")
		Consistently(func(g Gomega) {
			g.Expect(desiredConfigs(g, nodes)).To(Equal(allSetTo(nodes, before)))
			g.Expect(readPool(g, "paused").Status.Configuration.Name).To(Equal(before))
		}).Should(Succeed(), "no node of the paused pool moves")

		setPaused("paused", false)
		Expect(rolledOut("paused", before)).To(Equal(target))
		Expect(reboots(sim, nodes)).To(Equal(map[string]int{"paused-0": 1, "paused-1": 1}))
	})

	It("reports RenderDegraded when the pool selects no MachineConfig", func() {
		startSimulator()
		create(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: empty
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: empty
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/empty: ""`)
		DeferCleanup(deletePool, "empty")
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "empty").condition("RenderDegraded")).To(Equal(conditionView{
				Type: "RenderDegraded", Status: "True",
				Message: "Failed to render configuration for pool empty: no MachineConfigs found matching selector " +
					"machineconfiguration.openshift.io/role=empty",
			}))
		}).Should(Succeed())
	})
})
