package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func TestApprovalHash(t *testing.T) {
	inProgress := reviewConfig()
	inProgress.Status.Phase = advisorv1alpha1.PhaseInProgress
	inProgress.Status.Approval.Required = false
	drifted := completedConfig()
	drifted.Status.Phase = advisorv1alpha1.PhaseDrifted
	drifted.Status.PlanHash = hashB
	drifted.Status.Approval.Required = true
	drafting := reviewConfig()
	drafting.Status.Phase = advisorv1alpha1.PhaseDrafting
	drafting.Status.PlanHash = ""
	ignored := reviewConfig()
	ignored.Spec.Action = advisorv1alpha1.ActionIgnore
	ignored.Status = advisorv1alpha1.VirtPlatformConfigStatus{Phase: advisorv1alpha1.PhaseIgnored, ObservedGeneration: 2}

	cases := []struct {
		name    string
		vpc     *advisorv1alpha1.VirtPlatformConfig
		wanted  string
		want    string
		wantErr string
	}{
		{"review required", reviewConfig(), "", hashA, ""},
		{"review required, the hash reviewed", reviewConfig(), hashA, hashA, ""},
		{"review required, an outdated hash", reviewConfig(), hashB, "",
			"--hash is " + hashB + ", but the plan shown now has hash " + hashA + ". Nothing was changed. " +
				"Review the plan again: kubectl virt-advisor plan load-aware-rebalancing"},
		{"drift correction", drifted, "", hashB, ""},
		{"completed", completedConfig(), "", "", "nothing to approve: load-aware-rebalancing is Completed (Applied): " +
			"every item is applied, and no plan waits for an approval"},
		{"completed, the hash of its plan", completedConfig(), hashA, "", "nothing to approve"},
		{"in progress", inProgress, "", "", "is approved and being applied"},
		{"drafting", drafting, "", "", "nothing to approve: load-aware-rebalancing has no plan yet (phase Drafting)"},
		{"ignored", ignored, hashA, "", "nothing to approve: load-aware-rebalancing is Ignored"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := approvalHash(c.vpc, c.wanted)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("approvalHash = %q, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("approvalHash = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestApprovePatchIsTheStatusCommandWithTheResourceVersion(t *testing.T) {
	body, err := approvePatch("42", hashA)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"42"},"spec":{"action":"Apply","approvedPlanHash":"` + hashA + `"}}`
	if string(body) != want {
		t.Errorf("patch = %s; want %s", body, want)
	}
}

func TestApproveCommand(t *testing.T) {
	c := fakeClient(reviewConfig())
	out, errOut, code := run(t, c, "approve", "load-aware-rebalancing")
	if code != ExitOK {
		t.Fatalf("approve exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Approved plan "+hashA) {
		t.Errorf("approve says %q", out)
	}
	vpc := getVPC(t, c, "load-aware-rebalancing")
	if vpc.Spec.Action != advisorv1alpha1.ActionApply || vpc.Spec.ApprovedPlanHash != hashA {
		t.Errorf("spec after approve: %+v", vpc.Spec)
	}
}

func TestApproveOutdatedHashChangesNothing(t *testing.T) {
	c := fakeClient(reviewConfig())
	before := getVPC(t, c, "load-aware-rebalancing")
	_, errOut, code := run(t, c, "approve", "load-aware-rebalancing", "--hash", hashB)
	if code != ExitError || !strings.Contains(errOut, hashA) || !strings.Contains(errOut, hashB) ||
		!strings.Contains(errOut, "kubectl virt-advisor plan load-aware-rebalancing") {
		t.Errorf("approve --hash outdated: exit %d, %q", code, errOut)
	}
	after := getVPC(t, c, "load-aware-rebalancing")
	if after.ResourceVersion != before.ResourceVersion || after.Spec != before.Spec {
		t.Errorf("approve with an outdated hash changed the config: %+v", after.Spec)
	}
}

func TestApproveCompletedRefuses(t *testing.T) {
	_, errOut, code := run(t, fakeClient(completedConfig()), "approve", "load-aware-rebalancing")
	if code == ExitOK || !strings.Contains(errOut, "nothing to approve") {
		t.Errorf("approve of a completed config: exit %d, %q", code, errOut)
	}
}

// A status write between the read and the patch makes the patch conflict: approve reads
// again and approves only if the plan is the same one.
func TestApproveRereadsOnConflict(t *testing.T) {
	for _, c := range []struct {
		name    string
		newHash string
		wantErr string
	}{
		{"same plan", hashA, ""},
		{"plan replaced", hashB, "--hash is " + hashA + ", but the plan shown now has hash " + hashB},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := fakeClient(reviewConfig())
			interfered := false
			cl := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if !interfered {
						interfered = true
						vpc := getVPC(t, cl, obj.GetName())
						vpc.Status.PlanHash = c.newHash
						if err := cl.Status().Update(ctx, vpc); err != nil {
							t.Fatal(err)
						}
					}
					return cl.Patch(ctx, obj, patch, opts...)
				},
			})
			hash, err := approve(context.Background(), cl, "load-aware-rebalancing", "")
			vpc := getVPC(t, base, "load-aware-rebalancing")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("approve = %q, %v; want an error with %q", hash, err, c.wantErr)
				}
				if vpc.Spec.Action != advisorv1alpha1.ActionDryRun || vpc.Spec.ApprovedPlanHash != "" {
					t.Errorf("a replaced plan was approved: %+v", vpc.Spec)
				}
				return
			}
			if err != nil || hash != hashA || vpc.Spec.ApprovedPlanHash != hashA {
				t.Errorf("approve = %q, %v; spec %+v", hash, err, vpc.Spec)
			}
		})
	}
}

func TestSetAction(t *testing.T) {
	c := fakeClient(reviewConfig())
	out, _, code := run(t, c, "ignore", "load-aware-rebalancing")
	if code != ExitOK || !strings.Contains(out, "spec.action set to Ignore (was DryRun)") {
		t.Errorf("ignore: exit %d, %q", code, out)
	}
	if got := getVPC(t, c, "load-aware-rebalancing").Spec.Action; got != advisorv1alpha1.ActionIgnore {
		t.Errorf("action after ignore: %s", got)
	}
	out, _, code = run(t, c, "dry-run", "load-aware-rebalancing")
	if code != ExitOK || !strings.Contains(out, "set to DryRun (was Ignore)") || !strings.Contains(out, "--for=ReviewRequired") {
		t.Errorf("dry-run: exit %d, %q", code, out)
	}
	out, _, code = run(t, c, "dry-run", "virt-higher-density")
	if code != ExitOK || !strings.Contains(out, "Created VirtPlatformConfig virt-higher-density") {
		t.Errorf("dry-run of a deleted profile: exit %d, %q", code, out)
	}
	if got := getVPC(t, c, "virt-higher-density").Spec; got.Profile != advisorv1alpha1.ProfileVirtHigherDensity || got.Action != advisorv1alpha1.ActionDryRun {
		t.Errorf("created spec: %+v", got)
	}
	_, errOut, code := run(t, c, "ignore", "platform-baselines")
	if code != ExitError || !strings.Contains(errOut, "Valid profile names") {
		t.Errorf("ignore of an unknown profile: exit %d, %q", code, errOut)
	}
}
