package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// completedConfig creates the config with action Apply and brings it to Completed.
func completedConfig(spec advisorv1alpha1.VirtPlatformConfigSpec) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	spec.Action = advisorv1alpha1.ActionApply
	createConfig(spec)
	Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
	rolloutPool()
	return waitPhase(advisorv1alpha1.PhaseCompleted)
}

var _ = Describe("Watching a completed plan", func() {
	BeforeEach(resetCluster)

	It("rule 7: an out-of-band change of a managed field makes the config Drifted; reverting it makes it Completed again", func() {
		completed := completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		driftsBefore := metricValue("virt_advisor_drift_detected_total", nil)

		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		expectConditions(drifted, "Drifted")
		it := item(drifted, loadaware.ItemDescheduler)
		Expect(it.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(it.Message).To(ContainSubstring("spec.deschedulingIntervalSeconds changed out of band"))
		Expect(it.Diff).To(And(ContainSubstring("-  deschedulingIntervalSeconds: 999"), ContainSubstring("+  deschedulingIntervalSeconds: 60")))
		Expect(item(drifted, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(drifted.Status.ItemsSummary).To(Equal("1/2"))
		Eventually(eventReasons).Should(ContainElement("Drifted"))
		Expect(metricValue("virt_advisor_drift_detected_total", nil)).To(Equal(driftsBefore + 1))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(999), "without bypassOptimisticLock drift is shown, not corrected")

		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":60}}`)
		back := waitPhase(advisorv1alpha1.PhaseCompleted)
		expectConditions(back, "Completed", "Ready")
		Expect(item(back, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(item(back, loadaware.ItemDescheduler).Diff).To(Equal(plan.NoChanges))
		Expect(item(back, loadaware.ItemPSI).Diff).To(Equal(item(completed, loadaware.ItemPSI).Diff), "items that never drifted keep their diff")
	})

	It("rule 7: an applied target changed while a later item waits for its rollout ends the execution Drifted, never Completed", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(itemState(loadaware.ItemDescheduler)).To(Equal(advisorv1alpha1.ItemCompleted))

		By("another field manager changes the first item's target while the MachineConfig waits for its pool")
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseInProgress))

		By("the pool rolls the MachineConfig out: the execution ends, and the drift is what it ends in")
		rolloutPool()
		drifted := waitPhase(advisorv1alpha1.PhaseDrifted)
		expectConditions(drifted, "Drifted")
		Expect(item(drifted, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
		it := item(drifted, loadaware.ItemDescheduler)
		Expect(it.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(it.Message).To(ContainSubstring("spec.deschedulingIntervalSeconds changed out of band"))
		Expect(it.Diff).To(And(ContainSubstring("-  deschedulingIntervalSeconds: 999"), ContainSubstring("+  deschedulingIntervalSeconds: 60")))
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseDrifted))
		Expect(deschedulerInterval()).To(BeEquivalentTo(999), "without bypassOptimisticLock drift is shown, not corrected")

		By("the phase history goes from InProgress to Drifted: Completed was never reported")
		Eventually(eventNotes).WithArguments("Drifted").Should(ContainElement(HavePrefix("InProgress -> Drifted")))
		Expect(eventReasons()).NotTo(ContainElement(string(advisorv1alpha1.PhaseCompleted)))
	})

	It("rule 7: a change of a field the plan does not manage is no drift", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		editDescheduler(`{"spec":{"logLevel":"Debug"}}`)
		Consistently(phase).Should(Equal(advisorv1alpha1.PhaseCompleted))
	})

	It("rule 7: an approved correction re-applies the drifted item only", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		mcVersion := read(mcGVK, psiKey).GetResourceVersion()
		editDescheduler(`{"spec":{"profiles":["AffinityAndTaints"]}}`)
		waitPhase(advisorv1alpha1.PhaseDrifted)
		approve()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(descheduler().Object["spec"].(map[string]any)["profiles"]).To(Equal(
			[]any{"AffinityAndTaints", "SoftTopologyAndDuplicates", "KubeVirtRelieveAndMigrate"}), "the reviewed desired state is applied again")
		Expect(read(mcGVK, psiKey).GetResourceVersion()).To(Equal(mcVersion))
		Expect(vpc.Status.ItemsSummary).To(Equal("2/2"))
	})

	It("rule 7: in aggressive mode drift is corrected by re-applying, throttled per target, and repeated throttling stops it as Thrashing", func() {
		clock.Advance(time.Hour) // a full token bucket for every target
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})

		By("corrections within the bucket's capacity happen right away")
		for _, interval := range []string{"1001", "1002"} {
			editDescheduler(`{"spec":{"deschedulingIntervalSeconds":` + interval + `}}`)
			Eventually(deschedulerInterval).Should(BeEquivalentTo(60))
			waitPhase(advisorv1alpha1.PhaseCompleted)
		}

		By("the next ones are held back with a Throttled event, until three throttle episodes without a correction holding mean Thrashing")
		throttledBefore := metricValue("virt_advisor_throttled_total", nil)
		throttled := func() float64 { return metricValue("virt_advisor_throttled_total", nil) }
		for i, interval := range []string{"1003", "1004", "1005"} {
			editDescheduler(`{"spec":{"deschedulingIntervalSeconds":` + interval + `}}`)
			Eventually(throttled).Should(Equal(throttledBefore + float64(i+1)))
			if i == 2 {
				break
			}
			By("more events during one throttle wait are the same episode")
			poke()
			poke()
			Consistently(throttled).WithTimeout(time.Second).Should(Equal(throttledBefore + float64(i+1)))
			Expect(phase()).To(Equal(advisorv1alpha1.PhaseDrifted))
			By("once the wait is over the correction goes through, and is undone again right away")
			clock.Advance(31 * time.Second)
			poke()
			Eventually(deschedulerInterval).Should(BeEquivalentTo(60))
			waitPhase(advisorv1alpha1.PhaseCompleted)
		}
		Eventually(func() string { return conditionReason(getConfig(), "Drifted") }).Should(Equal("Thrashing"))
		thrashing := waitPhase(advisorv1alpha1.PhaseDrifted)
		expectConditions(thrashing, "Drifted")
		Eventually(eventReasons).Should(ContainElements("Throttled", "Thrashing"))
		Expect(deschedulerInterval()).To(BeEquivalentTo(1005))

		By("the config stops correcting, even when the bucket refills")
		clock.Advance(time.Hour)
		poke()
		Consistently(deschedulerInterval).Should(BeEquivalentTo(1005))

		By("a spec change resumes the corrections")
		approve()
		Eventually(deschedulerInterval).Should(BeEquivalentTo(60))
		waitPhase(advisorv1alpha1.PhaseCompleted)
	})

	It("rule 8: Ignore pauses everything: no plan, no writes to targets, no drift handling, and the phase metric says Ignored", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})
		patchSpec(`{"action":"Ignore"}`)
		ignored := waitPhase(advisorv1alpha1.PhaseIgnored)
		expectConditions(ignored, "Ignored")
		Expect(ignored.Status.Items).To(BeEmpty())
		Expect(ignored.Status.PlanHash).To(BeEmpty())
		// The phase metric follows the status write's answer, which the API can show first.
		phaseMetric := func(phase string) func() float64 {
			return func() float64 {
				return metricValue("virt_advisor_config_phase", map[string]string{"name": configName, "phase": phase})
			}
		}
		Eventually(phaseMetric("Ignored")).Should(Equal(1.0))
		Expect(phaseMetric("Completed")()).To(Equal(0.0))
		// The transition's Event is sent asynchronously: it is counted before the mark.
		Eventually(eventReasons).Should(ContainElement("Ignored"))

		mark := requests.mark()
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":1234}}`)
		poke()
		Consistently(deschedulerInterval).Should(BeEquivalentTo(1234), "an ignored config does not correct drift, even in aggressive mode")
		Expect(phase()).To(Equal(advisorv1alpha1.PhaseIgnored))
		Expect(requests.writesSince(mark)).To(BeEmpty())

		By("leaving Ignore drafts a fresh plan")
		patchSpec(`{"action":"DryRun"}`)
		resumed := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(resumed, loadaware.ItemDescheduler).Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 1234"))
		Eventually(eventReasons).Should(ContainElements("Ignored", "Pending"))
	})
})
