package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

const (
	hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var testNow = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

const deschedulerDiff = `--- KubeDescheduler openshift-kube-descheduler-operator/cluster (live)
+++ KubeDescheduler openshift-kube-descheduler-operator/cluster (planned)
@@ -3,5 +3,5 @@
 spec:
   profiles:
   - AffinityAndTaints
-  - LifecycleAndUtilization
+  - KubeVirtRelieveAndMigrate
`

const psiDiff = `--- /dev/null
+++ MachineConfig 99-worker-psi-karg (planned)
@@ -0,0 +1,3 @@
+kind: MachineConfig
+spec:
+  kernelArguments:
+  - psi=1
`

// reviewConfig is load-aware-rebalancing waiting for the approval of a plan of two items.
func reviewConfig() *advisorv1alpha1.VirtPlatformConfig {
	vpc := &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: "load-aware-rebalancing", Generation: 2,
			CreationTimestamp: metav1.NewTime(testNow.Add(-90 * time.Minute)),
		},
		Spec: advisorv1alpha1.VirtPlatformConfigSpec{
			Profile: advisorv1alpha1.ProfileLoadAwareRebalancing, Action: advisorv1alpha1.ActionDryRun,
		},
		Status: advisorv1alpha1.VirtPlatformConfigStatus{
			Phase:              advisorv1alpha1.PhaseReviewRequired,
			ObservedGeneration: 2,
			ImpactSeverity:     advisorv1alpha1.ImpactHigh,
			PlanHash:           hashA,
			Approval:           &advisorv1alpha1.ApprovalStatus{Required: true, MinGeneration: 2},
			Items: []advisorv1alpha1.PlanItem{
				{
					Name: "enable-load-aware-descheduling", ImpactSeverity: advisorv1alpha1.ImpactMedium,
					TargetRef: advisorv1alpha1.TargetReference{APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler",
						Name: "cluster", Namespace: "openshift-kube-descheduler-operator"},
					State: advisorv1alpha1.ItemPending, Message: "adds the KubeVirtRelieveAndMigrate profile", Diff: deschedulerDiff, Change: advisorv1alpha1.ChangeValues,
				},
				{
					Name: "enable-psi-metrics", ImpactSeverity: advisorv1alpha1.ImpactHigh,
					TargetRef: advisorv1alpha1.TargetReference{APIVersion: "machineconfiguration.openshift.io/v1",
						Kind: "MachineConfig", Name: "99-worker-psi-karg"},
					State: advisorv1alpha1.ItemPending, Message: "adds the kernel argument psi=1; workers reboot", Diff: psiDiff, Change: advisorv1alpha1.ChangeValues,
				},
			},
		},
	}
	setCondition(vpc, advisorv1alpha1.ConditionReviewRequired, advisorv1alpha1.ReasonAwaitingApproval,
		"the plan changes 2 target(s) (impact High): review status.items[].diff")
	return vpc
}

// completedConfig is load-aware-rebalancing with its plan applied.
func completedConfig() *advisorv1alpha1.VirtPlatformConfig {
	vpc := reviewConfig()
	vpc.Spec.Action = advisorv1alpha1.ActionApply
	vpc.Spec.ApprovedPlanHash = hashA
	vpc.Generation, vpc.Status.ObservedGeneration = 3, 3
	vpc.Status.Phase = advisorv1alpha1.PhaseCompleted
	vpc.Status.Approval = &advisorv1alpha1.ApprovalStatus{MinGeneration: 2, ApprovedPlanHash: hashA, ApprovedGeneration: 3}
	for i := range vpc.Status.Items {
		vpc.Status.Items[i].State = advisorv1alpha1.ItemCompleted
	}
	vpc.Status.Conditions = nil
	setCondition(vpc, advisorv1alpha1.ConditionCompleted, advisorv1alpha1.ReasonApplied, "every item is applied")
	setCondition(vpc, advisorv1alpha1.ConditionReady, "Completed", "every item is applied")
	return vpc
}

func setCondition(vpc *advisorv1alpha1.VirtPlatformConfig, t, reason, msg string) {
	meta.SetStatusCondition(&vpc.Status.Conditions, metav1.Condition{
		Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: vpc.Generation,
	})
}

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&advisorv1alpha1.VirtPlatformConfig{}).WithObjects(objs...).Build()
}

// run executes the plugin with args against c and returns stdout, stderr and the exit code.
func run(t *testing.T, c client.Client, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &Options{
		Streams:      genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		NewClient:    func() (client.Client, error) { return c, nil },
		Now:          func() time.Time { return testNow },
		PollInterval: time.Millisecond,
		IsTerminal:   func() bool { return false },
		Getenv:       func(string) string { return "" },
	}
	root := NewRootCommand(o)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if msg := Message(err); msg != "" {
		errOut.WriteString("error: " + msg + "\n")
	}
	return out.String(), errOut.String(), ExitCode(err)
}

func getVPC(t *testing.T, c client.Client, name string) *advisorv1alpha1.VirtPlatformConfig {
	t.Helper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, vpc); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return vpc
}
