package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func TestReached(t *testing.T) {
	stale := completedConfig()
	stale.Generation = 4 // approved again, not observed yet
	failed := reviewConfig()
	failed.Status.Phase = advisorv1alpha1.PhaseFailed
	failed.Status.Conditions = nil
	setCondition(failed, advisorv1alpha1.ConditionFailed, advisorv1alpha1.ReasonItemFailed, "item enable-psi-metrics failed: pool worker Degraded")
	staleFailed := failed.DeepCopy()
	staleFailed.Generation = 3
	drifted := completedConfig()
	drifted.Status.Phase = advisorv1alpha1.PhaseDrifted
	drifted.Status.Approval.Required = true
	withErrors := completedConfig()
	withErrors.Status.Phase = advisorv1alpha1.PhaseCompletedWithErrors
	revertCancelled := revertedConfig()
	revertCancelled.Spec.Revert = false

	cases := []struct {
		name    string
		vpc     *advisorv1alpha1.VirtPlatformConfig
		target  string
		want    bool
		wantErr string
	}{
		{"completed", completedConfig(), ForCompleted, true, ""},
		{"completed is ready", completedConfig(), ForReady, true, ""},
		{"completed, not observed", stale, ForCompleted, false, ""},
		{"ready, not observed", stale, ForReady, false, ""},
		{"review required", reviewConfig(), ForReviewRequired, true, ""},
		{"review required is not completed", reviewConfig(), ForCompleted, false, ""},
		{"a drift correction waits for review", drifted, ForReviewRequired, true, ""},
		{"failed", failed, ForCompleted, false, "load-aware-rebalancing is Failed: item enable-psi-metrics failed: pool worker Degraded"},
		{"failed, waiting for review", failed, ForReviewRequired, false, "is Failed"},
		{"failed before the latest approval", staleFailed, ForCompleted, false, ""},
		{"completed with errors", withErrors, ForCompleted, false, "is CompletedWithErrors"},
		{"an approved revert plan ends Reverted", revertedConfig(), ForCompleted, true, ""},
		{"a revert plan waits for review", revertReviewConfig(), ForReviewRequired, true, ""},
		{"a revert plan waiting for review is not completed", revertReviewConfig(), ForCompleted, false, ""},
		{"reverted, the revert cancelled, not observed", revertCancelled, ForCompleted, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := reached(c.vpc, c.target)
			if got != c.want || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("reached = %v, %v; want %v, %q", got, err, c.want, c.wantErr)
			}
		})
	}
}

func pool(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const rollingPool = `
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec: {configuration: {name: rendered-worker-new}}
status:
  configuration: {name: rendered-worker-old}
  machineCount: 3
  updatedMachineCount: 1
  conditions:
  - {type: Updated, status: "False"}
  - {type: Degraded, status: "False"}
`

func TestPoolProgress(t *testing.T) {
	if got := poolProgress(pool(t, rollingPool), "rendered-worker-old"); got != "pool worker 1/3 updated to rendered-worker-new" {
		t.Errorf("rolling out: %q", got)
	}
	notRendered := pool(t, strings.Replace(rollingPool, "rendered-worker-new", "rendered-worker-old", 1))
	if got := poolProgress(notRendered, "rendered-worker-old"); got !=
		"pool worker 0/3 updated (the new configuration is not rendered yet)" {
		t.Errorf("not rendered: %q", got)
	}
	done := pool(t, `
metadata: {name: worker}
spec: {configuration: {name: rendered-worker-new}}
status:
  configuration: {name: rendered-worker-new}
  machineCount: 3
  updatedMachineCount: 3
  conditions: [{type: Updated, status: "True"}]
`)
	if got := poolProgress(done, "rendered-worker-old"); got != "pool worker 3/3 updated to rendered-worker-new" {
		t.Errorf("updated: %q", got)
	}
	degraded := pool(t, strings.Replace(rollingPool, `{type: Degraded, status: "False"}`,
		`{type: Degraded, status: "True", message: "node worker-1 failed to drain"}`, 1))
	if got := poolProgress(degraded, ""); got != "pool worker is Degraded: node worker-1 failed to drain" {
		t.Errorf("degraded: %q", got)
	}
	if got := baselinePools("worker=rendered-worker-old, infra=rendered-infra-1"); len(got) != 2 ||
		got[0] != [2]string{"worker", "rendered-worker-old"} || got[1] != [2]string{"infra", "rendered-infra-1"} {
		t.Errorf("baselinePools = %v", got)
	}
	if got := baselinePools(""); len(got) != 0 {
		t.Errorf("baselinePools of nothing = %v", got)
	}
}

func rollingOut() *advisorv1alpha1.VirtPlatformConfig {
	vpc := reviewConfig()
	vpc.Spec.Action = advisorv1alpha1.ActionApply
	vpc.Status.Phase = advisorv1alpha1.PhaseInProgress
	vpc.Status.Approval.Required = false
	vpc.Status.Items[0].State = advisorv1alpha1.ItemCompleted
	vpc.Status.Items[1].State = advisorv1alpha1.ItemInProgress
	vpc.Status.Items[1].Message = "MachineConfigPool worker has not picked up 99-worker-psi-karg yet"
	vpc.Status.Items[1].HealthBaseline = "worker=rendered-worker-old"
	vpc.Status.Conditions = nil
	setCondition(vpc, advisorv1alpha1.ConditionInProgress, advisorv1alpha1.ReasonExecuting, "applying the plan")
	return vpc
}

func TestProgress(t *testing.T) {
	pools := func(_ *advisorv1alpha1.VirtPlatformConfig, it advisorv1alpha1.PlanItem) []string {
		if it.HealthBaseline == "" {
			return nil
		}
		return []string{"pool worker 1/3 updated to rendered-worker-new"}
	}
	got := progress(rollingOut(), ForCompleted, pools)
	want := "load-aware-rebalancing: InProgress (Executing), item 2/2 enable-psi-metrics InProgress: " +
		"MachineConfigPool worker has not picked up 99-worker-psi-karg yet; pool worker 1/3 updated to rendered-worker-new"
	if got != want {
		t.Errorf("progress =\n%q\nwant\n%q", got, want)
	}
	got = progress(reviewConfig(), ForCompleted, pools)
	if !strings.Contains(got, "waits for approval: kubectl virt-advisor approve load-aware-rebalancing --hash "+hashA) {
		t.Errorf("progress of a plan to approve: %q", got)
	}
	stale := completedConfig()
	stale.Generation = 4
	if got = progress(stale, ForCompleted, pools); !strings.Contains(got, "waiting for the operator to act on generation 4") {
		t.Errorf("progress before the operator acts: %q", got)
	}
}

// The wait follows the config through its rollout, prints each change once and ends when
// it is Completed.
func TestWaitUntilCompleted(t *testing.T) {
	mcp := pool(t, rollingPool)
	base := fakeClient(rollingOut())
	if err := base.Create(context.Background(), mcp); err != nil {
		t.Fatal(err)
	}
	reads := 0
	cl := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := cl.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			vpc, ok := obj.(*advisorv1alpha1.VirtPlatformConfig)
			if !ok {
				return nil
			}
			reads++
			if reads >= 4 { // the operator completes the plan
				*vpc = *completedConfig()
			}
			return nil
		},
	})
	var out bytes.Buffer
	w := waiter{c: cl, name: "load-aware-rebalancing", target: ForCompleted, interval: time.Millisecond, out: &out,
		now: func() time.Time { return testNow }}
	if err := w.wait(context.Background(), time.Minute); err != nil {
		t.Fatalf("wait: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per change, got:\n%s", out.String())
	}
	if !strings.HasPrefix(lines[0], "12:00:00 load-aware-rebalancing: InProgress (Executing), item 2/2 enable-psi-metrics InProgress") ||
		!strings.HasSuffix(lines[0], "; pool worker 1/3 updated to rendered-worker-new") {
		t.Errorf("progress line: %q", lines[0])
	}
	if lines[1] != "12:00:00 load-aware-rebalancing: Completed (Applied): every item is applied" {
		t.Errorf("last line: %q", lines[1])
	}
}

func TestWaitFailsAndTimesOut(t *testing.T) {
	failed := rollingOut()
	failed.Status.Phase = advisorv1alpha1.PhaseFailed
	failed.Status.Conditions = nil
	setCondition(failed, advisorv1alpha1.ConditionFailed, advisorv1alpha1.ReasonItemFailed, "MachineConfigPool worker is Degraded")
	_, errOut, code := run(t, fakeClient(failed), "wait", "load-aware-rebalancing", "--for=Completed")
	if code != ExitError || !strings.Contains(errOut, "load-aware-rebalancing is Failed: MachineConfigPool worker is Degraded") {
		t.Errorf("wait on a failed config: exit %d, %q", code, errOut)
	}
	out, errOut, code := run(t, fakeClient(reviewConfig()), "wait", "load-aware-rebalancing", "--for=Completed", "--timeout=50ms")
	if code != ExitError || !strings.Contains(errOut, "timed out after 50ms waiting for load-aware-rebalancing to be Completed; "+
		"it is ReviewRequired (AwaitingApproval)") {
		t.Errorf("wait timeout: exit %d, %q", code, errOut)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("an unchanged config printed more than one line:\n%s", out)
	}
	if _, _, code = run(t, fakeClient(reviewConfig()), "wait", "load-aware-rebalancing", "--for=Done"); code != ExitError {
		t.Errorf("wait --for=Done exits %d", code)
	}
	if _, _, code = run(t, fakeClient(completedConfig()), "wait", "load-aware-rebalancing", "--for=Ready"); code != ExitOK {
		t.Errorf("wait --for=Ready on a ready config exits %d", code)
	}
	_, errOut, code = run(t, fakeClient(), "wait", "load-aware-rebalancing", "--for=Ready")
	if code != ExitError || !strings.Contains(errOut, "no VirtPlatformConfig") {
		t.Errorf("wait on a missing config: exit %d, %q", code, errOut)
	}
}
