package controller_test

import (
	"strings"

	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// annotateDescheduler sets (value != "") or removes (value "") an annotation of the
// KubeDescheduler with the real kubectl, as an administrator does.
func annotateDescheduler(key, value string) {
	GinkgoHelper()
	arg := key + "=" + value
	if value == "" {
		arg = key + "-"
	}
	kubectl("annotate", "kubedescheduler", loadaware.DeschedulerName, "-n", loadaware.DeschedulerNamespace, "--overwrite", arg)
}

// eventsOfType lists the notes of the config's Events with reason and type.
func eventsOfType(reason, eventType string) []string {
	GinkgoHelper()
	var out []string
	for _, e := range configEvents() {
		if e.Reason == reason && e.Type == eventType {
			out = append(out, e.Note)
		}
	}
	return out
}

// psiAppliedNormally asserts that the PSI item of the plan is unaffected by the annotation
// on the KubeDescheduler: planned, applied and rolled out as without it.
func psiAppliedNormally(vpc *advisorv1alpha1.VirtPlatformConfig) {
	GinkgoHelper()
	psi := item(vpc, loadaware.ItemPSI)
	Expect(psi.State).To(Equal(advisorv1alpha1.ItemCompleted), psi.Message)
	Expect(psi.Applied).NotTo(BeNil(), "the PSI item was applied")
	Expect(managedByOperator(read(mcGVK, psiKey))).To(BeTrue())
}

var _ = Describe("User-control annotations on targets, end to end", func() {
	BeforeEach(resetCluster)

	It("mode unmanaged: the KubeDescheduler's item is Skipped and says why, nothing is written to it, and the PSI item is applied as usual", func() {
		annotateDescheduler(plan.ModeAnnotation, plan.ModeUnmanaged)
		before := descheduler().GetResourceVersion()
		vpc := completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		skipped := item(vpc, loadaware.ItemDescheduler)
		Expect(skipped.State).To(Equal(advisorv1alpha1.ItemSkipped))
		Expect(skipped.Message).To(ContainSubstring("is annotated advisor.kubevirt.io/mode: unmanaged"))
		Expect(descheduler().GetResourceVersion()).To(Equal(before))
		psiAppliedNormally(vpc)
	})

	It("patch: the annotation's patch shows in the reviewed diff and is applied with the approved plan", func() {
		annotateDescheduler(plan.PatchAnnotation, `[{"op":"replace","path":"/spec/deschedulingIntervalSeconds","value":120}]`)
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(MatchRegexp(`(?m)^\+\s+deschedulingIntervalSeconds: 120$`))
		Expect(item(vpc, loadaware.ItemPSI).Diff).To(HavePrefix("--- /dev/null"))
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		rolloutPool()
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(120))
		psiAppliedNormally(vpc)
	})

	It("ignore-fields added after Completed is an input change: the plan is drafted again, and the field is left to the user from then on", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		revision := getConfig().Status.PlanRevision
		annotateDescheduler(plan.IgnoreFieldsAnnotation, "/spec/deschedulingIntervalSeconds")
		Eventually(func() []string { return item(getConfig(), loadaware.ItemDescheduler).IgnoredFields }).
			Should(ConsistOf("/spec/deschedulingIntervalSeconds"))
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Status.PlanRevision).To(BeNumerically(">", revision), "the plan was drafted again")
		Expect(item(vpc, loadaware.ItemDescheduler).ManagedFields).NotTo(ContainElement("spec.deschedulingIntervalSeconds"))

		By("a change of the ignored field is no drift and is not written back")
		mark := requests.mark()
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1800}}`)
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseCompleted))
		noTargetWritesSince(mark)
		Expect(deschedulerInterval()).To(BeEquivalentTo(1800))
		psiAppliedNormally(getConfig())

		By("removing the annotation is an input change too: the plan that takes the field back waits for a review")
		annotateDescheduler(plan.IgnoreFieldsAnnotation, "")
		vpc = waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonInputDependencyDrift))
		Expect(item(vpc, loadaware.ItemDescheduler).Diff).To(MatchRegexp(`(?m)^\+\s+deschedulingIntervalSeconds: 60$`))
		noTargetWritesSince(mark)
		runApprovalCommand()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})

	It("an annotation added while the plan waits for review redrafts the plan shown, which an approval of the old plan does not execute", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		mark := requests.mark()
		annotateDescheduler(plan.ModeAnnotation, plan.ModeUnmanaged)
		Eventually(func() advisorv1alpha1.ItemState { return item(getConfig(), loadaware.ItemDescheduler).State }).
			Should(Equal(advisorv1alpha1.ItemSkipped))
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.PlanHash).NotTo(Equal(shown.Status.PlanHash))
		Expect(item(vpc, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemPending), "the other item is planned as before")

		By("an approval pinned to the plan shown before is refused")
		patchSpec(`{"action":"Apply","approvedPlanHash":"` + shown.Status.PlanHash + `"}`)
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionReviewRequired) }).
			Should(Equal(advisorv1alpha1.ReasonApprovalMismatch))
		noTargetWritesSince(mark)
	})

	DescribeTable("a patch the API server refuses, on the target before the plan is drafted: the item is Skipped with the refusal, reported once, the other items complete, and fixing the annotation redrafts the plan for review",
		func(fix func(), planned types.GomegaMatcher) {
			annotateDescheduler(plan.PatchAnnotation, bogusMode)
			errorsBefore := metricValue("controller_runtime_reconcile_errors_total", nil)
			createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
			Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
			rolloutPool()
			vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
			bad := item(vpc, loadaware.ItemDescheduler)
			Expect(bad.State).To(Equal(advisorv1alpha1.ItemSkipped))
			Expect(bad.Message).To(And(ContainSubstring("the API server refuses the desired object it makes"), ContainSubstring(`"Bogus"`),
				ContainSubstring("Fix or remove the annotation; the other items are not affected")))
			psiAppliedNormally(vpc)

			By("the refusal is the item's message and one Event, never a reconcile error retried")
			mark := requests.mark()
			poke()
			Consistently(func() []string { return dryRunsSince(mark, "kubedeschedulers") }).Should(BeEmpty())
			Expect(metricValue("controller_runtime_reconcile_errors_total", nil)).To(Equal(errorsBefore))
			Expect(badAnnotationEvents()).To(ConsistOf(And(HaveField("Note", ContainSubstring(`"Bogus"`)), HaveField("Series", BeNil()))))
			Expect(phase()).To(Equal(advisorv1alpha1.PhaseCompleted))

			By("fixing the annotation redrafts the plan, which waits for a review with the command that approves it")
			fix()
			shown := waitPhase(advisorv1alpha1.PhaseReviewRequired)
			Expect(shown.Status.PlanRevision).To(BeNumerically(">", vpc.Status.PlanRevision))
			Expect(conditionReason(shown, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonInputDependencyDrift))
			Expect(item(shown, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemPending))
			Expect(item(shown, loadaware.ItemDescheduler).Diff).To(planned)
			noTargetWritesSince(mark)
			runApprovalCommand()
			waitPhase(advisorv1alpha1.PhaseCompleted)
			Expect(deschedulerInterval()).To(BeEquivalentTo(60))
			Expect(metricValue("controller_runtime_reconcile_errors_total", nil)).To(Equal(errorsBefore))
		},
		Entry("removed", func() { annotateDescheduler(plan.PatchAnnotation, "") },
			MatchRegexp(`(?m)^\+\s+deschedulingIntervalSeconds: 60$`)),
		Entry("corrected", func() {
			annotateDescheduler(plan.PatchAnnotation, `[{"op":"replace","path":"/spec/mode","value":"Automatic"}]`)
		}, MatchRegexp(`(?m)^\+\s+mode: Automatic$`)),
	)

	It("a patch the API server refuses, added after Completed: a later change of the target's values is no reconcile error retried", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		annotateDescheduler(plan.PatchAnnotation, bogusMode)
		Eventually(func() advisorv1alpha1.ItemState { return item(getConfig(), loadaware.ItemDescheduler).State }).
			Should(Equal(advisorv1alpha1.ItemSkipped))
		waitPhase(advisorv1alpha1.PhaseCompleted)
		errorsBefore := metricValue("controller_runtime_reconcile_errors_total", nil)
		mark := requests.mark()
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)
		Consistently(func() []string { return dryRunsSince(mark, "kubedeschedulers") }).Should(BeEmpty())
		Expect(metricValue("controller_runtime_reconcile_errors_total", nil)).To(Equal(errorsBefore))
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseCompleted), "a Skipped item is not watched for drift")
		Expect(item(getConfig(), loadaware.ItemDescheduler).Message).To(ContainSubstring(`"Bogus"`))
		noTargetWritesSince(mark)
		psiAppliedNormally(getConfig())
	})

	DescribeTable("a malformed annotation added after Completed: the item says what is wrong, a Warning Event says it too, nothing is written, the PSI item stays as it is",
		func(key, value, fragment string) {
			completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
			mark := requests.mark()
			annotateDescheduler(key, value)
			Eventually(func() advisorv1alpha1.ItemState { return item(getConfig(), loadaware.ItemDescheduler).State }).
				Should(Equal(advisorv1alpha1.ItemSkipped))
			vpc := getConfig()
			bad := item(vpc, loadaware.ItemDescheduler)
			Expect(bad.Message).To(ContainSubstring(fragment))
			Expect(bad.Message).To(ContainSubstring("Fix or remove the annotation; the other items are not affected"))
			Eventually(func() []string { return eventsOfType(advisorv1alpha1.EventBadAnnotation, corev1.EventTypeWarning) }).
				Should(ContainElement(ContainSubstring(fragment)))
			Expect(vpc.Status.Phase).NotTo(Equal(advisorv1alpha1.PhaseFailed))
			psiAppliedNormally(vpc)
			noTargetWritesSince(mark)
		},
		Entry("ignore-fields that is not a JSON pointer", plan.IgnoreFieldsAnnotation, "spec.mode",
			`JSON pointer "spec.mode" must start with /`),
		Entry("an unknown mode", plan.ModeAnnotation, "paused", `unknown mode "paused"`),
		Entry("a patch that is not JSON", plan.PatchAnnotation, "mode: Predictive", "not an RFC 6902 JSON patch"),
		Entry("a patch on /status", plan.PatchAnnotation, `[{"op":"add","path":"/status/x","value":1}]`, "touches status"),
		Entry("a patch whose test operation fails", plan.PatchAnnotation,
			`[{"op":"test","path":"/spec/mode","value":"Predictive"},{"op":"replace","path":"/spec/mode","value":"Automatic"}]`,
			"cannot apply it to the desired object"),
		Entry("a patch that makes a value the CRD's enum refuses", plan.PatchAnnotation,
			`[{"op":"replace","path":"/spec/mode","value":"Sometimes"}]`,
			`the API server refuses the desired object it makes`),
		Entry("a patch whose copies double the object past the size limit", plan.PatchAnnotation, copyBomb,
			"the limit of 32768 bytes"),
	)
})

// bogusMode is a patch annotation the API server refuses: the KubeDescheduler's mode is an enum.
const bogusMode = `[{"op":"replace","path":"/spec/mode","value":"Bogus"}]`

// dryRunsSince lists the dry-run requests the operator sent since mark whose path contains fragment.
func dryRunsSince(mark int, fragment string) []string {
	var out []string
	for _, r := range requests.since(mark) {
		if r.dryRun && strings.Contains(r.path, fragment) {
			out = append(out, r.method+" "+r.path)
		}
	}
	return out
}

// badAnnotationEvents lists the config's Warning Events with reason BadAnnotation.
func badAnnotationEvents() []eventsv1.Event {
	GinkgoHelper()
	var out []eventsv1.Event
	for _, e := range configEvents() {
		if e.Reason == advisorv1alpha1.EventBadAnnotation && e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

// copyBomb is a patch annotation of about 1.4 KB whose copy operations double the
// object twenty times.
var copyBomb = `[{"op":"add","path":"/spec/c0","value":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},{"op":"copy","from":"/spec","path":"/spec/c1"},{"op":"copy","from":"/spec","path":"/spec/c2"},{"op":"copy","from":"/spec","path":"/spec/c3"},{"op":"copy","from":"/spec","path":"/spec/c4"},{"op":"copy","from":"/spec","path":"/spec/c5"},{"op":"copy","from":"/spec","path":"/spec/c6"},{"op":"copy","from":"/spec","path":"/spec/c7"},{"op":"copy","from":"/spec","path":"/spec/c8"},{"op":"copy","from":"/spec","path":"/spec/c9"},{"op":"copy","from":"/spec","path":"/spec/c10"},{"op":"copy","from":"/spec","path":"/spec/c11"},{"op":"copy","from":"/spec","path":"/spec/c12"},{"op":"copy","from":"/spec","path":"/spec/c13"},{"op":"copy","from":"/spec","path":"/spec/c14"},{"op":"copy","from":"/spec","path":"/spec/c15"},{"op":"copy","from":"/spec","path":"/spec/c16"},{"op":"copy","from":"/spec","path":"/spec/c17"},{"op":"copy","from":"/spec","path":"/spec/c18"},{"op":"copy","from":"/spec","path":"/spec/c19"},{"op":"copy","from":"/spec","path":"/spec/c20"}]`
