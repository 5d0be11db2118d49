package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// approvedConfig is completedConfig approved by carol (via gitops when via is set) on bob's
// request, as status.approval records it.
func approvedConfig(via string) *advisorv1alpha1.VirtPlatformConfig {
	vpc := completedConfig()
	at := metav1.Date(2026, 5, 4, 11, 0, 0, 0, time.UTC)
	if vpc.Status.Approval == nil {
		vpc.Status.Approval = &advisorv1alpha1.ApprovalStatus{}
	}
	a := vpc.Status.Approval
	a.RequestedBy, a.ApprovedBy, a.Via, a.ApprovedAt = "bob", "carol", via, &at
	return vpc
}

func TestStatusWideShowsWhoRequestedAndApproved(t *testing.T) {
	out, errOut, code := run(t, fakeClient(approvedConfig("gitops")), "status", "-o", "wide")
	if code != ExitOK {
		t.Fatalf("status -o wide exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(strings.Join(strings.Fields(lines[0]), " "), "AGE REQUESTED-BY APPROVED-BY") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), "bob carol (gitops)") {
		t.Errorf("status -o wide =\n%s", out)
	}
	out, _, _ = run(t, fakeClient(approvedConfig("")), "status", "-o", "json")
	for _, want := range []string{`"requestedBy": "bob"`, `"approvedBy": "carol"`} {
		if !strings.Contains(out, want) {
			t.Errorf("status -o json lacks %s:\n%s", want, out)
		}
	}
}

func TestPlanShowsWhoRequestedAndApproved(t *testing.T) {
	out, errOut, _ := run(t, fakeClient(approvedConfig("")), "plan", "load-aware-rebalancing")
	want := "Last execution approved by carol at 2026-05-04T11:00:00Z, requested by bob\n"
	if !strings.Contains(out, want) {
		t.Errorf("plan lacks %q:\n%s%s", want, out, errOut)
	}
}
