package controller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// setMaxApprovalAge creates (or changes) the ApprovalPolicy with spec.maxApprovalAge,
// removed when the spec ends.
func setMaxApprovalAge(age string) {
	GinkgoHelper()
	kubectlApply(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: ApprovalPolicy
metadata: {name: cluster}
spec: {maxApprovalAge: ` + age + `}`)
	DeferCleanup(deleteAndWait, &advisorv1alpha1.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: advisorv1alpha1.ApprovalPolicyName}})
}

// probeReason is the reason of the probe's condition t ("" while it is not in that phase).
func probeReason(p advisorv1alpha1.Phase, t string) string {
	probe := getProbe()
	if probe.Status.Phase != p {
		return ""
	}
	return conditionReason(probe, t)
}

func pokeProbe() {
	GinkgoHelper()
	kubectl("annotate", "vpc", probeName, "--overwrite", fmt.Sprintf("test/poke=%d", time.Now().UnixNano()))
}

var _ = Describe("Approvals that lapse", func() {
	BeforeEach(resetCluster)

	waitingForItsWindow := func() string {
		return probeReason(advisorv1alpha1.PhaseInProgress, advisorv1alpha1.ConditionInProgress)
	}
	lapsed := func() string {
		return probeReason(advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.ConditionReviewRequired)
	}

	It("an approval whose execution a closed maintenance window holds lapses at ApprovalPolicy's maxApprovalAge, saying how old it was and how to approve again; a fresh approval runs", func() {
		setMaxApprovalAge("1h")
		probeRollsOut()
		probeWaitsForItsWindow()
		approved := getProbe()
		Expect(approved.Status.Approval.ApprovedAt).NotTo(BeNil(), "the operator records when it observed the approval")

		By("half the age: the approval holds")
		clock.Advance(30 * time.Minute)
		pokeProbe()
		Consistently(waitingForItsWindow).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow))

		By("past the age: it lapses, and the plan gets a new hash that the Apply given before does not approve")
		clock.Advance(45 * time.Minute)
		pokeProbe()
		Eventually(lapsed).Should(Equal(advisorv1alpha1.ReasonApprovalExpired))
		vpc := waitProbe(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.PlanHash).NotTo(Equal(approved.Status.PlanHash))
		Expect(vpc.Status.Approval.Required).To(BeTrue())
		Expect(vpc.Status.Approval.Command).To(ContainSubstring(vpc.Status.PlanHash))
		message := conditionMessage(vpc, advisorv1alpha1.ConditionReviewRequired)
		Expect(message).To(And(
			ContainSubstring("the approval of plan "+approved.Status.PlanHash+" lapsed"), ContainSubstring("observed 1h15m"),
			ContainSubstring("allows 1h0m0s"), ContainSubstring(advisorv1alpha1.ReasonAwaitingMaintenanceWindow),
			HaveSuffix(vpc.Status.Approval.Command)))
		Eventually(func() []eventsv1.Event { return eventsOf(vpc) }).Should(ContainElement(And(
			HaveField("Reason", advisorv1alpha1.ReasonApprovalExpired), HaveField("Type", "Warning"), HaveField("Note", message))))
		Expect(read(mcGVK, types.NamespacedName{Name: probeMachineConfig})).To(BeNil(), "nothing was applied")
		Expect(vpc.Status.History).To(BeEmpty(), "an execution that applied nothing is none")
		pokeProbe()
		Consistently(lapsed).Should(Equal(advisorv1alpha1.ReasonApprovalExpired))

		By("a fresh approval, with the window open, runs")
		clock.Advance(time.Hour)
		patchProbe(`{"action":"Apply","approvedPlanHash":"` + vpc.Status.PlanHash + `","maintenanceWindow":{"schedule":"* * * * *"}}`)
		Eventually(func() *unstructured.Unstructured {
			return read(mcGVK, types.NamespacedName{Name: probeMachineConfig})
		}).ShouldNot(BeNil())
		rolloutPool()
		done := waitProbe(advisorv1alpha1.PhaseCompleted)
		Expect(done.Status.Approval.ApprovedAt.Time).To(BeTemporally(">", approved.Status.Approval.ApprovedAt.Add(2*time.Hour)),
			"the fresh approval's time")
		Expect(done.Status.History).To(HaveLen(1))
		Expect(done.Status.History[0]).To(And(
			HaveField("PlanHash", done.Status.PlanHash), HaveField("Outcome", advisorv1alpha1.PhaseCompleted),
			HaveField("ApprovedAt", Equal(done.Status.Approval.ApprovedAt)), HaveField("Reboots", int32(workerMachines))))
	})

	It("the ApprovalPolicy wakes a held execution: its approval lapses when the policy arrives and, once the age is reached, without any other event", func() {
		probeRollsOut()
		probeWaitsForItsWindow()
		clock.Advance(2 * time.Hour)
		pokeProbe()
		Consistently(waitingForItsWindow).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow), "without a policy nothing lapses")

		setMaxApprovalAge("1h")
		Eventually(lapsed).Should(Equal(advisorv1alpha1.ReasonApprovalExpired))

		By("an approval that lapses a few seconds after it was given is looked at again then")
		kubectl("patch", "approvalpolicy", "cluster", "--type=merge", "-p", `{"spec":{"maxApprovalAge":"3s"}}`)
		patchProbe(`{"action":"Apply","approvedPlanHash":"` + getProbe().Status.PlanHash + `"}`)
		Eventually(waitingForItsWindow).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow))
		Eventually(lapsed).Should(Equal(advisorv1alpha1.ReasonApprovalExpired))
		Expect(conditionMessage(getProbe(), advisorv1alpha1.ConditionReviewRequired)).To(ContainSubstring("allows 3s"))
	})

	It("an execution that applied its batch goes on past the age while somebody else's pause holds its rollout", func() {
		setMaxApprovalAge("1h")
		pausePoolByHand(true)
		DeferCleanup(pausePoolByHand, false)
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(getConfig().Status.History).To(HaveLen(1), "the execution started")
		clock.Advance(2 * time.Hour)
		poke()
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseInProgress))
		pausePoolByHand(false)
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})
})

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
