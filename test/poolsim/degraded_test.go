package poolsim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A degraded node", func() {
	It("makes its pool Degraded, naming the node and its reason, and holds the pool's roll-out until it is repaired", func() {
		sim := startSimulator()
		nodes := newPool(sim, "degraded", 3, "maxUnavailable: 1")
		before := rolledOut("degraded")

		Expect(sim.Degrade(ctx, "degraded-1", "error pulling the new OS image")).To(Succeed())
		message := `Node degraded-1 is reporting: "error pulling the new OS image"`
		Eventually(func(g Gomega) {
			p := readPool(g, "degraded")
			g.Expect(p.condition("Degraded")).To(Equal(conditionView{Type: "Degraded", Status: "True", Message: message}))
			g.Expect(p.condition("NodeDegraded")).To(Equal(conditionView{
				Type: "NodeDegraded", Status: "True", Reason: "1 nodes are reporting degraded status on sync", Message: message,
			}))
			g.Expect(p.condition("Updated").Status).To(Equal("False"))
			g.Expect(p.Status.DegradedMachineCount).To(Equal(1))
			g.Expect(p.Status.UnavailableMachineCount).To(Equal(1))
		}).Should(Succeed())

		newMachineConfig("degraded", "50-degraded-psi", `kernelArguments: [psi=1]`)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "degraded").Spec.Configuration.Name).NotTo(Equal(before))
		}).Should(Succeed(), "the pool renders")
		Consistently(func(g Gomega) {
			g.Expect(desiredConfigs(g, nodes)).To(Equal(allSetTo(nodes, before)))
		}).Should(Succeed(), "the degraded node takes the one node maxUnavailable allows")
		Expect(sim.Waves("degraded")).To(BeZero())

		Expect(sim.Repair(ctx, "degraded-1")).To(Succeed())
		rolledOut("degraded", before)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "degraded").condition("Degraded")).To(Equal(conditionView{Type: "Degraded", Status: "False"}))
		}).Should(Succeed())
		Expect(sim.Waves("degraded")).To(Equal(3))
		Expect(reboots(sim, nodes)).To(Equal(map[string]int{"degraded-0": 1, "degraded-1": 1, "degraded-2": 1}))
	})
})
