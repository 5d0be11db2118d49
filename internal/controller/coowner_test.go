package controller_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// probeName is the name of densityProbe's config.
const probeName = string(advisorv1alpha1.ProfilePlatformBaseline)

// coOwnerWrite writes the KubeDescheduler as densityProbe's apply does, at a moment the
// spec chooses (from a request hook, while the operator is in the middle of a step): with
// that profile's field manager, the operator's ownership marks, and managementState
// Managed, the value load-aware-rebalancing sets too; interval, when not 0, is a
// descheduling interval of the co-owner's own, taken from whoever owns it.
func coOwnerWrite(interval int64) error {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"managementState": "Managed"}}}
	obj.SetGroupVersionKind(deschedulerGVK)
	obj.SetNamespace(deschedulerKey.Namespace)
	obj.SetName(deschedulerKey.Name)
	obj.SetLabels(map[string]string{plan.ManagedByLabel: plan.ManagedByValue})
	obj.SetAnnotations(map[string]string{plan.ProfileAnnotation(probeName): plan.ProfileAnnotationValue})
	opts := []client.ApplyOption{client.FieldOwner(plan.FieldManagerFor(probeName))}
	if interval != 0 {
		obj.Object["spec"].(map[string]any)["deschedulingIntervalSeconds"] = interval
		opts = append(opts, client.ForceOwnership)
	}
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...)
}

// probeApprovalCommand is the command densityProbe's status gives to approve its plan.
func probeApprovalCommand() string {
	GinkgoHelper()
	probe := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: probeName}, probe)).To(Succeed())
	Expect(probe.Status.Approval).NotTo(BeNil())
	Expect(probe.Status.Approval.Command).To(ContainSubstring(probe.Status.PlanHash))
	return probe.Status.Approval.Command
}

// applyProbe creates densityProbe's config with action Apply and, when its plan waits for a
// review first (it takes the HyperConverged's memory overcommit from the kubectl apply that
// set it), approves the plan shown as an administrator does; then waits until it completed.
func applyProbe() {
	GinkgoHelper()
	createProbe(advisorv1alpha1.ActionApply)
	probe := &advisorv1alpha1.VirtPlatformConfig{}
	Eventually(func() advisorv1alpha1.Phase {
		Expect(k8s.Get(ctx, types.NamespacedName{Name: probeName}, probe)).To(Succeed())
		return probe.Status.Phase
	}).ShouldNot(BeElementOf(advisorv1alpha1.Phase(""), advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting))
	if probe.Status.Phase == advisorv1alpha1.PhaseReviewRequired {
		Expect(runCommand(probeApprovalCommand())).To(Succeed())
	}
	waitProbe(advisorv1alpha1.PhaseCompleted)
}

// runCommand runs an approval command as an administrator's shell does, with the control
// plane's kubectl first on PATH.
func runCommand(command string) error {
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &commandError{command: command, out: string(out), err: err}
	}
	return nil
}

type commandError struct {
	command, out string
	err          error
}

func (e *commandError) Error() string { return e.command + ": " + e.err.Error() + ": " + e.out }

// finishedWithOneApproval waits until the load-aware-rebalancing config, approved once
// for the plan reviewed, rolls out and completes that very plan: no PlanStale, no redraft,
// no second approval.
func finishedWithOneApproval(reviewed *advisorv1alpha1.VirtPlatformConfig) {
	GinkgoHelper()
	Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress),
		func() string { return describeConditions(getConfig()) })
	rolloutPool()
	done := waitPhase(advisorv1alpha1.PhaseCompleted)
	Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale), "PlanStale: %v", eventNotes(advisorv1alpha1.ReasonPlanStale))
	Expect(done.Status.PlanHash).To(Equal(reviewed.Status.PlanHash), "the plan executed is the plan reviewed")
	Expect(done.Status.Approval.ApprovedPlanHash).To(Equal(reviewed.Status.PlanHash), "one approval, of the plan reviewed")
	Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	live := descheduler()
	Expect(ownsField(live, plan.FieldManagerFor(configName), "managementState")).To(BeTrue())
	Expect(ownsField(live, plan.FieldManagerFor(probeName), "managementState")).To(BeTrue(), "the same value stays co-owned")
}

var _ = Describe("A plan whose target another profile co-owns, under the optimistic lock", func() {
	BeforeEach(resetCluster)

	// load-aware-rebalancing is reviewed on a KubeDescheduler nobody marked yet; the other
	// profile (densityProbe) then writes it at some moment between that review and
	// load-aware-rebalancing's own write: it adds the operator's managed-by label and
	// co-owns managementState with the value both profiles set.
	It("rule 4: the other profile's apply between the review and the approval makes no plan stale; one approval each", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(descheduler().GetLabels()).NotTo(HaveKey(plan.ManagedByLabel))

		applyProbe()
		Expect(descheduler().GetLabels()).To(HaveKeyWithValue(plan.ManagedByLabel, plan.ManagedByValue))
		Expect(getConfig().Status.PlanHash).To(Equal(reviewed.Status.PlanHash), "the plan shown is still the one reviewed")

		runApprovalCommand()
		finishedWithOneApproval(reviewed)
	})

	It("rule 4: the other profile's apply before the review makes no plan stale", func() {
		applyProbe()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		runApprovalCommand()
		finishedWithOneApproval(reviewed)
	})

	It("rule 4: the other profile's write between the approval and this plan's write makes no plan stale", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		wrote := make(chan error, 1)
		// The status write that persists the approved execution comes after the approval was
		// checked against the snapshot and before the target is read for its write.
		hooks.before(http.MethodPatch, "/virtplatformconfigs/"+configName+"/status", func() { wrote <- coOwnerWrite(0) })
		runApprovalCommand()
		Eventually(wrote).Should(Receive(BeNil()))
		finishedWithOneApproval(reviewed)
	})

	It("rule 4: the other profile's write at the same moment as this plan's write makes no plan stale", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		wrote := make(chan error, 1)
		// Between the read of the target and the write guarded by its resourceVersion.
		hooks.before(http.MethodPatch, "/kubedeschedulers/"+deschedulerKey.Name, func() { wrote <- coOwnerWrite(0) })
		runApprovalCommand()
		Eventually(wrote).Should(Receive(BeNil()))
		finishedWithOneApproval(reviewed)
	})

	It("rule 4: two profiles sharing a target, approved at the same moment, each execute the plan they were approved for", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		reviewed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		createProbe(advisorv1alpha1.ActionDryRun)
		probeReviewed := waitProbe(advisorv1alpha1.PhaseReviewRequired)

		commands := []string{approvalCommand(), probeApprovalCommand()}
		errs := make([]error, len(commands))
		var wg sync.WaitGroup
		for i, command := range commands {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = runCommand(command)
			}()
		}
		wg.Wait()
		Expect(errs).To(HaveEach(BeNil()))

		finishedWithOneApproval(reviewed)
		probe := waitProbe(advisorv1alpha1.PhaseCompleted)
		Expect(probe.Status.PlanHash).To(Equal(probeReviewed.Status.PlanHash))
		Expect(probe.Status.Approval.ApprovedPlanHash).To(Equal(probeReviewed.Status.PlanHash))
		for _, e := range eventsOf(probe) {
			Expect(e.Reason).NotTo(Equal(advisorv1alpha1.ReasonPlanStale), e.Note)
		}
	})

	It("rule 4: another profile's change of a value the plan manages, to another value, still makes the plan stale", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(coOwnerWrite(120)).To(Succeed())
		patchSpec(`{"action":"Apply"}`)
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).
			Should(Equal(advisorv1alpha1.ReasonPlanStale))
		Eventually(func() []string { return eventNotes(advisorv1alpha1.ReasonPlanStale) }).Should(ContainElement(ContainSubstring(loadaware.ItemDescheduler)))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(stale, loadaware.ItemDescheduler).Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 120"))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(120), "nothing is applied before a review of the change")
	})

	It("rule 4: a change of a value the plan manages at the same moment as its write still makes the plan stale", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		edited := make(chan error, 1)
		hooks.before(http.MethodPatch, "/kubedeschedulers/"+deschedulerKey.Name, func() {
			_, err := run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "patch", "kubedescheduler", deschedulerKey.Name, "-n", deschedulerKey.Namespace,
				"--type=merge", "-p", `{"spec":{"deschedulingIntervalSeconds":1800}}`)
			edited <- err
		})
		patchSpec(`{"action":"Apply"}`)
		Eventually(edited).Should(Receive(BeNil()))
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).
			Should(Equal(advisorv1alpha1.ReasonPlanStale))
		stale := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(stale, loadaware.ItemDescheduler).Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 1800"))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(1800), "nothing is applied before a review of the change")
		Expect(read(mcGVK, psiKey)).To(BeNil())
	})
})
