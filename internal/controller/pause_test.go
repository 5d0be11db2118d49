package controller_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// probeRollsOut makes the densityProbe's plan roll a MachineConfig out in the worker pool,
// the pool load-aware-rebalancing's PSI MachineConfig rolls out in.
func probeRollsOut() {
	GinkgoHelper()
	probeKernelArgs.Store(true)
	DeferCleanup(func() { probeKernelArgs.Store(false) })
	DeferCleanup(deleteAndWait, object(mcGVK, types.NamespacedName{Name: probeMachineConfig}))
}

func patchProbe(spec string) {
	GinkgoHelper()
	kubectl("patch", "vpc", probeName, "--type=merge", "-p", `{"spec":`+spec+`}`)
}

func getProbe() *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	probe := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: probeName}, probe)).To(Succeed())
	return probe
}

// probeWaitsWithAMismatchedPin leaves the probe in ReviewRequired with action Apply and a pin
// to another plan than the one shown (ApprovalMismatch).
func probeWaitsWithAMismatchedPin() {
	GinkgoHelper()
	createProbe(advisorv1alpha1.ActionDryRun)
	waitProbe(advisorv1alpha1.PhaseReviewRequired)
	patchProbe(`{"action":"Apply","approvedPlanHash":"` + strings.Repeat("0", 64) + `"}`)
	Eventually(func() string {
		return conditionReason(waitProbe(advisorv1alpha1.PhaseReviewRequired), advisorv1alpha1.ConditionReviewRequired)
	}).Should(Equal(advisorv1alpha1.ReasonApprovalMismatch))
}

// probeWaitsAfterItsTargetChanged leaves the probe in ReviewRequired with action Apply on a
// plan redrafted because its target changed between review and approval (PlanStale).
func probeWaitsAfterItsTargetChanged() {
	GinkgoHelper()
	createProbe(advisorv1alpha1.ActionDryRun)
	waitProbe(advisorv1alpha1.PhaseReviewRequired)
	kubectl("patch", "hyperconverged", "kubevirt-hyperconverged", "-n", "openshift-cnv", "--type=merge", "-p",
		`{"spec":{"virtualization":{"higherWorkloadDensity":{"memoryOvercommitPercentage":130}}}}`)
	patchProbe(`{"action":"Apply"}`)
	Eventually(func() string {
		return conditionReason(waitProbe(advisorv1alpha1.PhaseReviewRequired), advisorv1alpha1.ConditionReviewRequired)
	}).Should(Equal(advisorv1alpha1.ReasonPlanStale))
}

// probeWaitsForItsWindow approves the probe with a maintenance window that is closed: its
// batch waits in InProgress.
func probeWaitsForItsWindow() {
	GinkgoHelper()
	createProbe(advisorv1alpha1.ActionDryRun)
	waitProbe(advisorv1alpha1.PhaseReviewRequired)
	patchProbe(`{"action":"Apply","maintenanceWindow":{"schedule":"0 0 1 1 *","duration":"1h"}}`)
	Eventually(func() string {
		return conditionReason(waitProbe(advisorv1alpha1.PhaseInProgress), advisorv1alpha1.ConditionInProgress)
	}).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow))
}

// pausedAsAnEarlierVersionLeftIt pauses the worker pool for config, with the operator's own
// field manager, as an earlier operator version left a pool it handed to a config that
// never executes.
func pausedAsAnEarlierVersionLeftIt(config string) {
	GinkgoHelper()
	patch := `{"spec":{"paused":true},"metadata":{"annotations":{"` + targets.PausedByAnnotation + `":"` + config + `"}}}`
	Expect(k8s.Patch(ctx, object(poolGVK, types.NamespacedName{Name: "worker"}), client.RawPatch(types.MergePatchType, []byte(patch)),
		client.FieldOwner("virt-advisor-operator"))).To(Succeed())
}

// probeHoldsThePause approves the probe's plan: its MachineConfig is applied and the
// worker pool stays paused for it until the pool renders the batch, which no test's
// Machine Config Operator does before rolloutPool.
func probeHoldsThePause() {
	GinkgoHelper()
	probeRollsOut()
	createProbe(advisorv1alpha1.ActionDryRun)
	waitProbe(advisorv1alpha1.PhaseReviewRequired)
	patchProbe(`{"action":"Apply"}`)
	Eventually(func(g Gomega) {
		g.Expect(getProbe().Status.Rollouts).To(ContainElement(HaveField("PauseState", advisorv1alpha1.PausePaused)))
		g.Expect(targets.PausedBy(workerPool())).To(ConsistOf(probeName))
	}).Should(Succeed())
}

func poolReleased(g Gomega) {
	pool := workerPool()
	g.Expect(targets.PoolPaused(pool)).To(BeFalse(), "the worker pool is still paused, by %v", targets.PausedBy(pool))
	g.Expect(targets.PausedBy(pool)).To(BeEmpty())
}

var _ = Describe("Pool pauses shared between configs", func() {
	BeforeEach(resetCluster)

	DescribeTable("rule 13: a pool is kept paused after a batch only for a config holding an approval of a plan shown with that pool, and one that waits gives it back",
		func(otherWaits func(), stillWaiting advisorv1alpha1.Phase) {
			probeRollsOut()
			otherWaits()

			By("load-aware-rebalancing rolls its batch out in the same pool")
			createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
			Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
			rolloutPool()
			Eventually(poolReleased).Should(Succeed(), "the pool was kept paused for a config that does not execute")
			waitPhase(advisorv1alpha1.PhaseCompleted)
			Expect(waitProbe(stillWaiting).Status.Rollouts).NotTo(ContainElement(HaveField("PauseState", BeElementOf(
				advisorv1alpha1.PausePausing, advisorv1alpha1.PausePaused, advisorv1alpha1.PauseResuming))))
			Expect(read(mcGVK, types.NamespacedName{Name: probeMachineConfig})).To(BeNil(), "the waiting config wrote nothing")
			Consistently(poolReleased).Should(Succeed())
		},
		Entry("pinned to an older plan (ApprovalMismatch)", probeWaitsWithAMismatchedPin, advisorv1alpha1.PhaseReviewRequired),
		Entry("redrafted after its target changed (PlanStale)", probeWaitsAfterItsTargetChanged, advisorv1alpha1.PhaseReviewRequired),
		Entry("approved, waiting for its maintenance window", probeWaitsForItsWindow, advisorv1alpha1.PhaseInProgress),
	)

	DescribeTable("a pool an earlier operator version left paused for a config that holds no pause is given back",
		func(release func()) {
			probeRollsOut()
			probeWaitsWithAMismatchedPin()
			pausedAsAnEarlierVersionLeftIt(probeName)
			release()
			Eventually(poolReleased).Should(Succeed())
			Expect(metricValue("virt_advisor_pool_paused_since_timestamp_seconds", map[string]string{"pool": "worker"})).To(BeZero())
		},
		Entry("when that config is set to DryRun", func() { patchProbe(`{"action":"DryRun"}`) }),
		Entry("when that config is set to Ignore", func() { patchProbe(`{"action":"Ignore"}`) }),
		Entry("when the operator restarts", restartManager),
	)

	It("a restarted operator exports the pause of a pool it holds paused, for the alert, with the time it was paused", func() {
		probeHoldsThePause()
		since := getProbe().Status.Rollouts[0].PausedAt.Time

		By("a fresh process starts with no series")
		stopManager()
		metrics.PoolResumed("worker")
		startManager()
		Eventually(func() float64 {
			return metricValue("virt_advisor_pool_paused_since_timestamp_seconds", map[string]string{"pool": "worker"})
		}).Should(BeNumerically("~", float64(since.Unix()), 1))
		patchProbe(`{"action":"DryRun"}`)
		Eventually(poolReleased).Should(Succeed())
	})

	It("an administrator who pauses a pool the batch holds keeps it paused: the operator gives its name back and leaves spec.paused to them", func() {
		probeHoldsThePause()

		By("the administrator takes the pool over for their own maintenance, then the approval is withdrawn")
		pausePoolByHand(false)
		pausePoolByHand(true)
		DeferCleanup(pausePoolByHand, false)
		patchProbe(`{"action":"DryRun"}`)
		Eventually(func() []string { return targets.PausedBy(workerPool()) }).Should(BeEmpty())
		Consistently(func() bool { return targets.PoolPaused(workerPool()) }).Should(BeTrue(), "the administrator's pause is theirs")
		Expect(pauseWrittenBy(workerPool())).NotTo(Equal("virt-advisor-operator"))
	})

	It("a pool deleted while a config holds its pause holds no pause: the config goes on, and Ignore stops it", func() {
		probeHoldsThePause()

		deleteAndWait(object(poolGVK, types.NamespacedName{Name: "worker"}))
		Eventually(func(g Gomega) {
			probe := getProbe()
			g.Expect(probe.Status.Rollouts).NotTo(ContainElement(HaveField("PauseState", BeElementOf(
				advisorv1alpha1.PausePausing, advisorv1alpha1.PausePaused, advisorv1alpha1.PauseResuming))))
			g.Expect(probe.Status.Items).To(ContainElement(And(HaveField("Name", "probe-kernel-args"),
				HaveField("Message", ContainSubstring("no MachineConfigPool selects")))))
		}).Should(Succeed())
		patchProbe(`{"action":"Ignore"}`)
		waitProbe(advisorv1alpha1.PhaseIgnored)
	})
})

// pauseWrittenBy is the field manager that owns the pool's spec.paused.
func pauseWrittenBy(pool *unstructured.Unstructured) string {
	for _, mf := range pool.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields["f:spec"]["f:paused"]; ok {
			return mf.Manager
		}
	}
	return ""
}

// refuseMachineConfigWrites makes the API server refuse real writes of the MachineConfig
// name, dry-runs aside, as an admission policy of the cluster would; resetCluster lifts it.
func refuseMachineConfigWrites(name string) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + name, Labels: map[string]string{"test": "freeze"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"},
							APIVersions: []string{"*"}, Resources: []string{"machineconfigs"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "request.dryRun == true || object.metadata.name != '" + name + "'",
				Message:    "MachineConfig " + name + " is frozen by the cluster's policy",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + name, Labels: map[string]string{"test": "freeze"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	// The policy takes effect once the API server has loaded it: a probe object is refused.
	Eventually(func() string {
		mc := object(mcGVK, types.NamespacedName{Name: name})
		mc.Object["spec"] = map[string]any{}
		err := k8s.Create(ctx, mc, client.DryRunAll)
		if err == nil {
			err = k8s.Create(ctx, mc)
			if err == nil {
				_ = k8s.Delete(ctx, mc)
				return ""
			}
		}
		return err.Error()
	}).Should(ContainSubstring("frozen by the cluster's policy"))
}

var _ = Describe("Pauses given back on the way out of a batch", func() {
	BeforeEach(resetCluster)

	It("a batch that fails while it holds its pool's pause gives the pause back in the same reconcile", func() {
		probeRollsOut()
		probeSecondKernelArgs.Store(1)
		DeferCleanup(func() { probeSecondKernelArgs.Store(0) })
		DeferCleanup(deleteAndWait, object(mcGVK, types.NamespacedName{Name: probeSecondMachineConfig}))
		createProbe(advisorv1alpha1.ActionDryRun)
		waitProbe(advisorv1alpha1.PhaseReviewRequired)
		refuseMachineConfigWrites(probeSecondMachineConfig)

		patchProbe(`{"action":"Apply"}`)
		failed := waitProbe(advisorv1alpha1.PhaseFailed)
		Expect(item(failed, "probe-kernel-args").State).To(Equal(advisorv1alpha1.ItemInProgress))
		Expect(item(failed, "probe-kernel-args-2").Message).To(ContainSubstring("frozen by the cluster's policy"))
		Eventually(poolReleased).Should(Succeed(), "nothing wakes a failed config: its pause is given back before it stops")
	})
})
