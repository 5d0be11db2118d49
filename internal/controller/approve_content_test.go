package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// contentPinned is a config whose spec pins the approval to the content of the plan in
// status, at spec generation 3.
func contentPinned() *advisorv1alpha1.VirtPlatformConfig {
	content := &advisorv1alpha1.PlanContent{Hash: strings.Repeat("c", 64)}
	return &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Generation: 3},
		Spec: advisorv1alpha1.VirtPlatformConfigSpec{
			Action: advisorv1alpha1.ActionApply, ApprovedContent: content.DeepCopy(),
		},
		Status: advisorv1alpha1.VirtPlatformConfigStatus{
			PlanHash: strings.Repeat("a", 64), Content: content, ContentHash: content.Hash,
			Approval: &advisorv1alpha1.ApprovalStatus{MinGeneration: 3},
		},
	}
}

func TestContentPinApprovesRedraftsButNotTheRetryOfAFailureNorADriftCorrection(t *testing.T) {
	vpc := contentPinned()
	s := &scope{vpc: vpc}
	if got := s.approval(); got != approved {
		t.Fatalf("a plan with the pinned content: approval %d, want approved", got)
	}
	// A redraft for a target that changed since review renders the same content: approved.
	s.recordDrafter(byOperator, advisorv1alpha1.ReasonPlanStale)
	if got := s.approval(); got != approved {
		t.Errorf("a stale plan redrafted with the pinned content: approval %d, want approved", got)
	}
	// A drift correction waits for an approval, unless bypassOptimisticLock corrects it
	// (through its own, throttled path).
	s.recordDrafter(byOperator, advisorv1alpha1.ReasonDriftDetected)
	if got := s.approval(); got != notApproved {
		t.Errorf("a drift correction under the pin: approval %d, want notApproved", got)
	}
	// failItem: the retry is a plan of its own.
	s.recordDrafter(byOperator, advisorv1alpha1.ReasonItemFailed)
	if got := s.approval(); got != notApproved {
		t.Errorf("the retry of a failed execution under the same pin: approval %d, want notApproved", got)
	}
	a := vpc.Status.Approval
	a.ApprovedGeneration, a.ApprovedContentHash, a.ApprovedPlanHash = 3, vpc.Status.ContentHash, vpc.Status.PlanHash
	if why := authorizeExecution(vpc); why == nil {
		t.Errorf("the write gate must refuse the retry approved by the generation that failed")
	}
	// A spec change made after the failure approves the retry.
	vpc.Generation = 4
	if got := s.approval(); got != approved {
		t.Errorf("the retry after a spec change: approval %d, want approved", got)
	}
}

func TestContentPinDoesNotTakeFieldsAnotherManagerOwns(t *testing.T) {
	vpc := contentPinned()
	vpc.Status.Items = []advisorv1alpha1.PlanItem{{
		Name: "enable-load-aware-descheduling", State: advisorv1alpha1.ItemPending,
		Conflicts: []advisorv1alpha1.FieldConflict{{Path: "spec.mode", Manager: "kubectl-client-side-apply"}},
	}}
	s := &scope{vpc: vpc}
	if got := s.approval(); got != notApproved {
		t.Fatalf("a plan with the pinned content that takes a field another manager owns: approval %d, want notApproved", got)
	}
	if why := s.contentNotCovered(); !strings.Contains(why, "which an approval of content does not cover") {
		t.Errorf("the wait does not say why the content approval does not cover the plan: %q", why)
	}
	// A correction restores what an approved execution applied: the content covers it.
	it := &vpc.Status.Items[0]
	it.Applied = &advisorv1alpha1.AppliedRecord{DesiredHash: plan.ItemDesiredHash(*it)}
	if got := s.approval(); got != approved {
		t.Errorf("a correction with the pinned content: approval %d, want approved", got)
	}
	if why := s.contentNotCovered(); why != "" {
		t.Errorf("a covered plan has a reason not to be covered: %q", why)
	}
}
