package controller_test

import (
	"os"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// approvalCommand is the command the config's status gives to approve the plan shown; the
// message of the condition that asks for the approval carries it too.
func approvalCommand() string {
	GinkgoHelper()
	vpc := getConfig()
	Expect(vpc.Status.Approval).NotTo(BeNil())
	Expect(vpc.Status.Approval.Required).To(BeTrue(), "the plan shown waits for no approval")
	cmd := vpc.Status.Approval.Command
	Expect(cmd).To(ContainSubstring(`"approvedPlanHash":"` + vpc.Status.PlanHash + `"`))
	asking := meta.FindStatusCondition(vpc.Status.Conditions, primaryConditionOf(vpc.Status.Phase))
	Expect(asking).NotTo(BeNil())
	Expect(asking.Message).To(ContainSubstring(cmd), "the %s message gives the command that approves", asking.Type)
	return cmd
}

func primaryConditionOf(p advisorv1alpha1.Phase) string {
	switch p {
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		return advisorv1alpha1.ConditionUpgradeAvailable
	case advisorv1alpha1.PhaseCompletedWithErrors:
		return advisorv1alpha1.ConditionCompleted
	}
	return string(p)
}

// runApprovalCommand runs, with the real kubectl, exactly the command the status gives.
func runApprovalCommand() {
	GinkgoHelper()
	cmd := exec.Command("bash", "-c", approvalCommand())
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// noTargetWritesSince asserts that the operator wrote no target since mark, for a while.
func noTargetWritesSince(mark int) {
	GinkgoHelper()
	Consistently(func() []string {
		return append(requests.writesSince(mark, "kubedeschedulers"), requests.writesSince(mark, "machineconfigs/")...)
	}).Should(BeEmpty(), "a plan the operator drafted on its own was applied without a fresh approval")
}

// staleAndInterrupted makes the reviewed plan stale (its MachineConfig appears out of band),
// approves it, and makes the redraft that follows fail on reading that MachineConfig (only
// a draft reads it), so the config stays in Drafting.
func staleAndInterrupted() {
	GinkgoHelper()
	createPSIMachineConfigByHand()
	profileReader.failNamed("MachineConfig", loadaware.PSIMachineConfigName, 1_000_000)
	patchSpec(`{"action":"Apply"}`)
	Eventually(phase).Should(Equal(advisorv1alpha1.PhaseDrafting))
	Consistently(phase).Should(Equal(advisorv1alpha1.PhaseDrafting))
}

func reinstallDeschedulerCRD() {
	GinkgoHelper()
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testenv.DeschedulerCRDs("4.20")}})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Approval integrity", func() {
	BeforeEach(resetCluster)
	AfterEach(func() {
		profileReader.failNext("", 0)
		faults.clear()
	})

	It("rule 13: a stale plan whose redraft passes through an API error and a missing CRD executes only after a fresh approval", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()
		staleAndInterrupted()

		By("the KubeDescheduler CRD goes away and comes back, with its KubeDescheduler")
		deleteDeschedulerCRD()
		DeferCleanup(reinstallDeschedulerCRD)
		waitPhase(advisorv1alpha1.PhasePrerequisiteFailed)
		reinstallDeschedulerCRD()
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		Eventually(phase).Should(Equal(advisorv1alpha1.PhaseDrafting), "the reads still fail")
		Expect(descheduler()).NotTo(BeNil())
		profileReader.failNext("", 0)
		poke()

		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Spec.Action).To(Equal(advisorv1alpha1.ActionApply))
		Expect(vpc.Status.Approval.Required).To(BeTrue())
		noTargetWritesSince(mark)
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseReviewRequired))

		By("the command the status gives approves the plan shown, without a round trip through DryRun")
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
		Expect(item(getConfig(), loadaware.ItemPSI).Diff).To(ContainSubstring("-  - psi_debug=1"), "the plan applied is the one shown")
	})

	It("rule 13: a stale plan whose redraft is interrupted by a restart of the operator waits for a fresh approval across restarts", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()
		staleAndInterrupted()

		By("restarting the operator in the middle of the redraft")
		restartManager()
		profileReader.failNext("", 0)
		poke()
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonPlanStale))
		noTargetWritesSince(mark)

		By("restarting again while the fresh plan waits")
		restartManager()
		poke()
		noTargetWritesSince(mark)
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseReviewRequired))
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
	})

	It("rule 13: a stale plan whose redraft the API server refuses stays unapplied after the refusal is lifted", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		mark := requests.mark()
		rejectDeschedulerWrites()
		patchSpec(`{"action":"Apply"}`)
		vpc := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionFailed)).To(Equal(advisorv1alpha1.ReasonPlanRejected))

		By("lifting the refusal does not execute anything by itself")
		liftAdmissionPolicies()
		poke()
		noTargetWritesSince(mark)
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseFailed))
	})

	It("rule 13: no plan the operator redrafts on its own (drift, input change, upgrade, CRD back, restart) writes a target before a fresh approval", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})

		By("drift: the correction waits for its approval")
		mark := requests.mark()
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":901}}`)
		waitPhase(advisorv1alpha1.PhaseDrifted)
		restartManager()
		poke()
		noTargetWritesSince(mark)
		Expect(deschedulerInterval()).To(BeEquivalentTo(901))
		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))

		By("input change: the HyperConverged's migration limits change what the plan sets")
		mark = requests.mark()
		kubectl("patch", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "--type=merge",
			"-p", `{"spec":{"virtualization":{"liveMigrationConfig":{"parallelMigrationsPerCluster":9}}}}`)
		DeferCleanup(kubectl, "patch", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "--type=merge",
			"-p", `{"spec":{"virtualization":{"liveMigrationConfig":{"parallelMigrationsPerCluster":5}}}}`)
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		// The approval given for the correction pinned its hash: the redrafted plan is
		// another one.
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonApprovalMismatch))
		Expect(vpc.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("an object the plan was rendered from changed"))))
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(ContainSubstring("+    total: 9"))
		noTargetWritesSince(mark)
		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		limit, _, _ := unstructured.NestedInt64(descheduler().Object, "spec", "evictionLimits", "total")
		Expect(limit).To(BeEquivalentTo(9))

		By("upgrade: a newer operator's plan waits for its approval")
		mark = requests.mark()
		olderOperatorApplied(3600)
		poke()
		waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)
		restartManager()
		poke()
		noTargetWritesSince(mark)
		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		By("a target's CRD going away and coming back: nothing is written")
		mark = requests.mark()
		deleteDeschedulerCRD()
		DeferCleanup(reinstallDeschedulerCRD)
		waitPhase(advisorv1alpha1.PhasePrerequisiteFailed)
		reinstallDeschedulerCRD()
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		Eventually(phase).WithTimeout(time.Minute).Should(Or(Equal(advisorv1alpha1.PhaseDrifted), Equal(advisorv1alpha1.PhaseReviewRequired)))
		noTargetWritesSince(mark)
		Expect(getConfig().Status.Approval.Required).To(BeTrue())
	})
})
