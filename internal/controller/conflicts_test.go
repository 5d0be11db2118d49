package controller_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// ownsField tells whether manager owns spec.<field> of obj.
func ownsField(obj *unstructured.Unstructured, manager, field string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:`+field+`"`) {
			return true
		}
	}
	return false
}

// applyAsArgoCD sets the descheduling interval to 1800 as a GitOps tool does: a
// server-side apply with a field manager of its own.
func applyAsArgoCD() {
	GinkgoHelper()
	cmd := command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "apply", "--server-side",
		"--field-manager=argocd", "--force-conflicts", "-f", "-")
	cmd.Stdin = strings.NewReader(`
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}
spec: {deschedulingIntervalSeconds: 1800}`)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// deschedulerPatches lists the operator's patches of the KubeDescheduler since mark, in
// order: "dry-run" or "apply".
func deschedulerPatches(mark int) []string {
	GinkgoHelper()
	var out []string
	for _, r := range requests.since(mark) {
		if r.method == http.MethodPatch && strings.Contains(r.path, "/kubedeschedulers/") {
			if r.dryRun {
				out = append(out, "dry-run")
			} else {
				out = append(out, "apply")
			}
		}
	}
	return out
}

var _ = Describe("Conflicts with other field managers", func() {
	BeforeEach(resetCluster)

	It("shows a field another manager owns with another value in the plan, and takes it only by applying the approved plan", func() {
		By("a GitOps tool owns the descheduling interval")
		applyAsArgoCD()

		mark := requests.mark()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		By("the plan shows the conflict: field, manager, both values")
		it := item(vpc, loadaware.ItemDescheduler)
		Expect(it.Conflicts).To(ContainElement(And(
			HaveField("Path", "spec.deschedulingIntervalSeconds"), HaveField("Manager", "argocd"),
			HaveField("LiveValue", "1800"), HaveField("PlannedValue", "60"))))
		Eventually(func() []string { return eventNotes(advisorv1alpha1.EventFieldConflict) }).Should(ContainElement(And(
			ContainSubstring("spec.deschedulingIntervalSeconds"), ContainSubstring(`"argocd"`), ContainSubstring("1800"))))

		By("nothing is taken before the approval, and no request was refused")
		live := descheduler()
		Expect(ownsField(live, "argocd", "deschedulingIntervalSeconds")).To(BeTrue())
		Expect(managedByOperator(live)).To(BeFalse())
		for _, r := range requests.since(mark) {
			Expect(r.status).NotTo(Equal(409), "%s %s was refused with a conflict", r.method, r.path)
		}

		By("applying the approved plan takes it over, with one request: the target is the version the conflict was found on")
		Expect(it.ConflictsFoundOn).To(Equal(live.GetResourceVersion()))
		mark = requests.mark()
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		live = descheduler()
		Expect(ownsField(live, plan.FieldManagerFor(configName), "deschedulingIntervalSeconds")).To(BeTrue())
		Expect(ownsField(live, "argocd", "deschedulingIntervalSeconds")).To(BeFalse())
		Expect(deschedulerInterval()).To(BeEquivalentTo(60))
		Expect(deschedulerPatches(mark)).To(Equal([]string{"apply"}))
	})

	It("checks the conflicts again with a dry-run when the target changed since the review outside what the plan sets", func() {
		applyAsArgoCD()
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(vpc, loadaware.ItemDescheduler).Conflicts).To(ContainElement(HaveField("Manager", "argocd")))

		By("someone labels the KubeDescheduler: no value the plan sets changes, but the target is another version")
		editDescheduler(`{"metadata":{"labels":{"team":"virt"}}}`)

		mark := requests.mark()
		runApprovalCommand()
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		Expect(deschedulerPatches(mark)).To(Equal([]string{"dry-run", "apply"}))
		live := descheduler()
		Expect(ownsField(live, plan.FieldManagerFor(configName), "deschedulingIntervalSeconds")).To(BeTrue())
		Expect(ownsField(live, "argocd", "deschedulingIntervalSeconds")).To(BeFalse())
		Expect(live.GetLabels()).To(HaveKeyWithValue("team", "virt"))
	})

	It("does not take a field another manager took after the review: the plan is drafted again", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(item(vpc, loadaware.ItemDescheduler).Conflicts).NotTo(ContainElement(HaveField("Manager", "argocd")))

		applyAsArgoCD()

		runApprovalCommand()
		Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.ReasonPlanStale))
		fresh := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(conditionReason(fresh, advisorv1alpha1.ConditionReviewRequired)).To(Equal(advisorv1alpha1.ReasonApprovalMismatch),
			"the approval pinned the reviewed plan, not the fresh one")
		Expect(item(fresh, loadaware.ItemDescheduler).Conflicts).To(ContainElement(HaveField("Manager", "argocd")))
		Expect(ownsField(descheduler(), "argocd", "deschedulingIntervalSeconds")).To(BeTrue())
		Expect(managedByOperator(descheduler())).To(BeFalse())
	})
})
