package controller_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// requestHooks runs a test's action right before a chosen request of the operator is
// sent: what the action changes is in place when that request reaches the API server.
type requestHooks struct {
	mu    sync.Mutex
	hooks []*requestHook
}

type requestHook struct {
	method, pathFragment string
	run                  func()
	done                 bool
}

var hooks = &requestHooks{}

var _ = BeforeEach(func() {
	hooks.mu.Lock()
	hooks.hooks = nil
	hooks.mu.Unlock()
})

// before runs fn once, right before the first request (not a dry-run) with that method
// whose path contains the fragment is sent.
func (h *requestHooks) before(method, pathFragment string, fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hooks = append(h.hooks, &requestHook{method: method, pathFragment: pathFragment, run: fn})
}

// due takes the hooks a request meets.
func (h *requestHooks) due(req *http.Request) []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []func()
	for _, hk := range h.hooks {
		if !hk.done && req.Method == hk.method && strings.Contains(req.URL.Path, hk.pathFragment) && req.URL.Query().Get("dryRun") == "" {
			hk.done = true
			out = append(out, hk.run)
		}
	}
	return out
}

func (h *requestHooks) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		for _, fn := range h.due(req) {
			fn()
		}
		return rt.RoundTrip(req)
	})
}

// driftPSI changes the PSI MachineConfig's kernel arguments out of band.
func driftPSI() {
	GinkgoHelper()
	kubectl("patch", "machineconfig", psiKey.Name, "--type=merge", "-p", `{"spec":{"kernelArguments":["psi=0"]}}`)
}

func psiArguments() []string {
	GinkgoHelper()
	args, _, _ := unstructured.NestedStringSlice(read(mcGVK, psiKey).Object, "spec", "kernelArguments")
	return args
}

var _ = Describe("The write gate", func() {
	BeforeEach(resetCluster)

	It("rule 13: an aggressive drift correction writes the correction only, never an operator upgrade nobody approved", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})

		By("an older operator had applied an hourly interval: this version offers 60 s as an upgrade")
		olderOperatorApplied(3600)
		poke()
		upgrade := waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)
		Expect(item(upgrade, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemPending))

		By("the PSI MachineConfig drifts, the pool renders the drift, and aggressive mode corrects it")
		hooks.before(http.MethodGet, "/machineconfigpools", func() {
			// The Machine Config Operator renders the drifted MachineConfig within seconds.
			_ = rollOutWorkers()
		})
		driftPSI()
		Eventually(psiArguments).Should(Equal([]string{"psi=1"}))
		rolloutPool()

		By("the upgrade still waits for its approval, and its target was never written")
		back := waitPhase(advisorv1alpha1.PhaseCompletedWithUpgrade)
		Expect(item(back, loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemPending))
		Expect(item(back, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(back.Status.Approval.Command).To(ContainSubstring(back.Status.PlanHash))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(3600), "an upgrade is applied only after its approval")
	})

	It("rule 13: an aggressive drift correction does not retry a failed item", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply, BypassOptimisticLock: true,
			FailurePolicy: advisorv1alpha1.FailurePolicyContinue})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		degradePool("node worker-0 failed to apply the kernel arguments")
		failed := waitPhase(advisorv1alpha1.PhaseCompletedWithErrors)
		failedAt := item(failed, loadaware.ItemPSI).LastTransitionTime
		// An hour later: a state change of the failed item would carry a later time.
		clock.Advance(time.Hour)

		By("the KubeDescheduler drifts: aggressive mode corrects it and leaves the failed item failed")
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)
		Eventually(deschedulerInterval).Should(BeEquivalentTo(60))
		back := waitPhase(advisorv1alpha1.PhaseCompletedWithErrors)
		Expect(item(back, loadaware.ItemPSI).State).To(Equal(advisorv1alpha1.ItemFailed))
		Expect(item(back, loadaware.ItemPSI).LastTransitionTime).To(Equal(failedAt), "the failed item was never retried")
		Consistently(func() advisorv1alpha1.ItemState { return itemState(loadaware.ItemPSI) }).Should(Equal(advisorv1alpha1.ItemFailed))
	})

	It("rule 13: mode unmanaged set while an aggressive correction is under way stops its write", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{BypassOptimisticLock: true})

		By("the user opts the KubeDescheduler out while the correction's write is on its way")
		hooks.before(http.MethodPatch, "/kubedeschedulers/cluster", func() {
			_, _ = run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "annotate", "kubedescheduler", "cluster",
				"-n", loadaware.DeschedulerNamespace, plan.ModeAnnotation+"="+plan.ModeUnmanaged)
		})
		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)

		Eventually(itemState).WithArguments(loadaware.ItemDescheduler).Should(Equal(advisorv1alpha1.ItemSkipped))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(999), "a target the user took back is never written")
	})

	It("rule 13: a straight Apply that takes fields a GitOps tool owns waits for an approval given after the conflict was shown", func() {
		applyAsArgoCD()
		createConfigAsIs(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})

		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonFieldConflicts))
		Expect(vpc.Status.Approval.Command).To(ContainSubstring(vpc.Status.PlanHash))
		Expect(item(vpc, loadaware.ItemDescheduler).Conflicts).To(ContainElement(HaveField("Manager", "argocd")))
		Consistently(deschedulerInterval).Should(BeEquivalentTo(1800), "nothing is taken before the conflict was shown and approved")

		runApprovalCommand()
		Eventually(deschedulerInterval).Should(BeEquivalentTo(60))
	})

	It("rule 13: a plan drafted after a refused plan is shown before it runs, even when the action is Apply", func() {
		rejectDeschedulerWrites()
		createConfigAsIs(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		failed := waitPhase(advisorv1alpha1.PhaseFailed)
		Expect(conditionReason(failed, advisorv1alpha1.ConditionFailed)).To(Equal(advisorv1alpha1.ReasonPlanRejected))

		By("the refusal is lifted and the spec touched, as the message says")
		liftAdmissionPolicies()
		mark := requests.mark()
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":120}}}`)
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
		noTargetWritesSince(mark)

		runApprovalCommand()
		Eventually(deschedulerInterval).Should(BeEquivalentTo(120))
	})

	It("rule 7: a Failed config still reports drift of the targets it applied before the failure", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionApply})
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		degradePool("node worker-0 failed to apply the kernel arguments")
		waitPhase(advisorv1alpha1.PhaseFailed)

		editDescheduler(`{"spec":{"deschedulingIntervalSeconds":999}}`)
		Eventually(func() string { return item(getConfig(), loadaware.ItemDescheduler).Diff }).Should(
			And(ContainSubstring("-  deschedulingIntervalSeconds: 999"), ContainSubstring("+  deschedulingIntervalSeconds: 60")))
		Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.ReasonDriftDetected))
		vpc := getConfig()
		Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseFailed))
		_, msg := conditionText(vpc, advisorv1alpha1.ConditionFailed)
		Expect(msg).To(And(ContainSubstring("drifted"), ContainSubstring(vpc.Status.PlanHash)))
		Expect(deschedulerInterval()).To(BeEquivalentTo(999), "a Failed config reports drift; it corrects nothing without approval")
	})
})
