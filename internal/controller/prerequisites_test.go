package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		Eventually(eventReasons).Should(ContainElement("PrerequisiteFailed"))

		By("installing the operator's CRD: the approved plan proceeds, and creates the KubeDescheduler")
		// No KubeDescheduler is created with the CRD: the operator drafts as soon as the CRD
		// appears, so an administrator's KubeDescheduler created right after it would race
		// with the plan's.
		_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testenv.DeschedulerCRDs("4.20")}})
		Expect(err).NotTo(HaveOccurred())

		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(managedByOperator(descheduler())).To(BeTrue())
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)

		By("the new kind is watched: drift on it is seen")
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":777}}`)
		Eventually(phase).WithTimeout(90 * time.Second).Should(Equal(advisorv1alpha1.PhaseDrifted))
	})

	It("fails a config of a profile this operator version does not implement, saying to upgrade", func() {
		vpc := &advisorv1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "virt-higher-density"},
			Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: advisorv1alpha1.ProfileVirtHigherDensity},
		}
		Expect(k8s.Create(ctx, vpc)).To(Succeed())
		DeferCleanup(deleteAndWait, vpc)
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(vpc), vpc)).To(Succeed())
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseFailed))
			g.Expect(vpc.Status.Conditions).To(ContainElement(And(HaveField("Reason", "UnknownProfile"),
				HaveField("Message", ContainSubstring("upgrade the virt advisor operator")))))
		}).Should(Succeed())
	})

	It("plans no MachineConfig when PSI metrics are turned off", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{
			Action:  advisorv1alpha1.ActionDryRun,
			Options: &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: new(bool)}},
		})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.Items).To(HaveLen(1), "without PSI metrics the plan has no MachineConfig item")
	})
})
