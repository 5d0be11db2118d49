package poolsim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Rolling out 6 workers at maxUnavailable 1", func() {
	It("reboots each worker exactly once, in 6 waves, for two MachineConfigs applied while the pool is paused", func() {
		sim := startSimulator()
		nodes := newPool(sim, "together", 6, "maxUnavailable: 1")
		before := rolledOut("together")
		setPaused("together", true)
		newMachineConfig("together", "50-together-psi", `kernelArguments: [psi=1]`)
		newMachineConfig("together", "51-together-hugepages", `kernelArguments: [hugepagesz=1G]`)
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "together").Spec.Configuration.sources()).To(
				Equal([]string{"00-together", "50-together-psi", "51-together-hugepages"}))
		}).Should(Succeed(), "the paused pool renders both")

		setPaused("together", false)
		target := rolledOut("together", before)
		Expect(reboots(sim, nodes)).To(Equal(map[string]int{
			"together-0": 1, "together-1": 1, "together-2": 1, "together-3": 1, "together-4": 1, "together-5": 1,
		}))
		Expect(sim.Waves("together")).To(Equal(6))
		rollouts := sim.Rollouts("together")
		Expect(rollouts).To(HaveLen(1))
		Expect(rollouts[0].Target).To(Equal(target))
		Expect(rollouts[0].Waves).To(HaveEach(HaveLen(1)), "one node at a time")
	})

	It("reboots each worker twice when the two MachineConfigs are applied one after the other, with a roll-out in between", func() {
		sim := startSimulator()
		nodes := newPool(sim, "apart", 6, "maxUnavailable: 1")
		first := rolledOut("apart")
		newMachineConfig("apart", "50-apart-psi", `kernelArguments: [psi=1]`)
		second := rolledOut("apart", first)
		newMachineConfig("apart", "51-apart-hugepages", `kernelArguments: [hugepagesz=1G]`)
		third := rolledOut("apart", first, second)

		Expect(reboots(sim, nodes)).To(Equal(map[string]int{
			"apart-0": 2, "apart-1": 2, "apart-2": 2, "apart-3": 2, "apart-4": 2, "apart-5": 2,
		}))
		rollouts := sim.Rollouts("apart")
		Expect(rollouts).To(HaveLen(2))
		Expect(rollouts[0].Target).To(Equal(second))
		Expect(rollouts[1].Target).To(Equal(third))
		Expect(rollouts[0].Waves).To(HaveLen(6))
		Expect(rollouts[1].Waves).To(HaveLen(6))
	})
})

var _ = Describe("maxUnavailable", func() {
	DescribeTable("rolls out ceil(nodes / maxUnavailable) waves, a percent of the pool's nodes rounded down and at least 1",
		func(maxUnavailable string, nodeCount int, waveSizes []int) {
			sim := startSimulator()
			nodes := newPool(sim, "spread", nodeCount, "maxUnavailable: "+maxUnavailable)
			before := rolledOut("spread")
			newMachineConfig("spread", "50-spread-psi", `kernelArguments: [psi=1]`)
			rolledOut("spread", before)

			Expect(sim.Waves("spread")).To(Equal(len(waveSizes)))
			var sizes []int
			for _, wave := range sim.Rollouts("spread")[0].Waves {
				sizes = append(sizes, len(wave))
			}
			Expect(sizes).To(Equal(waveSizes))
			for _, n := range nodes {
				Expect(sim.Reboots(n)).To(Equal(1), "node %s reboots once", n)
			}
		},
		Entry("40% of 5 nodes is 2: 3 waves", `"40%"`, 5, []int{2, 2, 1}),
		Entry("10% of 5 nodes rounds down to 0, which counts as 1: 5 waves", `"10%"`, 5, []int{1, 1, 1, 1, 1}),
		Entry("100% of 4 nodes: 1 wave", `"100%"`, 4, []int{4}),
		Entry("the integer 3 of 4 nodes: 2 waves", "3", 4, []int{3, 1}),
	)
})
