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
	writeStatus(olderStatus(getConfig().Status, change))
}

// olderStatus is st as an older operator version would have written it, with the given
// change to the KubeDescheduler item.
func olderStatus(st advisorv1alpha1.VirtPlatformConfigStatus, change func(it *advisorv1alpha1.PlanItem)) advisorv1alpha1.VirtPlatformConfigStatus {
	out := st.DeepCopy()
	out.OperatorVersion = "v0.9.0"
	for i := range out.Items {
		if out.Items[i].Name == loadaware.ItemDescheduler {
			change(&out.Items[i])
		}
	}
	return *out
}

// writeStatus replaces the config's whole status with st, guarded by the resourceVersion
// and written again on a conflict: whatever the running operator wrote in between, the
// status ends exactly as st.
func writeStatus(st advisorv1alpha1.VirtPlatformConfigStatus) {
	GinkgoHelper()
	Eventually(func() error {
		vpc := getConfig()
		vpc.Status = *st.DeepCopy()
		return k8s.Status().Update(ctx, vpc)
	}).Should(Succeed())
}

// olderOperatorApplied makes the completed config look as if an older operator version had
// drafted and applied another descheduling interval. The status is taken before the
// apply: the operator may see the apply as drift and say so before the status is written.
func olderOperatorApplied(interval int64) {
	GinkgoHelper()
	completed := getConfig().Status
	var old map[string]any
	Expect(json.Unmarshal(item(&advisorv1alpha1.VirtPlatformConfig{Status: completed}, loadaware.ItemDescheduler).DesiredState.Raw, &old)).To(Succeed())
	Expect(unstructured.SetNestedField(old, interval, "spec", "deschedulingIntervalSeconds")).To(Succeed())
	raw, err := json.Marshal(old)
	Expect(err).NotTo(HaveOccurred())
	oldApply := &unstructured.Unstructured{Object: old}
	Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(oldApply.DeepCopy()), client.FieldOwner(plan.FieldManagerFor(configName)), client.ForceOwnership)).To(Succeed())
	// The older operator recorded what its apply left, as every version does.
	live := read(deschedulerGVK, deschedulerKey)
	writeStatus(olderStatus(completed, func(it *advisorv1alpha1.PlanItem) {
		it.DesiredState = &runtime.RawExtension{Raw: raw}
		it.Applied.Hash = plan.ValuesHash(oldApply, live)
		it.Applied.DesiredHash = plan.DesiredHash([]advisorv1alpha1.PlanItem{{Name: it.Name, DesiredState: it.DesiredState}})
	}))
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
