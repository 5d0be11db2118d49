package faults

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("A manager killed with SIGKILL between an item's apply and its status write", func() {
	BeforeEach(resetCluster)

	It("does not apply that item a second time on restart, records it as applied, and skips no later item", func() {
		const ns = "faults-crash"
		createNamespace(ns)
		m := startManager("crash", userKubeconfig("faults-crash-manager"), managerOptions{namespace: ns, shortLease: true})

		createConfig(advisorv1alpha1.ActionDryRun, map[string]string{holdLabel: "true"})
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
		holdStatusOnceApplied(loadaware.ItemDescheduler)
		mark := audit.mark()

		By("approving: the KubeDescheduler is applied, the status write that records it is refused")
		approve()
		waitAppliedNotRecorded(mark, deschedulerTarget)
		By("killing the manager with SIGKILL")
		m.kill()
		vpc := getConfig()
		Expect(testenv.Item(vpc, loadaware.ItemDescheduler).Applied).To(BeNil(), "the status does not know about the apply")
		Expect(testenv.Item(vpc, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(deschedulerProfiles()).To(Equal(appliedProfiles), "the apply went through")
		Expect(testenv.Read(ctx, k8s, mcGVK, psiKey)).To(BeNil())

		By("lifting the hold and starting the manager again (it waits for the dead leader's lease to expire)")
		releaseHold()
		restarted := audit.mark()
		m.restart()
		waitingForPool(90 * time.Second)
		rolloutPool()
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted, time.Minute)
		expectCompletedAsPlanned(vpc)
		m.reportProcesses(2)

		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(1), "item 1 was applied a second time")
		Expect(appliesOf(restarted, deschedulerTarget)).To(BeEmpty(), "the restarted manager applied item 1 again")
		Expect(counts[psiTarget].applied).To(Equal(1), "item 2 was not applied exactly once")
		Expect(appliesOf(restarted, psiTarget)).To(HaveLen(1), "item 2 is applied by the restarted manager")
		Expect(eventReasons()).To(ContainElement(advisorv1alpha1.EventItemAlreadyApplied))
		Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale))
	})
})

// waitAppliedNotRecorded waits until the audit log shows, after mark, an accepted apply of
// target followed by a refused status write of the config and no accepted one.
func waitAppliedNotRecorded(mark auditMark, target string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		events := audit.since(mark)
		applied := -1
		for i, e := range events {
			if e.isApply() && e.ok() && e.target() == target {
				applied = i
				break
			}
		}
		g.Expect(applied).To(BeNumerically(">=", 0), "no apply of %s yet", target)
		refused := 0
		for _, e := range events[applied+1:] {
			if e.isStatusWrite(configName) {
				g.Expect(e.ok()).To(BeFalse(), "a status write after the apply of %s went through", target)
				refused++
			}
		}
		g.Expect(refused).To(BeNumerically(">", 0), "no status write after the apply of %s yet", target)
	}).Should(Succeed())
}
