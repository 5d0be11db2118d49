package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

const psiDeletionDiff = `--- MachineConfig 99-worker-psi-karg (live)
+++ /dev/null
@@ -1,3 +0,0 @@
-kind: MachineConfig
-spec:
-  kernelArguments:
-  - psi=1
`

const deschedulerRestoreDiff = `--- KubeDescheduler openshift-kube-descheduler-operator/cluster (live)
+++ KubeDescheduler openshift-kube-descheduler-operator/cluster (planned)
@@ -3,5 +3,4 @@
 spec:
   profiles:
   - AffinityAndTaints
-  - KubeVirtRelieveAndMigrate
+  - LifecycleAndUtilization
`

// revertReviewConfig is load-aware-rebalancing, applied, showing its revert plan for review:
// the PSI MachineConfig it created is deleted, the KubeDescheduler it changed restored.
func revertReviewConfig() *advisorv1alpha1.VirtPlatformConfig {
	vpc := completedConfig()
	vpc.Spec.Revert = true
	vpc.Spec.Action = advisorv1alpha1.ActionDryRun
	vpc.Generation, vpc.Status.ObservedGeneration = 4, 4
	vpc.Status.Phase = advisorv1alpha1.PhaseReviewRequired
	vpc.Status.PlanHash = hashB
	vpc.Status.Approval = &advisorv1alpha1.ApprovalStatus{Required: true, MinGeneration: 5, OperatorDrafted: true}
	vpc.Status.Items = []advisorv1alpha1.PlanItem{
		{
			Name: "revert-machineconfig-99-worker-psi-karg", Action: advisorv1alpha1.ItemActionDelete,
			ImpactSeverity: advisorv1alpha1.ImpactHigh,
			TargetRef: advisorv1alpha1.TargetReference{APIVersion: "machineconfiguration.openshift.io/v1",
				Kind: "MachineConfig", Name: "99-worker-psi-karg"},
			State: advisorv1alpha1.ItemPending, Change: advisorv1alpha1.ChangeValues, Diff: psiDeletionDiff,
			Message: "deletes MachineConfig 99-worker-psi-karg, which this profile created",
		},
		{
			Name: "revert-kubedescheduler-openshift-kube-descheduler-operator-cluster", Action: advisorv1alpha1.ItemActionRestore,
			ImpactSeverity: advisorv1alpha1.ImpactMedium,
			TargetRef: advisorv1alpha1.TargetReference{APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler",
				Name: "cluster", Namespace: "openshift-kube-descheduler-operator"},
			State: advisorv1alpha1.ItemPending, Change: advisorv1alpha1.ChangeValues, Diff: deschedulerRestoreDiff,
			Message: "restores spec.profiles, spec.mode of KubeDescheduler openshift-kube-descheduler-operator/cluster",
			Conflicts: []advisorv1alpha1.FieldConflict{
				{Path: "spec.mode", Manager: "descheduler-admin", LiveValue: `"Predictive"`, PlannedValue: `"Automatic"`},
				{Path: "spec.evictionLimits", Manager: "descheduler-admin", LiveValue: `{"total":20}`, PlannedValue: "(absent)"},
			},
		},
	}
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{{Pool: "worker", Items: []string{"revert-machineconfig-99-worker-psi-karg"},
		Nodes: 2, MaxUnavailable: "1", Waves: 2, Reboot: true, Pause: true, EstimatedDuration: "unknown",
		Reasons: []string{"kernel arguments change: reboot"}}}
	vpc.Status.Conditions = nil
	setCondition(vpc, advisorv1alpha1.ConditionReviewRequired, advisorv1alpha1.ReasonAwaitingApproval,
		"the revert plan changes 2 target(s) (impact High): review status.items[].diff")
	return vpc
}

// revertedConfig is load-aware-rebalancing after its revert plan ran.
func revertedConfig() *advisorv1alpha1.VirtPlatformConfig {
	vpc := revertReviewConfig()
	vpc.Spec.Action = advisorv1alpha1.ActionApply
	vpc.Spec.ApprovedPlanHash = hashB
	vpc.Generation, vpc.Status.ObservedGeneration = 5, 5
	vpc.Status.Phase = advisorv1alpha1.PhaseReverted
	vpc.Status.Approval = &advisorv1alpha1.ApprovalStatus{MinGeneration: 5, ApprovedPlanHash: hashB, ApprovedGeneration: 5}
	vpc.Status.Rollouts = nil
	for i := range vpc.Status.Items {
		vpc.Status.Items[i].State = advisorv1alpha1.ItemCompleted
	}
	vpc.Status.Conditions = nil
	setCondition(vpc, advisorv1alpha1.ConditionReverted, advisorv1alpha1.ReasonReverted,
		"the revert plan was executed: 2 target(s) are back as they were before this profile's executions and no longer watched")
	return vpc
}

// operator plays the operator for the revert command: each patch of the spec is answered,
// from the read after the next one on, by the status show returns for the patched config
// (the read right after the patch still has the status of the spec before it).
type operator struct {
	base    client.WithWatch
	show    func(*advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus
	patches []string
	reads   int
}

func (op *operator) client(t *testing.T) client.Client {
	t.Helper()
	return interceptor.NewClient(op.base, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				t.Fatal(err)
			}
			op.patches = append(op.patches, string(patch.Type())+" "+string(data))
			op.reads = 0
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := cl.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			vpc, ok := obj.(*advisorv1alpha1.VirtPlatformConfig)
			if !ok || len(op.patches) == 0 {
				return nil
			}
			op.reads++
			if op.reads > 2 {
				vpc.Status = op.show(vpc)
				vpc.Status.ObservedGeneration = vpc.Generation
			}
			return nil
		},
	})
}

func TestRevertPatch(t *testing.T) {
	for cancel, want := range map[bool]string{
		false: `{"spec":{"action":"DryRun","revert":true}}`,
		true:  `{"spec":{"revert":false}}`,
	} {
		body, err := revertPatch(cancel)
		if err != nil || string(body) != want {
			t.Errorf("revertPatch(cancel %v) = %s, %v; want %s", cancel, body, err, want)
		}
	}
}

// revert sets spec.revert and spec.action DryRun in one merge patch, waits for the revert
// plan and prints it as plan does, with the command that approves it.
func TestRevertCommandAsksForTheRevertPlanAndShowsIt(t *testing.T) {
	op := &operator{base: fakeClient(completedConfig()).(client.WithWatch),
		show: func(*advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus {
			return revertReviewConfig().Status
		}}
	c := op.client(t)
	out, errOut, code := run(t, c, "revert", "load-aware-rebalancing")
	if code != ExitOK {
		t.Fatalf("revert exit %d: %s\n%s", code, errOut, out)
	}
	if len(op.patches) != 1 || op.patches[0] != `application/merge-patch+json {"spec":{"action":"DryRun","revert":true}}` {
		t.Errorf("patches sent: %q; want the one merge patch of spec.revert and spec.action", op.patches)
	}
	vpc := getVPC(t, c, "load-aware-rebalancing")
	if !vpc.Spec.Revert || vpc.Spec.Action != advisorv1alpha1.ActionDryRun || vpc.Spec.ApprovedPlanHash != hashA {
		t.Errorf("spec after revert: %+v", vpc.Spec)
	}
	for _, want := range []string{
		"load-aware-rebalancing: spec.revert set to true and spec.action to DryRun (was Apply): the operator drafts the revert plan, " +
			"for review; nothing is reverted before you approve it.\n",
		"Revert plan of load-aware-rebalancing: phase ReviewRequired, action DryRun, impact High\n",
		"AwaitingApproval: the revert plan changes 2 target(s) (impact High)",
		"Item 1/2: revert-machineconfig-99-worker-psi-karg (delete)\n" +
			"  action:  Delete: the target, which this profile created, is deleted\n",
		"-  - psi=1\n",
		"Item 2/2: revert-kubedescheduler-openshift-kube-descheduler-operator-cluster (restore)\n" +
			"  action:  Restore: the values this profile replaced are put back",
		"MachineConfigPool worker: 2 node(s) reboot once, in 2 wave(s) of at most 1",
		"Plan hash: " + hashB + "\n",
		"2 item(s) change their target. To approve exactly this revert plan:\n  kubectl virt-advisor approve load-aware-rebalancing --hash " + hashB + "\n",
		"To draft the profile's plan again instead: kubectl virt-advisor revert load-aware-rebalancing --cancel\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("revert output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "load-aware-rebalancing: ReviewRequired (AwaitingApproval)") {
		t.Errorf("revert does not report its wait on stderr: %q", errOut)
	}
	if strings.Contains(out, "12:00:00") {
		t.Errorf("the progress lines are mixed into the plan:\n%s", out)
	}
}

// A revert plan shown before the operator acted on the spec that asked for it is not taken
// for it: the command waits for a status of the latest generation.
func TestRevertWaitsForTheOperatorToActOnTheSpec(t *testing.T) {
	stale := revertReviewConfig()
	stale.Status.ObservedGeneration = 3
	if shown, err := revertShown(stale); shown || err != nil {
		t.Errorf("revertShown of a status older than the spec = %v, %v", shown, err)
	}
	cancelled := revertReviewConfig()
	cancelled.Spec.Revert = false
	if shown, err := revertShown(cancelled); shown || err != nil {
		t.Errorf("revertShown of a config that no longer asks for the revert = %v, %v", shown, err)
	}
	for _, vpc := range []*advisorv1alpha1.VirtPlatformConfig{revertReviewConfig(), revertedConfig()} {
		if shown, err := revertShown(vpc); !shown || err != nil {
			t.Errorf("revertShown in phase %s = %v, %v", vpc.Status.Phase, shown, err)
		}
	}
	drafting := revertReviewConfig()
	drafting.Status.Phase = advisorv1alpha1.PhaseDrafting
	drafting.Status.Approval.Required = false
	if shown, err := revertShown(drafting); shown || err != nil {
		t.Errorf("revertShown while drafting = %v, %v", shown, err)
	}

	out, errOut, code := run(t, fakeClient(completedConfig()), "revert", "load-aware-rebalancing", "--timeout=50ms")
	if code != ExitError || !strings.Contains(errOut, "timed out after 50ms waiting for load-aware-rebalancing to show its revert plan; it is Completed") {
		t.Errorf("revert without an operator: exit %d, %q", code, errOut)
	}
	if strings.Contains(out, "Plan hash") {
		t.Errorf("revert printed the plan of the spec before it:\n%s", out)
	}
}

func TestRevertNothingToRevert(t *testing.T) {
	op := &operator{base: fakeClient(completedConfig()).(client.WithWatch),
		show: func(*advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus {
			vpc := revertedConfig()
			vpc.Status.Items = nil
			vpc.Status.Conditions = nil
			setCondition(vpc, advisorv1alpha1.ConditionReverted, advisorv1alpha1.ReasonNothingToRevert,
				"nothing to revert: no target holds a change of this config's executions")
			return vpc.Status
		}}
	out, errOut, code := run(t, op.client(t), "revert", "load-aware-rebalancing")
	if code != ExitOK {
		t.Fatalf("revert exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Revert plan of load-aware-rebalancing: phase Reverted, action DryRun",
		"NothingToRevert: nothing to revert: no target holds a change of this config's executions\n",
		"Nothing of this profile is managed any more. To draft the profile's plan again, for review:\n" +
			"  kubectl virt-advisor revert load-aware-rebalancing --cancel\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("revert output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "virt-advisor approve") {
		t.Errorf("nothing to revert, yet an approval is offered:\n%s", out)
	}
}

func TestRevertFailed(t *testing.T) {
	op := &operator{base: fakeClient(completedConfig()).(client.WithWatch),
		show: func(vpc *advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus {
			failed := vpc.DeepCopy()
			failed.Status.Phase = advisorv1alpha1.PhaseFailed
			failed.Status.Conditions = nil
			setCondition(failed, advisorv1alpha1.ConditionFailed, advisorv1alpha1.ReasonPlanIntegrity, "the plan in status was changed")
			return failed.Status
		}}
	_, errOut, code := run(t, op.client(t), "revert", "load-aware-rebalancing")
	if code != ExitError || !strings.Contains(errOut, "load-aware-rebalancing is Failed: the plan in status was changed") {
		t.Errorf("revert of a config that fails: exit %d, %q", code, errOut)
	}
}

// --cancel sets spec.revert back to false and shows the profile's plan, drafted again for
// review.
func TestRevertCancel(t *testing.T) {
	op := &operator{base: fakeClient(revertedConfig()).(client.WithWatch),
		show: func(*advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus {
			vpc := reviewConfig()
			vpc.Status.Conditions = nil
			setCondition(vpc, advisorv1alpha1.ConditionReviewRequired, advisorv1alpha1.ReasonAwaitingApproval,
				"the plan changes 2 target(s) (impact High): review status.items[].diff")
			return vpc.Status
		}}
	c := op.client(t)
	out, errOut, code := run(t, c, "revert", "load-aware-rebalancing", "--cancel")
	if code != ExitOK {
		t.Fatalf("revert --cancel exit %d: %s", code, errOut)
	}
	if len(op.patches) != 1 || op.patches[0] != `application/merge-patch+json {"spec":{"revert":false}}` {
		t.Errorf("patches sent: %q", op.patches)
	}
	if vpc := getVPC(t, c, "load-aware-rebalancing"); vpc.Spec.Revert || vpc.Spec.Action != advisorv1alpha1.ActionApply {
		t.Errorf("spec after revert --cancel: %+v", vpc.Spec)
	}
	for _, want := range []string{
		"load-aware-rebalancing: spec.revert set to false: the operator drafts the profile's plan again, for review.\n",
		"Plan of load-aware-rebalancing: phase ReviewRequired, action Apply, impact High\n",
		"Item 1/2: enable-load-aware-descheduling\n",
		"kubectl virt-advisor approve load-aware-rebalancing --hash " + hashA + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("revert --cancel output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Revert plan") || strings.Contains(out, "--cancel") {
		t.Errorf("the profile's plan is shown as a revert plan:\n%s", out)
	}

	stale := reviewConfig()
	stale.Generation = 3
	if shown, err := profilePlanShown(stale); shown || err != nil {
		t.Errorf("profilePlanShown of a status older than the spec = %v, %v", shown, err)
	}
	if shown, err := profilePlanShown(revertedConfig()); shown || err != nil {
		t.Errorf("profilePlanShown of a config that still asks for the revert = %v, %v", shown, err)
	}
}

func TestRevertChangesNothingWhenAlreadyAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		vpc  *advisorv1alpha1.VirtPlatformConfig
		args []string
		want string
	}{
		{"revert of a config showing its revert plan", revertReviewConfig(), nil,
			"load-aware-rebalancing: spec.revert is already true and spec.action DryRun.\n"},
		{"cancel of a config that asks for no revert", reviewConfig(), []string{"--cancel"},
			"load-aware-rebalancing: spec.revert is already false: the profile's plan is shown.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := &operator{base: fakeClient(c.vpc).(client.WithWatch),
				show: func(vpc *advisorv1alpha1.VirtPlatformConfig) advisorv1alpha1.VirtPlatformConfigStatus {
					return vpc.Status
				}}
			before := getVPC(t, op.base, "load-aware-rebalancing")
			out, errOut, code := run(t, op.client(t), append([]string{"revert", "load-aware-rebalancing"}, c.args...)...)
			if code != ExitOK || !strings.HasPrefix(out, c.want) || !strings.Contains(out, "Plan hash: "+c.vpc.Status.PlanHash) {
				t.Errorf("exit %d, stderr %q, output:\n%s", code, errOut, out)
			}
			if after := getVPC(t, op.base, "load-aware-rebalancing"); len(op.patches) != 0 || after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the config was patched: %q", op.patches)
			}
		})
	}
	_, errOut, code := run(t, fakeClient(), "revert", "load-aware")
	if code != ExitError || !strings.Contains(errOut, `"load-aware" is not a profile`) {
		t.Errorf("revert of an unknown profile: exit %d, %q", code, errOut)
	}
}

func TestPlanShowsARevertPlan(t *testing.T) {
	var out bytes.Buffer
	code, err := planView{vpc: revertReviewConfig()}.render(&out)
	if err != nil || code != ExitChanges {
		t.Fatalf("render = %d, %v; want %d", code, err, ExitChanges)
	}
	text := out.String()
	for _, want := range []string{
		"Revert plan of load-aware-rebalancing: phase ReviewRequired, action DryRun, impact High\n",
		"  action:  Delete: the target, which this profile created, is deleted\n  state:   Pending\n  impact:  High\n" +
			"  target:  MachineConfig 99-worker-psi-karg (machineconfiguration.openshift.io/v1)\n",
		"--- MachineConfig 99-worker-psi-karg (live)\n+++ /dev/null\n",
		`  conflict: spec.mode changed since the apply (descheduler-admin set it to "Predictive"); the revert puts back "Automatic"` + "\n",
		`  conflict: spec.evictionLimits changed since the apply (descheduler-admin set it to {"total":20}); ` +
			"the revert removes it, as it was absent before\n",
		"-  - KubeVirtRelieveAndMigrate\n+  - LifecycleAndUtilization\n",
		"To approve exactly this revert plan:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the revert plan lacks %q:\n%s", want, text)
		}
	}

	// A created object another manager shares is released, not deleted.
	vpc := revertReviewConfig()
	vpc.Status.Items = vpc.Status.Items[:1]
	vpc.Status.Items[0].Action = advisorv1alpha1.ItemActionRelease
	vpc.Status.Items[0].Change = advisorv1alpha1.ChangeOwnershipOnly
	vpc.Status.Items[0].Diff = "(no value changes: releasing removes this profile's managedFields entry)"
	out.Reset()
	if code, err := (planView{vpc: vpc}).render(&out); err != nil || code != ExitChanges {
		t.Fatalf("render of a release = %d, %v", code, err)
	}
	for _, want := range []string{
		"Revert plan of load-aware-rebalancing",
		"Item 1/1: revert-machineconfig-99-worker-psi-karg (release)\n" +
			"  action:  Release: the target keeps its values; this profile's fields and marks are handed back\n",
		"(no value changes: releasing removes this profile's managedFields entry)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the release lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPlanOfARevertedConfig(t *testing.T) {
	var out bytes.Buffer
	code, err := planView{vpc: revertedConfig()}.render(&out)
	if err != nil || code != ExitOK {
		t.Fatalf("render = %d, %v; want %d", code, err, ExitOK)
	}
	for _, want := range []string{
		"Revert plan of load-aware-rebalancing: phase Reverted, action Apply, impact High\n",
		"Reverted: the revert plan was executed: 2 target(s) are back",
		"Item 1/2: revert-machineconfig-99-worker-psi-karg (delete)\n  action:  Delete: the target, which this profile created, is deleted\n  state:   Completed\n",
		"  applied, with this change:\n",
		"kubectl virt-advisor revert load-aware-rebalancing --cancel\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan of a reverted config lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "virt-advisor approve") {
		t.Errorf("a reverted config offers an approval:\n%s", out.String())
	}

	noPlan := revertedConfig()
	noPlan.Status.PlanHash, noPlan.Status.Items = "", nil
	if _, err := (planView{vpc: noPlan}).render(&out); err == nil ||
		!strings.Contains(err.Error(), "load-aware-rebalancing is Reverted: the revert plan was executed") ||
		!strings.Contains(err.Error(), "kubectl virt-advisor revert load-aware-rebalancing --cancel") {
		t.Errorf("plan of a reverted config without a plan: %v", err)
	}
}

// approve approves a revert plan as it approves any plan: spec.action Apply pinned to the
// hash of the plan shown; spec.revert stays true.
func TestApproveRevertPlan(t *testing.T) {
	c := fakeClient(revertReviewConfig())
	out, errOut, code := run(t, c, "approve", "load-aware-rebalancing", "--hash", hashB)
	if code != ExitOK || !strings.Contains(out, "Approved plan "+hashB) {
		t.Fatalf("approve of a revert plan: exit %d, %q, %q", code, out, errOut)
	}
	vpc := getVPC(t, c, "load-aware-rebalancing")
	if !vpc.Spec.Revert || vpc.Spec.Action != advisorv1alpha1.ActionApply || vpc.Spec.ApprovedPlanHash != hashB {
		t.Errorf("spec after approving the revert plan: %+v", vpc.Spec)
	}
	if _, err := approvalHash(revertedConfig(), ""); err == nil || !strings.Contains(err.Error(), "nothing to approve: load-aware-rebalancing is Reverted (Reverted)") {
		t.Errorf("approvalHash of a reverted config: %v", err)
	}
}

func TestStatusShowsTheRevert(t *testing.T) {
	reverted := revertedConfig()
	reverted.Name, reverted.Spec.Profile = "virt-higher-density", advisorv1alpha1.ProfileVirtHigherDensity
	c := fakeClient(revertReviewConfig(), reverted)
	out, errOut, code := run(t, c, "status")
	if code != ExitOK {
		t.Fatalf("status exit %d: %s", code, errOut)
	}
	want := "PROFILE                  ACTION          PHASE            IMPACT   ITEMS   REASON             AGE\n" +
		"load-aware-rebalancing   DryRun+revert   ReviewRequired   High     0/2     AwaitingApproval   90m\n" +
		"virt-higher-density      Apply+revert    Reverted         High     2/2     Reverted           90m\n"
	if out != want {
		t.Errorf("status =\n%s\nwant\n%s", out, want)
	}
	out, _, _ = run(t, c, "status", "load-aware-rebalancing", "-o", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status -o json = %v:\n%s", err, out)
	}
	if rows[0]["revert"] != true || rows[0]["revertPlan"] != true || rows[0]["approvalRequired"] != true {
		t.Errorf("status -o json of a revert plan: %v", rows[0])
	}
	out, _, _ = run(t, fakeClient(reviewConfig()), "status", "-o", "json")
	if !strings.Contains(out, `"revert": false`) || !strings.Contains(out, `"revertPlan": false`) {
		t.Errorf("status -o json of the profile's plan:\n%s", out)
	}
}
