package poolsim_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

var _ = Describe("A simulator run in the background, and RolledOut", func() {
	It("logs to its file until stopped; RolledOut says why a pool has not rolled out until every node runs what its MachineConfigs render", func() {
		logPath := filepath.Join(GinkgoT().TempDir(), "poolsim.log")
		sim, stop, err := poolsim.RunLogged(ctx, cfg, poolsim.Options{RenderDelay: renderDelay, RebootTime: rebootTime}, logPath)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		newPool(sim, "judged", 2, "maxUnavailable: 1")
		first := rolledOut("judged")
		Expect(poolsim.RolledOut(ctx, k8s, "judged")).To(Succeed())
		Expect(stop()).To(Succeed(), "the simulator stops")
		Expect(stop()).To(Succeed(), "a second stop returns the same")
		log, err := os.ReadFile(logPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("MachineConfigPool judged: Updated, all 2 nodes run " + first))

		By("a MachineConfig the pool has not rendered, while no simulator runs")
		newMachineConfig("judged", "50-judged-psi", `kernelArguments: [psi=1]`)
		Expect(poolsim.RolledOut(ctx, k8s, "judged")).To(MatchError(
			"MachineConfigPool judged renders [00-judged], its MachineConfigs are [00-judged 50-judged-psi]"))
		Expect(poolsim.RolledOut(ctx, k8s, "absent")).To(MatchError("there is no MachineConfigPool absent"))

		By("the render, held on the nodes of a paused pool")
		setPaused("judged", true)
		startSimulator()
		Eventually(func(g Gomega) {
			g.Expect(readPool(g, "judged").Spec.Configuration.sources()).To(Equal([]string{"00-judged", "50-judged-psi"}))
		}).Should(Succeed())
		Eventually(func() error { return poolsim.RolledOut(ctx, k8s, "judged") }).Should(
			MatchError(ContainSubstring(`is rolling out "rendered-judged-`)))
		Consistently(func() error { return poolsim.RolledOut(ctx, k8s, "judged") }).ShouldNot(Succeed())

		By("the roll-out, once the pool is unpaused")
		setPaused("judged", false)
		rolledOut("judged", first)
	})
})
