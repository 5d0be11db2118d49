package controller_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// machineConfigKernelArguments reads a MachineConfig's kernel arguments.
func machineConfigKernelArguments(name string) []string {
	GinkgoHelper()
	mc := read(mcGVK, types.NamespacedName{Name: name})
	if mc == nil {
		return nil
	}
	args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	return args
}

func driftPSIByHand() {
	GinkgoHelper()
	kubectl("patch", "mc", loadaware.PSIMachineConfigName, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
}

var _ = Describe("Aggressive drift corrections that roll out to nodes", func() {
	BeforeEach(resetCluster)

	It("a correction of a MachineConfig is held by the maintenance window, then rolls out behind a pool pause", func() {
		clock.Advance(time.Hour) // a full token bucket for every target
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})
		patchSpec(`{"maintenanceWindow":{"schedule":"0 0 1 1 *","duration":"1h"}}`)
		waitPhase(advisorv1alpha1.PhaseCompleted)

		mark := requests.mark()
		driftPSIByHand()
		Eventually(inProgressReason).Should(Equal(advisorv1alpha1.ReasonAwaitingMaintenanceWindow),
			"the correction rolls out to nodes: it waits for the window like any batch")
		Consistently(machineConfigKernelArguments).WithArguments(loadaware.PSIMachineConfigName).Should(Equal([]string{"psi=0"}))
		Expect(requests.writesSince(mark, "machineconfigpools")).To(BeEmpty())

		By("the window opens: the pool is paused before the correction is written")
		patchSpec(`{"maintenanceWindow":{"schedule":"* * * * *","duration":"1h"}}`)
		Eventually(machineConfigKernelArguments).WithArguments(loadaware.PSIMachineConfigName).Should(Equal([]string{"psi=1"}))
		writes := requests.writesSince(mark)
		pause := indexOf(writes, "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker")
		apply := indexOf(writes, "PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigs/"+loadaware.PSIMachineConfigName)
		Expect(pause).To(BeNumerically(">=", 0), "writes: %v", writes)
		Expect(apply).To(BeNumerically(">", pause), "writes: %v", writes)
		rolloutPool()
		waitPhase(advisorv1alpha1.PhaseCompleted)
		Eventually(poolReleased).Should(Succeed())
	})

	It("a drift correction that rolls out to nodes shows its own forecast, also after a plan that forecast none", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		By("a spec change redrafts a plan whose targets all match: it forecasts no rollout")
		patchSpec(`{"waitTimeout":"2h"}`)
		Eventually(func(g Gomega) {
			g.Expect(waitPhase(advisorv1alpha1.PhaseCompleted).Status.Disruption).To(BeEmpty())
		}).Should(Succeed())

		driftPSIByHand()
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		Expect(drifted.Status.Rollouts).To(ContainElement(And(HaveField("Pool", "worker"),
			HaveField("Items", ConsistOf(loadaware.ItemPSI)), HaveField("Pause", BeTrue()), HaveField("Reboot", BeTrue()))))
		Expect(drifted.Status.Disruption).To(MatchRegexp(`^reboots \d+ worker node\(s\) once, in \d+ wave\(s\)$`))
		Expect(conditionMessage(drifted, advisorv1alpha1.ConditionDrifted)).To(ContainSubstring("approving it " + drifted.Status.Disruption))
	})

	It("a correction in a batch that also holds a pending upgrade applies the correction only, and the upgrade waits for its review", func() {
		clock.Advance(time.Hour)
		probeRollsOut()
		probeSecondKernelArgs.Store(1)
		DeferCleanup(func() { probeSecondKernelArgs.Store(0) })
		DeferCleanup(deleteAndWait, object(mcGVK, types.NamespacedName{Name: probeSecondMachineConfig}))
		probe := &advisorv1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{Name: probeName},
			Spec: advisorv1alpha1.VirtPlatformConfigSpec{Profile: advisorv1alpha1.ProfilePlatformBaseline,
				Action: advisorv1alpha1.ActionDryRun, BypassOptimisticLock: true},
		}
		deleteAndWait(probe.DeepCopy())
		Expect(k8s.Create(ctx, probe)).To(Succeed())
		DeferCleanup(deleteAndWait, probe.DeepCopy())
		waitProbe(advisorv1alpha1.PhaseReviewRequired)
		patchProbe(`{"action":"Apply"}`)
		Eventually(func(g Gomega) {
			g.Expect(getProbe().Status.Items).To(ContainElement(And(
				HaveField("Name", "probe-kernel-args-2"), HaveField("State", advisorv1alpha1.ItemInProgress))))
		}).Should(Succeed())
		rolloutPool()
		waitProbe(advisorv1alpha1.PhaseCompleted)

		By("an older operator version had applied probe2=0")
		completed := getProbe().Status
		var old map[string]any
		Expect(json.Unmarshal(item(&advisorv1alpha1.VirtPlatformConfig{Status: completed}, "probe-kernel-args-2").DesiredState.Raw, &old)).To(Succeed())
		Expect(unstructured.SetNestedStringSlice(old, []string{"probe2=0"}, "spec", "kernelArguments")).To(Succeed())
		raw, err := json.Marshal(old)
		Expect(err).NotTo(HaveOccurred())
		oldApply := &unstructured.Unstructured{Object: old}
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(oldApply.DeepCopy()),
			client.FieldOwner(plan.FieldManagerFor(probeName)), client.ForceOwnership)).To(Succeed())
		live := read(mcGVK, types.NamespacedName{Name: probeSecondMachineConfig})
		older := completed.DeepCopy()
		older.OperatorVersion = "v0.9.0"
		for i := range older.Items {
			if it := &older.Items[i]; it.Name == "probe-kernel-args-2" {
				it.DesiredState = &runtime.RawExtension{Raw: raw}
				it.Applied.Hash = plan.ValuesHash(oldApply, live)
				it.Applied.DesiredHash = plan.DesiredHash([]advisorv1alpha1.PlanItem{{Name: it.Name, DesiredState: it.DesiredState}})
			}
		}
		Eventually(func() error {
			vpc := getProbe()
			vpc.Status = *older.DeepCopy()
			return k8s.Status().Update(ctx, vpc)
		}).Should(Succeed())
		kubectl("annotate", "vpc", probeName, "--overwrite", "test/poke=upgrade")
		upgrade := waitProbe(advisorv1alpha1.PhaseCompletedWithUpgrade)
		Expect(item(upgrade, "probe-kernel-args-2").State).To(Equal(advisorv1alpha1.ItemPending))

		By("the first MachineConfig drifts: its correction is applied, the upgrade is not")
		kubectl("patch", "mc", probeMachineConfig, "--type=merge", "-p", `{"spec":{"kernelArguments":["probe=0"]}}`)
		Eventually(machineConfigKernelArguments).WithArguments(probeMachineConfig).Should(Equal([]string{"probe=1"}))
		Consistently(func() advisorv1alpha1.Phase { return getProbe().Status.Phase }).ShouldNot(Equal(advisorv1alpha1.PhaseReviewRequired))
		Expect(machineConfigKernelArguments(probeSecondMachineConfig)).To(Equal([]string{"probe2=0"}), "the upgrade is never written without its review")
		rolloutPool()
		back := waitProbe(advisorv1alpha1.PhaseCompletedWithUpgrade)
		Expect(item(back, "probe-kernel-args").State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(item(back, "probe-kernel-args-2").State).To(Equal(advisorv1alpha1.ItemPending))
		Eventually(poolReleased).Should(Succeed())
	})
})
