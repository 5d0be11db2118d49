package controller_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// pretendOlderOperator rewrites a completed config's status as an older operator version
// would have left it, with the given change to the KubeDescheduler item.
func pretendOlderOperator(change func(it *advisorv1alpha1.PlanItem)) {
	GinkgoHelper()
	vpc := getConfig()
	before := vpc.DeepCopy()
	vpc.Status.OperatorVersion = "v0.9.0"
	for i := range vpc.Status.Items {
		if vpc.Status.Items[i].Name == loadaware.ItemDescheduler {
			change(&vpc.Status.Items[i])
		}
	}
	Expect(k8s.Status().Patch(ctx, vpc, client.MergeFrom(before))).To(Succeed())
}

// olderOperatorApplied makes the completed config look as if an older operator version had
// drafted and applied another descheduling interval.
func olderOperatorApplied(interval int64) {
	GinkgoHelper()
	var old map[string]any
	pretendOlderOperator(func(it *advisorv1alpha1.PlanItem) {
		Expect(json.Unmarshal(it.DesiredState.Raw, &old)).To(Succeed())
		Expect(unstructured.SetNestedField(old, interval, "spec", "deschedulingIntervalSeconds")).To(Succeed())
		raw, err := json.Marshal(old)
		Expect(err).NotTo(HaveOccurred())
		it.DesiredState = &runtime.RawExtension{Raw: raw}
	})
	oldApply := &unstructured.Unstructured{Object: old}
	Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(oldApply.DeepCopy()), client.FieldOwner(plan.FieldManagerFor(configName)), client.ForceOwnership)).To(Succeed())
	// The older operator recorded what its apply left, as every version does.
	live := read(deschedulerGVK, deschedulerKey)
	pretendOlderOperator(func(it *advisorv1alpha1.PlanItem) {
		it.Applied.Hash = plan.ValuesHash(oldApply, live)
		it.Applied.DesiredHash = plan.DesiredHash([]advisorv1alpha1.PlanItem{{Name: it.Name, DesiredState: it.DesiredState}})
	})
}

var _ = Describe("Operator upgrades", func() {
	BeforeEach(resetCluster)

	It("rule 10: a newer operator that renders different desired states offers them as CompletedWithUpgrade", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})

		By("an older operator had applied an hourly interval")
		olderOperatorApplied(3600)
		poke()

		upgrade := waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)
		expectConditions(upgrade, "Completed", "UpgradeAvailable", "Ready")
		Expect(upgrade.Status.OperatorVersion).To(Equal(operatorVersion))
		it := item(upgrade, loadaware.ItemDescheduler)
		Expect(it.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(it.Diff).To(And(ContainSubstring("-  deschedulingIntervalSeconds: 3600"), ContainSubstring("+  deschedulingIntervalSeconds: 60")))
		Expect(item(upgrade, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(3600), "an operator upgrade never writes without approval")

		By("approving the upgraded plan applies it")
		approve()
		done := waitPhase(advisorv1alpha1.PhaseCompleted)
		expectConditions(done, "Completed", "Ready")
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
	})

	It("rule 10: compares desired content only: another impact or message text is no upgrade", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		pretendOlderOperator(func(it *advisorv1alpha1.PlanItem) {
			it.ImpactSeverity = advisorv1alpha1.ImpactHigh
			it.Message = "worded differently by an older operator"
		})
		poke()
		Eventually(func() string { return getConfig().Status.OperatorVersion }).Should(Equal(operatorVersion))
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		expectConditions(vpc, "Completed", "Ready")
	})
})
