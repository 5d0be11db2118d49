package plan_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// selectingPool is a MachineConfigPool whose machineConfigSelector (an atomic map: whoever
// sets it owns all of it) matches the given role.
func selectingPool(name, role string) *unstructured.Unstructured {
	p := pool(name, role, "")
	unstructured.RemoveNestedField(p.Object, "spec", "configuration")
	return p
}

func poolItem(name, role string) plan.Item {
	return plan.Item{
		Name:    "select-" + role,
		Desired: selectingPool(name, role),
		Impact:  advisorv1alpha1.ImpactHigh,
		Message: "MachineConfigPool " + name + " selects the " + role + " MachineConfigs",
	}
}

var _ = Describe("Conflicts inside an atomic map", func() {
	It("shows the atomic map another manager owns as the conflict, and the apply takes it over only as shown", func() {
		createAsOtherManager(selectingPool("atomic-pool", "worker"))

		pi := draftOne(poolItem("atomic-pool", "infra"))
		Expect(pi.Conflicts).To(ConsistOf(advisorv1alpha1.FieldConflict{
			Path:         "spec.machineConfigSelector",
			Manager:      otherManager,
			LiveValue:    `{"matchLabels":{"machineconfiguration.openshift.io/role":"worker"}}`,
			PlannedValue: `{"matchLabels":{"machineconfiguration.openshift.io/role":"infra"}}`,
		}), "setting a key inside the map takes the whole map from the manager that set it")
		Expect(pi.Message).To(ContainSubstring("approving it takes over fields another manager owns"))

		out, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Applied).To(BeTrue(), "the approved plan showed the conflict: its apply takes the map over")
		role, _, _ := unstructured.NestedString(live(selectingPool("atomic-pool", "")).Object,
			"spec", "machineConfigSelector", "matchLabels", roleLabelKey)
		Expect(role).To(Equal("infra"))
	})

	It("finds no conflict when the other manager's atomic map already holds the planned value", func() {
		createAsOtherManager(selectingPool("shared-pool", "worker"))

		pi := draftOne(poolItem("shared-pool", "worker"))
		Expect(pi.Conflicts).To(BeEmpty(), "both managers set the same map: they share it")
	})

	It("checks the conflict again when the target changed elsewhere since the review, and takes over only the map shown", func() {
		target := selectingPool("relabelled-pool", "worker")
		createAsOtherManager(target)
		pi := draftOne(poolItem("relabelled-pool", "infra"))
		Expect(pi.Conflicts).To(HaveLen(1))

		// A change outside what the plan sets: the conflicts are checked again, not assumed.
		patchAsOtherManager(target, `{"metadata":{"labels":{"team":"a"}}}`)
		out, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeFalse(), out.StaleReason)
		Expect(out.Applied).To(BeTrue())
		got := live(target)
		Expect(got.GetLabels()).To(HaveKeyWithValue("team", "a"))
		role, _, _ := unstructured.NestedString(got.Object,
			"spec", "machineConfigSelector", "matchLabels", roleLabelKey)
		Expect(role).To(Equal("infra"))
	})
})
