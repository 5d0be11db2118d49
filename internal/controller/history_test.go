package controller_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

var _ = Describe("The history of executions", func() {
	BeforeEach(resetCluster)

	It("status.history lists the last executions, newest first, with their approvals and what they did; it survives a restart and keeps at most 10", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		running := getConfig()
		Expect(running.Status.History).To(HaveLen(1))
		Expect(running.Status.History[0].FinishedAt).To(BeNil())
		Expect(running.Status.History[0].Outcome).To(BeEmpty())
		rolloutPool()
		first := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(first.Status.History).To(HaveLen(1))
		e := first.Status.History[0]
		Expect(e.PlanHash).To(Equal(first.Status.PlanHash))
		Expect(e.Profile).To(Equal(advisorv1alpha1.ProfileLoadAwareRebalancing))
		Expect(e.RequestedBy).To(Equal(first.Status.Approval.RequestedBy))
		Expect(e.ApprovedBy).To(Equal(first.Status.Approval.ApprovedBy))
		Expect(e.Via).To(Equal(first.Status.Approval.Via))
		Expect(e.ApprovedAt).To(Equal(first.Status.Approval.ApprovedAt))
		Expect(e.StartedAt).NotTo(BeNil())
		Expect(e.FinishedAt.Time).NotTo(BeTemporally("<", e.StartedAt.Time))
		Expect(e.Outcome).To(Equal(advisorv1alpha1.PhaseCompleted))
		Expect(e.Reboots).To(BeEquivalentTo(workerMachines), "the worker pool's nodes rebooted for the PSI kernel argument")
		Expect(e.VMMigrations).To(BeNil(), "no KubeVirt: what the rollout did to VMs is not counted")

		hashes := []string{first.Status.PlanHash}
		execute := func(interval int) {
			GinkgoHelper()
			patchSpec(fmt.Sprintf(`{"options":{"loadAware":{"deschedulingIntervalSeconds":%d}}}`, interval))
			Eventually(deschedulerInterval).Should(BeEquivalentTo(interval))
			vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
			hashes = append([]string{vpc.Status.PlanHash}, hashes...)
		}
		for k := 1; k <= 5; k++ {
			execute(60 + k)
		}
		restartManager()
		vpc := getConfig()
		Expect(vpc.Status.History).To(HaveLen(6))
		for k := 6; k <= 11; k++ {
			execute(60 + k)
		}
		vpc = getConfig()
		Expect(vpc.Status.History).To(HaveLen(advisorv1alpha1.MaxHistory), "the oldest executions give way")
		for k, e := range vpc.Status.History {
			Expect(e.PlanHash).To(Equal(hashes[k]), "entry %d", k)
			Expect(e.Outcome).To(Equal(advisorv1alpha1.PhaseCompleted), "entry %d", k)
			Expect(e.Reboots).To(BeZero(), "entry %d: only the descheduler changed", k)
			Expect(e.ApprovedAt).NotTo(BeNil(), "entry %d", k)
			if k > 0 {
				Expect(e.StartedAt.Time).NotTo(BeTemporally(">", vpc.Status.History[k-1].StartedAt.Time), "newest first")
			}
		}
	})

	It("an execution that fails is completed with its outcome; one paused by a withdrawn approval ends in ReviewRequired and its resume is an execution of its own", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		patchSpec(`{"action":"DryRun"}`)
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).
			Should(Equal(advisorv1alpha1.ReasonPaused))
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() []advisorv1alpha1.Phase {
			var out []advisorv1alpha1.Phase
			for _, e := range getConfig().Status.History {
				out = append(out, e.Outcome)
			}
			return out
		}).Should(Equal([]advisorv1alpha1.Phase{"", advisorv1alpha1.PhaseReviewRequired}))
		degradePool("node worker-1 is unreachable")
		failed := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(failed.Status.History[0].Outcome).To(Equal(advisorv1alpha1.PhaseFailed))
		Expect(failed.Status.History[0].FinishedAt).NotTo(BeNil())
	})
})
