package controller_test

import (
	"net/http"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// serveDescheduler turns serving of the KubeDescheduler kind off or on, as uninstalling and
// reinstalling its operator would, while etcd keeps the objects.
func serveDescheduler(served bool) {
	GinkgoHelper()
	op := `[{"op":"replace","path":"/spec/versions/0/served","value":false},{"op":"replace","path":"/spec/versions/0/storage","value":true}]`
	if served {
		op = `[{"op":"replace","path":"/spec/versions/0/served","value":true}]`
	}
	kubectl("patch", "crd", loadaware.DeschedulerCRD, "--type=json", "-p", op)
	Eventually(func() bool {
		_, err := run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "get", "kubedeschedulers.operator.openshift.io", "-A")
		return err == nil
	}).Should(Equal(served))
}

var _ = Describe("Targets whose kind goes away", func() {
	BeforeEach(resetCluster)

	It("rule 9: a target's kind that is no longer served after Completed makes the config PrerequisiteFailed, Ready False, naming the operator to reinstall; when it is back nothing is written", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		DeferCleanup(serveDescheduler, true)
		serveDescheduler(false)

		vpc := waitPhase(advisorv1alpha1.PhasePrerequisiteFailed)
		expectConditions(vpc, advisorv1alpha1.ConditionPrerequisiteFailed)
		Eventually(func() string { return conditionReason(getConfig(), advisorv1alpha1.ConditionPrerequisiteFailed) }).
			Should(Equal(advisorv1alpha1.ReasonTargetUnavailable))
		Expect(getConfig().Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("reinstall the Kube Descheduler Operator"))))
		Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.ReasonTargetUnavailable))
		Expect(getConfig().Status.Items).To(HaveLen(2), "the applied plan is kept")

		By("the operator is back, the target as it was: Completed again, no write to any target")
		mark := requests.mark()
		serveDescheduler(true)
		back := waitPhase(advisorv1alpha1.PhaseCompleted)
		expectConditions(back, advisorv1alpha1.ConditionCompleted, advisorv1alpha1.ConditionReady)
		noTargetWritesSince(mark)
	})

	It("rule 9: the 404 the API server answers while it does not serve a kind yet is retried, never taken for a missing target or input", func() {
		completed := completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		mark := requests.mark()
		path := "/namespaces/" + loadaware.DeschedulerNamespace + "/kubedeschedulers/" + loadaware.DeschedulerName
		// The first read of each of the reconcile's two readers (targets, and what the
		// profile renders from).
		notServed := faults.answerNotServed(http.MethodGet, path, 2)
		DeferCleanup(faults.clear)
		poke()

		Eventually(notServed.fired).Should(BeClosed())
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseCompleted), "the target is not taken for deleted")
		Eventually(func() bool { return faults.passed(notServed) }).Should(BeTrue(), "the read is retried")
		after := getConfig()
		Expect(after.Status.InputsHash).To(Equal(completed.Status.InputsHash))
		Expect(after.Status.PlanHash).To(Equal(completed.Status.PlanHash))
		Expect(eventReasons()).NotTo(ContainElement(BeElementOf(advisorv1alpha1.ReasonInputDependencyDrift, "Drifted")))
		noTargetWritesSince(mark)
	})

	It("watches drift while an upgrade is offered: an out-of-band change makes the config Drifted, and Ready False", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		olderOperatorApplied(3600)
		poke()
		waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)

		kubectl("patch", "machineconfig", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		expectConditions(drifted, advisorv1alpha1.ConditionDrifted)
		Expect(item(drifted, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(item(drifted, loadaware.ItemPSI).Diff).To(ContainSubstring("+  - psi=1"))

		By("reverting the change offers the upgrade again")
		kubectl("patch", "machineconfig", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=1"]}}`)
		waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)
	})
})
