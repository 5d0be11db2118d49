package controller_test

import (
	"context"
	"fmt"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// densityProbe is a profile that exists only in these tests, registered with one registry
// line in the suite: it writes the HyperConverged's memory overcommit, and the
// KubeDescheduler's managementState beside load-aware-rebalancing (the same value, so the
// two profiles co-own it). It borrows the name platform-baseline, which the API accepts.
type densityProbe struct{}

// probeInterval, when not 0, is the descheduling interval densityProbe sets besides
// load-aware-rebalancing, which sets 60: another value is a conflict between profiles.
var probeInterval atomic.Int64

// probeKernelArgs, when set, makes densityProbe's plan start with a MachineConfig for the
// worker pool, named probeMachineConfig.
var probeKernelArgs atomic.Bool

const probeMachineConfig = "99-worker-probe-karg"

// probeSecondKernelArgs, when set with probeKernelArgs, adds a second MachineConfig for the
// worker pool, named probeSecondMachineConfig, with the kernel argument probe2=<value>.
var probeSecondKernelArgs atomic.Int64

const probeSecondMachineConfig = "99-worker-probe-karg-2"

var _ profiles.Profile = densityProbe{}

func (densityProbe) Name() advisorv1alpha1.ProfileName {
	return advisorv1alpha1.ProfilePlatformBaseline
}
func (densityProbe) Description() string   { return "test profile writing the HyperConverged" }
func (densityProbe) ImpactSummary() string { return "Medium" }
func (densityProbe) Prerequisites(*advisorv1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{CRD: targets.HyperConverged.CRD, Operator: targets.HyperConverged.Operator}}
}
func (densityProbe) WatchedCRDs() []string {
	return []string{targets.HyperConverged.CRD, targets.KubeDescheduler.CRD, targets.MachineConfig.CRD}
}
func (densityProbe) Defaults(o *advisorv1alpha1.ProfileOptions) *advisorv1alpha1.ProfileOptions {
	if o == nil {
		return &advisorv1alpha1.ProfileOptions{}
	}
	return o.DeepCopy()
}
func (densityProbe) Validate(*advisorv1alpha1.ProfileOptions) error { return nil }
func (densityProbe) Render(context.Context, client.Reader, *advisorv1alpha1.ProfileOptions) ([]plan.Item, error) {
	hco := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"virtualization": map[string]any{
		"higherWorkloadDensity": map[string]any{"memoryOvercommitPercentage": int64(150)},
	}}}}
	hco.SetGroupVersionKind(targets.HyperConverged.GVK)
	hco.SetNamespace("openshift-cnv")
	hco.SetName("kubevirt-hyperconverged")
	descheduler := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"managementState": "Managed"}}}
	if interval := probeInterval.Load(); interval != 0 {
		descheduler.Object["spec"].(map[string]any)["deschedulingIntervalSeconds"] = interval
	}
	descheduler.SetGroupVersionKind(targets.KubeDescheduler.GVK)
	descheduler.SetNamespace(loadaware.DeschedulerNamespace)
	descheduler.SetName(loadaware.DeschedulerName)
	items := []plan.Item{
		{Name: "memory-overcommit", Desired: hco, Impact: advisorv1alpha1.ImpactMedium, Message: "overcommit memory to 150%"},
		{Name: "descheduler-managed", Desired: descheduler, Impact: advisorv1alpha1.ImpactLow, Message: "keep the descheduler managed"},
	}
	if probeKernelArgs.Load() {
		mc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"kernelArguments": []any{"probe=1"}}}}
		mc.SetGroupVersionKind(targets.MachineConfig.GVK)
		mc.SetName(probeMachineConfig)
		mc.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		rollsOut := []plan.Item{{Name: "probe-kernel-args", Desired: mc, Impact: advisorv1alpha1.ImpactHigh,
			Message: "add a kernel argument to the workers"}}
		if v := probeSecondKernelArgs.Load(); v != 0 {
			second := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"kernelArguments": []any{fmt.Sprintf("probe2=%d", v)}}}}
			second.SetGroupVersionKind(targets.MachineConfig.GVK)
			second.SetName(probeSecondMachineConfig)
			second.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
			rollsOut = append(rollsOut, plan.Item{Name: "probe-kernel-args-2", Desired: second, Impact: advisorv1alpha1.ImpactHigh,
				Message: "add a second kernel argument to the workers"})
		}
		items = append(rollsOut, items...)
	}
	return items, nil
}

// managers lists the field managers that applied to obj.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Operation == metav1.ManagedFieldsOperationApply {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// createProbe creates the densityProbe's config (replacing an advertised one) with action
// and deletes it when the spec ends.
func createProbe(action advisorv1alpha1.Action) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	probe := &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: string(advisorv1alpha1.ProfilePlatformBaseline)},
		Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: advisorv1alpha1.ProfilePlatformBaseline, Action: action},
	}
	deleteAndWait(probe.DeepCopy()) // an advertised one, if any
	Expect(k8s.Create(ctx, probe)).To(Succeed())
	DeferCleanup(deleteAndWait, probe.DeepCopy())
	return probe
}

// waitProbe waits for the probe's config to reach phase, for its current generation.
func waitProbe(p advisorv1alpha1.Phase) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	probe := &advisorv1alpha1.VirtPlatformConfig{}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: string(advisorv1alpha1.ProfilePlatformBaseline)}, probe)).To(Succeed())
		g.Expect(probe.Status.ObservedGeneration).To(Equal(probe.Generation))
		g.Expect(probe.Status.Phase).To(Equal(p), describeConditions(probe))
	}).Should(Succeed())
	return probe
}

var _ = Describe("Profiles sharing a target", func() {
	BeforeEach(resetCluster)

	It("a field two profiles set to different values is a conflict shown in the plan, naming the other profile, never applied before a review; each profile keeps its other fields", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		probeInterval.Store(120)
		DeferCleanup(func() { probeInterval.Store(0) })
		loadAware := plan.FieldManagerFor(string(advisorv1alpha1.ProfileLoadAwareRebalancing))
		probeManager := plan.FieldManagerFor(string(advisorv1alpha1.ProfilePlatformBaseline))

		By("created with action Apply, the second profile's plan still waits for a review")
		mark := requests.mark()
		createProbe(advisorv1alpha1.ActionApply)
		probe := waitProbe(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(probe, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonFieldConflicts))
		Expect(probe.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("profile load-aware-rebalancing"))))
		shared := item(probe, "descheduler-managed")
		Expect(shared.Conflicts).To(ConsistOf(And(
			HaveField("Path", "spec.deschedulingIntervalSeconds"), HaveField("Manager", loadAware),
			HaveField("LiveValue", "60"), HaveField("PlannedValue", "120"))))
		Expect(shared.Message).To(ContainSubstring("spec.deschedulingIntervalSeconds is owned by profile load-aware-rebalancing with value 60; the plan sets 120"))
		Eventually(func() []string {
			var notes []string
			for _, e := range eventsOf(probe) {
				if e.Reason == advisorv1alpha1.EventFieldConflict && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).Should(ContainElement(ContainSubstring("profile load-aware-rebalancing")))
		Consistently(func() []string {
			return append(requests.writesSince(mark, "kubedeschedulers"), requests.writesSince(mark, "hyperconvergeds")...)
		}).Should(BeEmpty(), "nothing of a plan with a conflict is applied before its review")
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))

		By("approved after the review, it takes the field; the first profile keeps its other fields")
		kubectl("patch", "vpc", string(advisorv1alpha1.ProfilePlatformBaseline), "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedPlanHash":"`+probe.Status.PlanHash+`"}}`)
		waitProbe(advisorv1alpha1.PhaseCompleted)
		live := descheduler()
		Expect(deschedulerInterval()).To(BeEquivalentTo(120))
		Expect(ownsField(live, probeManager, "deschedulingIntervalSeconds")).To(BeTrue())
		Expect(ownsField(live, loadAware, "deschedulingIntervalSeconds")).To(BeFalse())
		for _, field := range []string{"profiles", "mode", "managementState"} {
			Expect(ownsField(live, loadAware, field)).To(BeTrue(), "load-aware-rebalancing still owns spec.%s: %s", field, describeManagers(live))
		}
		Expect(ownsField(live, probeManager, "managementState")).To(BeTrue(), "the same value is co-owned")

		By("the first profile sees the change of its field and shows the conflict naming the other profile; nothing is forced back")
		mark = requests.mark()
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		Expect(item(drifted, loadaware.ItemDescheduler).Conflicts).To(ContainElement(And(
			HaveField("Path", "spec.deschedulingIntervalSeconds"), HaveField("Manager", probeManager),
			HaveField("LiveValue", "120"), HaveField("PlannedValue", "60"))))
		Consistently(func() []string { return requests.writesSince(mark, "kubedeschedulers") }).Should(BeEmpty())
	})

	It("a second profile, added as one package and one registry line, writes the HyperConverged and co-owns the KubeDescheduler with its own field manager", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})

		// The HyperConverged's memory overcommit is set by whoever created it (its default)
		// or by an earlier spec: applyProbe approves the plan shown when it takes the field.
		applyProbe()
		probe := waitProbe(advisorv1alpha1.PhaseCompleted)
		Expect(probe.Status.FieldManager).To(Equal("virt-advisor-operator/platform-baseline"))
		Expect(item(probe, "descheduler-managed").Conflicts).To(BeEmpty(), "the same value is co-owned, not a conflict")

		By("managedFields shows both profiles on the shared object, each with its own manager")
		Expect(managers(descheduler())).To(ContainElements(
			plan.FieldManagerFor(string(advisorv1alpha1.ProfileLoadAwareRebalancing)), plan.FieldManagerFor(string(advisorv1alpha1.ProfilePlatformBaseline))))
		Expect(ownsField(descheduler(), plan.FieldManagerFor(string(advisorv1alpha1.ProfilePlatformBaseline)), "managementState")).To(BeTrue())
		Expect(ownsField(descheduler(), plan.FieldManagerFor(configName), "managementState")).To(BeTrue())
		hco := read(targets.HyperConverged.GVK, types.NamespacedName{Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"})
		Expect(managers(hco)).To(ContainElement(plan.FieldManagerFor(string(advisorv1alpha1.ProfilePlatformBaseline))))
		overcommit, _, _ := unstructured.NestedInt64(hco.Object, "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
		Expect(overcommit).To(BeEquivalentTo(150))

		By("neither profile sees the other's apply as drift")
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseCompleted))
	})
})
