package faults

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var _ = Describe("Deletions during execution", Ordered, func() {
	var m *manager
	var metricsURL string

	BeforeAll(func() {
		const ns = "faults-deletion"
		createNamespace(ns)
		addr := freeAddress()
		metricsURL = "http://" + addr + "/metrics"
		m = startManager("deletion", userKubeconfig("faults-deletion-manager"), managerOptions{namespace: ns, metricsAddr: addr})
	})
	BeforeEach(resetCluster)

	It("reports a target deleted while a later item waits as drift with the correction to review, completes the later item, and re-creates the target once the correction is approved", func() {
		mark := audit.mark()
		// The plan takes fields the mock baseline set with kubectl apply: it is approved
		// after it was shown (FieldConflicts), whatever the action it was created with.
		createConfig(advisorv1alpha1.ActionDryRun, nil)
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
		approve()
		waitingForPool(time.Minute)

		By("deleting the KubeDescheduler while the MachineConfig item waits for its pool, then rolling the pool out")
		testenv.DeleteAndWait(ctx, k8s, testenv.Object(deschedulerGVK, deschedulerKey))
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseDrifted, time.Minute)
		drifted := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionDrifted)
		Expect(drifted.Reason).To(Equal(advisorv1alpha1.ReasonDriftDetected))
		Expect(drifted.Message).To(ContainSubstring("enable-load-aware-descheduling (KubeDescheduler cluster"))
		Expect(drifted.Message).To(ContainSubstring(`"approvedPlanHash":"` + vpc.Status.PlanHash + `"`))
		Expect(meta.IsStatusConditionFalse(vpc.Status.Conditions, advisorv1alpha1.ConditionReady)).To(BeTrue())
		descheduler := testenv.Item(vpc, loadaware.ItemDescheduler)
		Expect(descheduler.State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(descheduler.Message).To(HavePrefix("drifted:"))
		Expect(descheduler.Diff).To(HavePrefix("--- /dev/null"), "the correction re-creates the KubeDescheduler")
		Expect(descheduler.Diff).To(ContainSubstring("+  - KubeVirtRelieveAndMigrate"))
		Expect(testenv.Item(vpc, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted), "the later item is not lost")
		Expect(vpc.Status.ItemsSummary).To(Equal("1/2"))
		Expect(eventReasons()).To(ContainElement(string(advisorv1alpha1.PhaseDrifted)))
		Consistently(func() bool { return testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey) == nil }).Should(BeTrue(),
			"nothing re-creates the KubeDescheduler before the correction is approved")
		Expect(appliesOf(mark, deschedulerTarget)).To(HaveLen(1))

		By("approving the correction shown")
		kubectl("patch", "vpc", configName, "--type=merge", "-p",
			fmt.Sprintf(`{"spec":{"action":"Apply","approvedPlanHash":%q}}`, vpc.Status.PlanHash))
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted, time.Minute)
		expectCompletedAsPlanned(vpc)

		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(2), "the plan's apply, then the approved correction")
		Expect(counts[psiTarget].applied).To(Equal(1))
		m.reportProcesses(1)
	})

	It("stops when the VirtPlatformConfig is deleted during execution: no further apply, what was applied stays, no metric series is left", func() {
		createConfig(advisorv1alpha1.ActionDryRun, map[string]string{holdLabel: "true"})
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
		holdStatusOnceApplied(loadaware.ItemDescheduler)
		Expect(configSeries(metricsURL)).NotTo(BeEmpty(), "the config has metric series while it exists")
		mark := audit.mark()

		By("approving: the KubeDescheduler is applied, the execution is held before the MachineConfig item")
		approve()
		waitAppliedNotRecorded(mark, deschedulerTarget)

		By("deleting the VirtPlatformConfig, then lifting the hold")
		testenv.DeleteAndWait(ctx, k8s, &advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: configName}})
		deleted := audit.mark()
		liftPolicies()
		Eventually(func() []string { return configSeries(metricsURL) }).Should(BeEmpty(), "metric series of the deleted config remain")
		Consistently(func(g Gomega) {
			g.Expect(applies(deleted)).To(BeEmpty(), "the operator applied after the config was deleted")
			g.Expect(configSeries(metricsURL)).To(BeEmpty(), "metric series of the deleted config came back")
		}).WithTimeout(5 * time.Second).Should(Succeed())
		// A reconcile that read the config just before the delete may still try its status
		// write, which finds the config gone; nothing the operator sends after the delete
		// is accepted, except renewing its lease.
		for _, e := range audit.since(deleted) {
			if e.User.Username != "faults-deletion-manager" || e.Verb == "get" || e.Verb == "list" || e.Verb == "watch" ||
				(e.ObjectRef != nil && e.ObjectRef.Resource == "leases") {
				continue
			}
			Expect(e.ok()).To(BeFalse(), "the operator wrote after the config was deleted: %s %s", e.Verb, e.RequestURI)
			By(fmt.Sprintf("refused after the delete: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code))
		}

		Expect(testenv.Read(ctx, k8s, mcGVK, psiKey)).To(BeNil(), "the MachineConfig item never ran")
		Expect(deschedulerProfiles()).To(Equal(appliedProfiles), "what was applied stays")
		Expect(testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey).GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "virt-advisor-operator"))
		Expect(testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey).GetManagedFields()).To(ContainElement(
			HaveField("Manager", plan.FieldManagerFor(string(advisorv1alpha1.ProfileLoadAwareRebalancing)))), "the profile still co-owns what it applied")
		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(1))
		Expect(counts).NotTo(HaveKey(psiTarget))
		m.reportProcesses(1)
	})
})

// freeAddress returns a loopback address with a port nothing listens on.
func freeAddress() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}

// configSeries scrapes the manager's metrics and returns the virt_advisor_ series of the config.
func configSeries(url string) []string {
	GinkgoHelper()
	var body string
	Eventually(func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		data, err := io.ReadAll(resp.Body)
		body = string(data)
		return err
	}).Should(Succeed())
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "virt_advisor_") && strings.Contains(line, `name="`+configName+`"`) {
			out = append(out, line)
		}
	}
	return out
}
