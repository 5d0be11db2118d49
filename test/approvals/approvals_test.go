package approvals

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

const (
	configName = "load-aware-rebalancing"
	editor     = "alice"
	approver   = "bob"
	approver2  = "carol"
	// gitOps is the account ApprovalPolicy.spec.gitOpsApprovers names.
	gitOps = "system:serviceaccount:openshift-gitops:argocd-application-controller"

	editorRole   = "virt-advisor-operator-virtplatformconfig-editor-role"
	approverRole = "virt-advisor-operator-virtplatformconfig-approver-role"
)

// The specs run in order on one config, as its life goes: drafted by an editor, approved
// by approvers, changed and approved by the GitOps account, and approved with the
// policies turned off.
var _ = Describe("Approving a VirtPlatformConfig", Ordered, func() {
	BeforeAll(func() {
		kubectl("create", "clusterrolebinding", "editor", "--clusterrole="+editorRole, "--user="+editor)
		for _, u := range []string{approver, approver2, gitOps} {
			kubectl("create", "clusterrolebinding", "approver-"+strings.ReplaceAll(u, ":", "-"), "--clusterrole="+approverRole, "--user="+u)
		}
		out, err := asApply(editor, `
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata:
  name: `+configName+`
  annotations:
    advisor.kubevirt.io/approved-by: mallory
spec:
  profile: load-aware-rebalancing
  action: DryRun
  options:
    loadAware: {enablePSIMetrics: false}`)
		Expect(err).NotTo(HaveOccurred(), out)
		waitPhase(advisorv1alpha1.PhaseReviewRequired)
	})

	It("records the editor who created the config as its requester, and no approver", func() {
		ann := getConfig().Annotations
		Expect(ann).To(HaveKeyWithValue(advisorv1alpha1.RequestedByAnnotation, editor))
		Expect(ann).NotTo(HaveKey(advisorv1alpha1.ApprovedByAnnotation))
	})

	It("refuses an editor's approval, naming the approve permission", func() {
		out, err := as(editor, "patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"action":"Apply"}}`)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("approving VirtPlatformConfig " + configName +
			" (spec.action Apply, a new spec.approvedPlanHash or spec.approvedContent, or a spec change while the action is Apply) needs the verb approve on virtplatformconfigs.advisor.kubevirt.io"))
		Expect(out).To(ContainSubstring("the ClusterRole " + approverRole + " grants it"))
		Expect(getConfig().Spec.Action).To(Equal(advisorv1alpha1.ActionDryRun))
	})

	It("overwrites an editor's attempt to set, change or remove the identity annotations", func() {
		for _, args := range [][]string{
			{advisorv1alpha1.ApprovedByAnnotation + "=mallory"},
			{advisorv1alpha1.ApprovedViaAnnotation + "=gitops"},
			{advisorv1alpha1.RequestedByAnnotation + "=mallory"},
			{advisorv1alpha1.RequestedByAnnotation + "-"},
		} {
			out, err := as(editor, append([]string{"annotate", "vpc", configName, "--overwrite"}, args...)...)
			Expect(err).NotTo(HaveOccurred(), out)
			ann := getConfig().Annotations
			Expect(ann).To(HaveKeyWithValue(advisorv1alpha1.RequestedByAnnotation, editor), "after annotate %v", args)
			Expect(ann).NotTo(HaveKey(advisorv1alpha1.ApprovedByAnnotation), "after annotate %v", args)
			Expect(ann).NotTo(HaveKey(advisorv1alpha1.ApprovedViaAnnotation), "after annotate %v", args)
		}
	})

	It("lets an approver approve, and names them in status.approval and the Event", func() {
		hash := waitPhase(advisorv1alpha1.PhaseReviewRequired).Status.PlanHash
		out, err := as(approver, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedPlanHash":"`+hash+`"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedByAnnotation, approver))
		a := vpc.Status.Approval
		Expect(a.ApprovedBy).To(Equal(approver))
		Expect(a.RequestedBy).To(Equal(editor))
		Expect(a.Via).To(BeEmpty())
		Expect(a.ApprovedAt).NotTo(BeNil())
		c := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionApprovalVerified)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(BeEquivalentTo("True"))
		Eventually(eventNotes).Should(ContainElement(And(ContainSubstring("-> InProgress"),
			ContainSubstring("approved by "+approver+", requested by "+editor))))
		Expect(kubectl("get", "vpc", configName, "-o", "wide")).To(MatchRegexp(`APPROVED-BY[\s\S]*\b` + approver + `\b`))
	})

	It("with fourEyes, refuses the approval of the user who changed the options; another approver's goes through", func() {
		kubectlApply(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: ApprovalPolicy
metadata: {name: cluster}
spec:
  fourEyes: true
  gitOpsApprovers: ["` + gitOps + `"]`)
		// The policy is loaded asynchronously: the requester's own approval is refused once it is.
		Eventually(func() string {
			out, _ := as(approver, "patch", "vpc", configName, "--type=merge", "--dry-run=server", "-p",
				`{"spec":{"action":"Apply","options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":7}}}}`)
			return out
		}).Should(ContainSubstring("four-eyes"))

		out, err := as(approver, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":7}}}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(getConfig().Annotations).To(HaveKeyWithValue(advisorv1alpha1.RequestedByAnnotation, approver))
		hash := waitPhase(advisorv1alpha1.PhaseReviewRequired).Status.PlanHash
		approval := `{"spec":{"action":"Apply","approvedPlanHash":"` + hash + `"}}`

		out, err = as(approver, "patch", "vpc", configName, "--type=merge", "-p", approval)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("four-eyes (ApprovalPolicy cluster, spec.fourEyes): " + approver +
			" last changed what the plan of VirtPlatformConfig " + configName + " is drafted from"))

		out, err = as(approver2, "patch", "vpc", configName, "--type=merge", "-p", approval)
		Expect(err).NotTo(HaveOccurred(), out)
		a := waitPhase(advisorv1alpha1.PhaseCompleted).Status.Approval
		Expect(a.ApprovedBy).To(Equal(approver2))
		Expect(a.RequestedBy).To(Equal(approver))
		Expect(a.ApprovedPlanHash).To(Equal(hash))
	})

	It("lets the GitOps account approve its own change, recorded as gitops", func() {
		out, err := as(gitOps, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedPlanHash":null,"options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":8}}}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		vpc := getConfig()
		Expect(vpc.Annotations).To(HaveKeyWithValue(advisorv1alpha1.RequestedByAnnotation, gitOps))
		Expect(vpc.Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedByAnnotation, gitOps))
		Expect(vpc.Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedViaAnnotation, advisorv1alpha1.ApprovedViaGitOps))
		a := waitPhase(advisorv1alpha1.PhaseCompleted).Status.Approval
		Expect(a.ApprovedBy).To(Equal(gitOps))
		Expect(a.RequestedBy).To(Equal(gitOps))
		Expect(a.Via).To(Equal(advisorv1alpha1.ApprovedViaGitOps))
		Eventually(eventNotes).Should(ContainElement(ContainSubstring("approved by " + gitOps + " (via gitops)")))

		By("an approver's next approval drops the gitops record")
		out, err = as(approver2, "patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"action":"DryRun"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(getConfig().Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedViaAnnotation, advisorv1alpha1.ApprovedViaGitOps))
		out, err = as(approver2, "annotate", "vpc", configName, "--overwrite", advisorv1alpha1.ApprovedViaAnnotation+"=manual")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(getConfig().Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedViaAnnotation, advisorv1alpha1.ApprovedViaGitOps))
	})

	It("approves a plan's content: aggressive corrections of it need no new approval, other content waits and names what differs", func() {
		vpc := getConfig()
		approved := vpc.Status.Content
		Expect(approved).NotTo(BeNil())
		Expect(vpc.Status.ContentHash).To(Equal(approved.Hash))
		pin, err := json.Marshal(approved)
		Expect(err).NotTo(HaveOccurred())

		By("the CRD refuses both pins at once")
		out, err := as(approver2, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedPlanHash":"`+vpc.Status.PlanHash+`","approvedContent":`+string(pin)+`}}`)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("set spec.approvedPlanHash (this plan on this cluster) or spec.approvedContent (any plan with this content), not both"))

		By("the GitOps account pins the content of the completed plan, with aggressive mode")
		out, err = as(gitOps, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"Apply","bypassOptimisticLock":true,"approvedContent":`+string(pin)+`}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		vpc = waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(vpc.Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedByAnnotation, gitOps))
		Expect(vpc.Status.ContentHash).To(Equal(approved.Hash), "aggressive mode changes no content")

		By("an aggressive correction restores exactly that content: a new plan revision, and no new approval")
		kubectl("patch", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator", "--type=merge",
			"-p", `{"spec":{"evictionLimits":{"total":3}}}`)
		Eventually(func() string {
			return kubectl("get", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator",
				"-o", "jsonpath={.spec.evictionLimits.total}")
		}).Should(Equal("8"))
		after := waitPhase(advisorv1alpha1.PhaseCompleted)
		Expect(after.Status.PlanRevision).To(BeNumerically(">", vpc.Status.PlanRevision))
		a := after.Status.Approval
		Expect(a.CorrectionsOnly).To(BeTrue())
		Expect(a.ApprovedContentHash).To(Equal(approved.Hash))

		By("a plan with other content waits with ContentMismatch, naming the item that differs")
		out, err = as(gitOps, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"bypassOptimisticLock":false,"options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":10}}}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		vpc = waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Status.ContentHash).NotTo(Equal(approved.Hash))
		c := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionReviewRequired)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(advisorv1alpha1.ReasonContentMismatch))
		Expect(c.Message).To(ContainSubstring("spec.approvedContent.hash " + approved.Hash + " is not status.contentHash " + vpc.Status.ContentHash))
		Expect(c.Message).To(ContainSubstring("item enable-load-aware-descheduling writes another desired state or target here"))
		Expect(c.Message).To(ContainSubstring(`"approvedContent":null`))
		Expect(kubectl("get", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator",
			"-o", "jsonpath={.spec.evictionLimits.total}")).To(Equal("8"))
		Eventually(eventNotes).Should(ContainElement(ContainSubstring("this cluster's plan would write other content than the approved one")))

		By("approving the new content executes it, recorded as an approval of content")
		pin, err = json.Marshal(vpc.Status.Content)
		Expect(err).NotTo(HaveOccurred())
		out, err = as(approver2, "patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"approvedContent":`+string(pin)+`}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		a = waitPhase(advisorv1alpha1.PhaseCompleted).Status.Approval
		Expect(a.ApprovedContentHash).To(Equal(vpc.Status.ContentHash))
		Expect(a.ApprovedBy).To(Equal(approver2))
		Expect(a.Via).To(Equal(advisorv1alpha1.ViaContent))
		Eventually(eventNotes).Should(ContainElement(ContainSubstring("approved by " + approver2 + " (via content)")))
		Expect(kubectl("get", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator",
			"-o", "jsonpath={.spec.evictionLimits.total}")).To(Equal("10"))

		By("without aggressive mode, drift of the approved content waits for an approval of the correction")
		kubectl("patch", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator", "--type=merge",
			"-p", `{"spec":{"evictionLimits":{"total":4}}}`)
		vpc = waitPhase(advisorv1alpha1.PhaseDrifted)
		c = meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionDrifted)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(advisorv1alpha1.ReasonDriftDetected))
		Expect(kubectl("get", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator",
			"-o", "jsonpath={.spec.evictionLimits.total}")).To(Equal("4"))
		kubectl("patch", "kubedescheduler", "cluster", "-n", "openshift-kube-descheduler-operator", "--type=merge",
			"-p", `{"spec":{"evictionLimits":{"total":10}}}`)
		waitPhase(advisorv1alpha1.PhaseCompleted)

		out, err = as(approver2, "patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"action":"DryRun","approvedContent":null}}`)
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("with the policies turned off, still executes approvals, shown unverified with the condition", func() {
		kubectl("delete", "mutatingadmissionpolicybindings", "virt-advisor-operator-approval-identity", "virt-advisor-operator-approval-via-gitops")
		By("without the mutating binding, the validating policy refuses a forged annotation")
		Eventually(func() string {
			out, _ := as(editor, "annotate", "vpc", configName, "--overwrite", advisorv1alpha1.ApprovedByAnnotation+"=mallory")
			return out
		}).Should(ContainSubstring("are recorded by the API server from who made each change; they cannot be set or changed by hand"))
		Expect(getConfig().Annotations).To(HaveKeyWithValue(advisorv1alpha1.ApprovedByAnnotation, approver2))

		kubectl("delete", "validatingadmissionpolicybindings", "virt-advisor-operator-approval-identity",
			"virt-advisor-operator-approve-verb", "virt-advisor-operator-four-eyes")
		// Without the policies the editor's approval goes through, once the API server saw
		// the bindings go.
		Eventually(func() error {
			_, err := as(editor, "patch", "vpc", configName, "--type=merge", "--dry-run=server", "-p",
				`{"spec":{"action":"Apply","options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":9}}}}`)
			return err
		}).Should(Succeed())
		out, err := as(editor, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false,"evictionLimitTotal":9}}}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		hash := waitPhase(advisorv1alpha1.PhaseReviewRequired).Status.PlanHash
		out, err = as(editor, "patch", "vpc", configName, "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedPlanHash":"`+hash+`"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted)
		a := vpc.Status.Approval
		Expect(a.ApprovedBy).To(Equal(advisorv1alpha1.Unverified))
		Expect(a.RequestedBy).To(Equal(advisorv1alpha1.Unverified))
		Expect(a.Via).To(BeEmpty())
		c := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionApprovalVerified)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(BeEquivalentTo("False"))
		Expect(c.Reason).To(Equal(advisorv1alpha1.ReasonPoliciesMissing))
		Expect(c.Message).To(ContainSubstring("the MutatingAdmissionPolicyBinding virt-advisor-operator-approval-identity does not exist"))
		Eventually(eventNotes).Should(ContainElement(ContainSubstring("approved by unverified")))
	})
})

func asApply(user, manifest string) (string, error) {
	cmd := exec.Command(kubectlPath(), "--as="+user, "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func getConfig() *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
	return vpc
}

// waitPhase waits for the phase and a status that reflects the current generation.
func waitPhase(p advisorv1alpha1.Phase) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var vpc *advisorv1alpha1.VirtPlatformConfig
	Eventually(func(g Gomega) {
		vpc = &advisorv1alpha1.VirtPlatformConfig{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
		g.Expect(vpc.Status.ObservedGeneration).To(Equal(vpc.Generation))
		g.Expect(vpc.Status.Phase).To(Equal(p), "conditions: %v", vpc.Status.Conditions)
	}).Should(Succeed())
	return vpc
}

// eventNotes are the notes of the config's Events.
func eventNotes() []string {
	list := &eventsv1.EventList{}
	Expect(k8s.List(ctx, list, client.InNamespace("default"))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == configName {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
