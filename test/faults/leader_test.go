package faults

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

var _ = Describe("Two managers with leader election", func() {
	BeforeEach(resetCluster)

	It("the standby takes over from a leader killed mid-execution and finishes the plan without applying an item twice", func() {
		const ns = "faults-leader"
		createNamespace(ns)
		users := map[*manager]string{}
		a := startManager("a", userKubeconfig("faults-leader-a"), managerOptions{namespace: ns, shortLease: true})
		users[a] = "faults-leader-a"
		b := startManager("b", userKubeconfig("faults-leader-b"), managerOptions{namespace: ns, shortLease: true})
		users[b] = "faults-leader-b"

		var leader, standby *manager
		Eventually(func() []*manager {
			var leading []*manager
			for _, m := range []*manager{a, b} {
				if m.leads() {
					leading = append(leading, m)
				}
			}
			return leading
		}).Should(HaveLen(1))
		leader, standby = a, b
		if b.leads() {
			leader, standby = b, a
		}
		By(fmt.Sprintf("manager %s leads, manager %s waits", leader.name, standby.name))
		mark := audit.mark()

		createConfig(advisorv1alpha1.ActionDryRun, nil)
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
		approve()
		waitingForPool(time.Minute)

		By("killing the leader with SIGKILL while the MachineConfig item waits for its pool, then rolling the pool out")
		leader.kill()
		killed := time.Now()
		Expect(standby.leads()).To(BeFalse(), "the lease of the killed leader has not expired yet")
		rolloutPool()
		// With the default 15s lease the standby could not lead before 15s.
		Eventually(standby.leads).WithTimeout(3*shortLeaseDuration).Should(BeTrue(),
			"the standby did not take over within three --leader-elect-lease-duration")
		By(fmt.Sprintf("manager %s took the lease over %s after the kill", standby.name, time.Since(killed).Round(100*time.Millisecond)))
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted, time.Minute)
		expectCompletedAsPlanned(vpc)

		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(1), "the KubeDescheduler was applied twice")
		Expect(counts[psiTarget].applied).To(Equal(1), "the MachineConfig was applied twice")
		standbyWrites := 0
		for _, e := range audit.since(mark) {
			wrote := e.isApply() || e.isStatusWrite(configName)
			if e.User.Username != users[standby] || !wrote {
				continue
			}
			Expect(e.Received).To(BeTemporally(">", killed), "the standby wrote while the leader was alive: %s %s", e.Verb, e.RequestURI)
			Expect(e.isApply()).To(BeFalse(), "the new leader applied an item the killed leader had applied: %s", e.RequestURI)
			standbyWrites++
		}
		Expect(standbyWrites).To(BeNumerically(">", 0), "the new leader finished the plan")
		By(fmt.Sprintf("status writes by the new leader: %d", standbyWrites))
		leader.reportProcesses(1)
		standby.reportProcesses(1)
	})
})
