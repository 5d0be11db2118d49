package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(testNow.Add(d))
	return &t
}

// historyConfig is load-aware-rebalancing running its second execution, after one that
// completed with the rollout of the PSI kernel argument.
func historyConfig() *advisorv1alpha1.VirtPlatformConfig {
	vpc := completedConfig()
	vpc.Status.Phase = advisorv1alpha1.PhaseInProgress
	vpc.Status.History = []advisorv1alpha1.Execution{
		{PlanHash: hashB, Profile: advisorv1alpha1.ProfileLoadAwareRebalancing, RequestedBy: "alice", ApprovedBy: "bob",
			ApprovedAt: at(-10 * time.Minute), StartedAt: at(-5 * time.Minute)},
		{PlanHash: hashA, Profile: advisorv1alpha1.ProfileLoadAwareRebalancing, RequestedBy: "alice",
			ApprovedBy: "system:serviceaccount:openshift-gitops:argocd", Via: advisorv1alpha1.ApprovedViaGitOps,
			ApprovedAt: at(-3 * time.Hour), StartedAt: at(-2 * time.Hour), FinishedAt: at(-90 * time.Minute),
			Outcome: advisorv1alpha1.PhaseCompleted, Reboots: 3, VMMigrations: ptr.To[int32](12)},
	}
	return vpc
}

func TestHistoryTable(t *testing.T) {
	out, errOut, code := run(t, fakeClient(historyConfig()), "history", "load-aware-rebalancing")
	if code != ExitOK {
		t.Fatalf("history exit %d: %s", code, errOut)
	}
	want := "" +
		"STARTED                FINISHED               OUTCOME     PLAN           REQUESTED-BY   APPROVED-BY                                     VIA      APPROVED-AT            REBOOTS   VM-MIGRATIONS\n" +
		"2026-05-04T11:55:00Z   -                      (running)   bbbbbbbbbbbb   alice          bob                                             -        2026-05-04T11:50:00Z   0         -\n" +
		"2026-05-04T10:00:00Z   2026-05-04T10:30:00Z   Completed   aaaaaaaaaaaa   alice          system:serviceaccount:openshift-gitops:argocd   gitops   2026-05-04T09:00:00Z   3         12\n"
	if out != want {
		t.Errorf("history =\n%s\nwant\n%s", out, want)
	}
}

func TestHistoryEmpty(t *testing.T) {
	out, _, code := run(t, fakeClient(reviewConfig()), "history", "load-aware-rebalancing")
	if code != ExitOK || out != "load-aware-rebalancing has executed no plan yet (status.history is empty).\n" {
		t.Errorf("history of a config that never executed: exit %d, %q", code, out)
	}
	out, _, _ = run(t, fakeClient(reviewConfig()), "history", "load-aware-rebalancing", "-o", "json")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("history -o json of a config that never executed = %q; want []", out)
	}
}

func TestHistoryJSONAndYAML(t *testing.T) {
	c := fakeClient(historyConfig())
	out, _, code := run(t, c, "history", "load-aware-rebalancing", "-o", "json")
	if code != ExitOK {
		t.Fatalf("history -o json exit %d", code)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("history -o json is not a list of 2 entries: %v\n%s", err, out)
	}
	for key, want := range map[string]any{
		"planHash": hashA, "profile": "load-aware-rebalancing", "requestedBy": "alice",
		"approvedBy": "system:serviceaccount:openshift-gitops:argocd", "via": "gitops",
		"approvedAt": "2026-05-04T09:00:00Z", "startedAt": "2026-05-04T10:00:00Z", "finishedAt": "2026-05-04T10:30:00Z",
		"outcome": "Completed", "reboots": 3.0, "vmMigrations": 12.0,
	} {
		if rows[1][key] != want {
			t.Errorf("%s = %v (%T); want %v", key, rows[1][key], rows[1][key], want)
		}
	}
	if _, ok := rows[0]["finishedAt"]; ok {
		t.Errorf("the running execution has a finishedAt: %v", rows[0])
	}

	out, _, _ = run(t, c, "history", "load-aware-rebalancing", "-o", "yaml")
	var entries []advisorv1alpha1.Execution
	if err := yaml.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 2 || entries[0].PlanHash != hashB {
		t.Errorf("history -o yaml = %v, %v:\n%s", entries, err, out)
	}
	if _, _, code = run(t, c, "history", "load-aware-rebalancing", "-o", "wide-json"); code != ExitError {
		t.Errorf("an unknown -o exits %d", code)
	}
	if _, errOut, code := run(t, c, "history"); code != ExitError || !strings.Contains(errOut, "accepts 1 arg") {
		t.Errorf("history without a profile: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run(t, c, "history", "load-aware"); code != ExitError || errOut == "" {
		t.Errorf("history of a missing config: exit %d, %q", code, errOut)
	}
}
