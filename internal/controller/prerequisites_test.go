package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("Prerequisites", func() {
	BeforeEach(resetCluster)

	It("rule 9: a missing CRD makes the config PrerequisiteFailed naming the operator to install; when the CRD appears it proceeds without a restart", func() {
		deleteDeschedulerCRD()
		DeferCleanup(func() {
			_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testenv.DeschedulerCRDs("4.20")}})
			Expect(err).NotTo(HaveOccurred())
		})

		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		missing := waitPhase(advisorv1alpha1.PhasePrerequisiteFailed)
		expectConditions(missing, "PrerequisiteFailed")
		Expect(missing.Status.Conditions).To(ContainElement(HaveField("Message", And(
			ContainSubstring(loadaware.DeschedulerCRD), ContainSubstring("install the Kube Descheduler Operator")))))
		Expect(missing.Status.Items).To(BeEmpty())
		Expect(eventReasons()).To(ContainElement("PrerequisiteFailed"))

		By("installing the operator's CRD and its KubeDescheduler")
		_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testenv.DeschedulerCRDs("4.20")}})
		Expect(err).NotTo(HaveOccurred())
		kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))

		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(managedByOperator(descheduler())).To(BeTrue())
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		By("the new kind is watched: drift on it is seen")
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":777}}`)
		Eventually(phase).WithTimeout(90 * time.Second).Should(Equal(advisorv1alpha1.PhaseDrifted))
	})

	It("names the operator of a missing optional kind and how to do without it", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action:  advisorv1alpha1.ActionDryRun,
			Options: &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: new(bool)}},
		})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.Items).To(HaveLen(1), "without PSI metrics the plan has no MachineConfig item")
	})
})
