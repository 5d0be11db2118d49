package health

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var (
	// settled: the config is where its spec asks, short of Completed (a DryRun plan shown,
	// Ignored): not Ready, so kstatus reads InProgress (it knows Current only from
	// Ready=True or from no Ready condition at all).
	settled = reading{kstatus: status.InProgressStatus, argo: "Suspended",
		completed: metav1.ConditionFalse, degraded: metav1.ConditionFalse}
	// waiting: it waits for someone.
	waiting = reading{kstatus: status.FailedStatus, argo: "Degraded",
		completed: metav1.ConditionFalse, degraded: metav1.ConditionTrue}
	// moving: the operator moves it on by itself.
	moving = reading{kstatus: status.InProgressStatus, argo: "Progressing",
		completed: metav1.ConditionFalse, degraded: metav1.ConditionFalse}
	// done: the plan is applied and the targets hold it.
	done = reading{kstatus: status.CurrentStatus, argo: "Healthy",
		completed: metav1.ConditionTrue, degraded: metav1.ConditionFalse}
)

var _ = Describe("What engines read of a live config", Ordered, func() {
	const name = string(advisorv1alpha1.ProfileLoadAwareRebalancing)

	It("DryRun, ReviewRequired: the plan shown is what DryRun asks; Argo CD Suspended, neither Completed nor Degraded for OCM", func() {
		createConfig(advisorv1alpha1.ProfileLoadAwareRebalancing, advisorv1alpha1.ActionDryRun, noPSI())
		expectReading(name, advisorv1alpha1.PhaseReviewRequired, settled)
	})

	It("Apply with a pin that does not match the plan: ReviewRequired waits for someone (Stalled, reason ApprovalMismatch)", func() {
		patchSpec(name, `{"action":"Apply","approvedPlanHash":"0000000000000000000000000000000000000000000000000000000000000000"}`)
		obj := expectReading(name, advisorv1alpha1.PhaseReviewRequired, waiting)
		Expect(condition(obj, advisorv1alpha1.ConditionStalled).Reason).To(Equal(advisorv1alpha1.ReasonApprovalMismatch))
		Expect(read(obj).kstatusMessage).To(ContainSubstring("approvedPlanHash"))
	})

	It("Completed: Current, Healthy, Completed; an idle config is not written to", func() {
		patchSpec(name, `{"approvedPlanHash":null}`)
		obj := expectReading(name, advisorv1alpha1.PhaseCompleted, done)
		rv := resourceVersion(obj)
		Consistently(func() string { return resourceVersion(live(name)) }, 2*time.Second).Should(Equal(rv),
			"a Completed config with nothing to do is written to")
	})

	It("Drifted without an approved correction: Stalled, Degraded", func() {
		kd := &metav1.PartialObjectMetadata{}
		kd.SetGroupVersionKind(deschedulerGVK)
		kd.SetName("cluster")
		kd.SetNamespace("openshift-kube-descheduler-operator")
		Expect(k8s.Patch(ctx, kd, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"deschedulingIntervalSeconds":1234}}`)), client.FieldOwner("someone-else"))).To(Succeed())
		expectReading(name, advisorv1alpha1.PhaseDrifted, waiting)
	})

	It("Ignored: the user set it aside; Argo CD Suspended, neither Completed nor Degraded", func() {
		patchSpec(name, `{"action":"Ignore"}`)
		expectReading(name, advisorv1alpha1.PhaseIgnored, settled)
		deleteConfig(name)
	})

	It("Failed (a MachineConfig no pool selects, under Abort): Stalled, Degraded", func() {
		createConfig(advisorv1alpha1.ProfileLoadAwareRebalancing, advisorv1alpha1.ActionDryRun, nil)
		Eventually(phaseOf).WithArguments(name).Should(Equal(advisorv1alpha1.PhaseReviewRequired))
		patchSpec(name, `{"action":"Apply"}`)
		expectReading(name, advisorv1alpha1.PhaseFailed, waiting)
		deleteConfig(name)
	})

	It("CompletedWithErrors (the same failure under Continue): Stalled, Degraded", func() {
		deletePSIMachineConfig()
		createConfig(advisorv1alpha1.ProfileLoadAwareRebalancing, advisorv1alpha1.ActionDryRun, nil)
		Eventually(phaseOf).WithArguments(name).Should(Equal(advisorv1alpha1.PhaseReviewRequired))
		patchSpec(name, `{"action":"Apply","failurePolicy":"Continue"}`)
		expectReading(name, advisorv1alpha1.PhaseCompletedWithErrors, waiting)
		deleteConfig(name)
	})

	It("InProgress (a MachineConfig waits for its pool to roll out): Reconciling, Progressing", func() {
		create(workerPool)
		deletePSIMachineConfig()
		createConfig(advisorv1alpha1.ProfileLoadAwareRebalancing, advisorv1alpha1.ActionDryRun, nil)
		Eventually(phaseOf).WithArguments(name).Should(Equal(advisorv1alpha1.PhaseReviewRequired))
		patchSpec(name, `{"action":"Apply"}`)
		obj := expectReading(name, advisorv1alpha1.PhaseInProgress, moving)
		Expect(condition(obj, advisorv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
		deleteConfig(name)
	})

	It("PrerequisiteFailed (no HyperConverged for virt-higher-density): Stalled, Degraded", func() {
		hd := string(advisorv1alpha1.ProfileVirtHigherDensity)
		createConfig(advisorv1alpha1.ProfileVirtHigherDensity, advisorv1alpha1.ActionDryRun, nil)
		expectReading(hd, advisorv1alpha1.PhasePrerequisiteFailed, waiting)
		deleteConfig(hd)
	})
})

var _ = Describe("What engines read of each phase", func() {
	// The phases a short test cannot reach on a cluster, with the conditions the operator
	// writes for them.
	DescribeTable("from the conditions SetConditions writes",
		func(phase advisorv1alpha1.Phase, action advisorv1alpha1.Action, correcting bool, want reading) {
			vpc := &advisorv1alpha1.VirtPlatformConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Generation: 3},
				Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Action: action},
				Status:     advisorv1alpha1.VirtPlatformConfigStatus{Phase: phase, ObservedGeneration: 3},
			}
			vpc.Status.SetConditions("SomeReason", "what the phase says", advisorv1alpha1.ProgressOf(phase, action, correcting))
			obj := toMap(vpc)
			expectSame(read(obj), want)

			// A spec change the operator has not acted on yet is neither done nor degraded.
			obj["metadata"].(map[string]any)["generation"] = int64(4)
			stale := read(obj)
			Expect(stale.kstatus).To(Equal(status.InProgressStatus))
			Expect(stale.argo).To(Equal("Progressing"))
			Expect([]metav1.ConditionStatus{stale.completed, stale.degraded}).To(HaveEach(metav1.ConditionFalse))
		},
		Entry("Pending", advisorv1alpha1.PhasePending, advisorv1alpha1.ActionDryRun, false, moving),
		Entry("Drafting", advisorv1alpha1.PhaseDrafting, advisorv1alpha1.ActionApply, false, moving),
		Entry("CompletedWithUpgrade", advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.ActionApply, false, done),
		Entry("Drifted while the operator re-applies (bypassOptimisticLock)", advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ActionApply, true, moving),
		Entry("Drifted under DryRun", advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ActionDryRun, false, waiting),
		Entry("ReviewRequired under Apply", advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.ActionApply, false, waiting),
		Entry("Reverted", advisorv1alpha1.PhaseReverted, advisorv1alpha1.ActionDryRun, false, settled),
	)

	It("reads a config the operator has not written a status for as in progress", func() {
		obj := map[string]any{
			"apiVersion": "advisor.kubevirt.io/v1alpha1", "kind": "VirtPlatformConfig",
			"metadata": map[string]any{"name": "load-aware-rebalancing", "generation": int64(1)},
			"spec":     map[string]any{"profile": "load-aware-rebalancing"},
		}
		r := read(obj)
		Expect(r.argo).To(Equal("Progressing"))
		Expect([]metav1.ConditionStatus{r.completed, r.degraded}).To(HaveEach(metav1.ConditionFalse))
		// kstatus has nothing to go on: no observedGeneration, no conditions.
		Expect(r.kstatus).To(Equal(status.CurrentStatus))
	})
})

var deschedulerGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}

// deletePSIMachineConfig deletes the MachineConfig an earlier spec applied, so that the
// next plan has a change to make (a plan without one completes at once).
func deletePSIMachineConfig() {
	GinkgoHelper()
	mc := &metav1.PartialObjectMetadata{}
	mc.SetGroupVersionKind(schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"})
	mc.SetName("99-worker-psi-karg")
	testenv.DeleteAndWait(ctx, k8s, mc)
}

func noPSI() *advisorv1alpha1.ProfileOptions {
	return &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false)}}
}

func createConfig(profile advisorv1alpha1.ProfileName, action advisorv1alpha1.Action, opts *advisorv1alpha1.ProfileOptions) {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: string(profile)},
		Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: profile, Action: action, Options: opts},
	}
	Expect(k8s.Create(ctx, vpc)).To(Succeed())
}

func deleteConfig(name string) {
	GinkgoHelper()
	testenv.DeleteAndWait(ctx, k8s, &advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func patchSpec(name, spec string) {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8s.Patch(ctx, vpc, client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`)))).To(Succeed())
}

// live reads the config as the engines do: as JSON.
func live(name string) map[string]any {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, vpc)).To(Succeed())
	return toMap(vpc)
}

func phaseOf(name string) advisorv1alpha1.Phase {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: name}, vpc); err != nil {
		return ""
	}
	return vpc.Status.Phase
}

func toMap(vpc *advisorv1alpha1.VirtPlatformConfig) map[string]any {
	GinkgoHelper()
	vpc = vpc.DeepCopy()
	vpc.SetGroupVersionKind(advisorv1alpha1.GroupVersion.WithKind("VirtPlatformConfig"))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vpc)
	Expect(err).NotTo(HaveOccurred())
	return obj
}

// expectReading waits until the config is in phase and its status reflects its spec, then
// checks what each engine reads of it, and returns the object read.
func expectReading(name string, phase advisorv1alpha1.Phase, want reading) map[string]any {
	GinkgoHelper()
	var obj map[string]any
	Eventually(func(g Gomega) {
		obj = live(name)
		st, _ := obj["status"].(map[string]any)
		g.Expect(st).To(HaveKeyWithValue("phase", string(phase)))
		g.Expect(st["observedGeneration"]).To(Equal(obj["metadata"].(map[string]any)["generation"]))
	}).Should(Succeed())
	expectSame(read(obj), want)
	return obj
}

func expectSame(got, want reading) {
	GinkgoHelper()
	Expect([]any{got.kstatus, got.argo, got.completed, got.degraded}).To(
		Equal([]any{want.kstatus, want.argo, want.completed, want.degraded}), "%s", got)
	Expect(got.argoMessage).NotTo(BeEmpty())
	Expect(got.ocmMessage).NotTo(BeEmpty())
}

func condition(obj map[string]any, t string) metav1.Condition {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, vpc)).To(Succeed())
	c := meta.FindStatusCondition(vpc.Status.Conditions, t)
	Expect(c).NotTo(BeNil(), "condition %s", t)
	return *c
}

func resourceVersion(obj map[string]any) string {
	return obj["metadata"].(map[string]any)["resourceVersion"].(string)
}
