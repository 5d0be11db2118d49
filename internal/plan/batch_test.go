package plan_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

func batchItem(t *testing.T, name, apiVersion, kind string) advisorv1alpha1.PlanItem {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}})
	if err != nil {
		t.Fatal(err)
	}
	return advisorv1alpha1.PlanItem{Name: name, DesiredState: &runtime.RawExtension{Raw: raw},
		TargetRef: advisorv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}}
}

func TestOrderTakesTheItemsBeforeTheBatchThenTheBatchThenTheRest(t *testing.T) {
	const mc = "machineconfiguration.openshift.io/v1"
	items := []advisorv1alpha1.PlanItem{
		batchItem(t, "hco", "hco.kubevirt.io/v1beta1", "HyperConverged"),
		batchItem(t, "psi", mc, "MachineConfig"),
		batchItem(t, "descheduler", "operator.openshift.io/v1", "KubeDescheduler"),
		batchItem(t, "kubelet", mc, "KubeletConfig"),
		batchItem(t, "nhc", "remediation.medik8s.io/v1alpha1", "NodeHealthCheck"),
	}
	got := plan.ExecutionOrder(items)
	want := []int{0, 1, 3, 2, 4}
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v: the batch (psi, kubelet) comes after the items before it, the rest after the batch", got, want)
		}
	}
}

func TestDisruptionSaysWhatEachPoolsRolloutDoes(t *testing.T) {
	got := plan.Disruption([]advisorv1alpha1.PoolRollout{
		{Pool: "master"}, // only a pause given back: no rollout
		{Pool: "worker", Items: []string{"psi"}, Nodes: 6, Waves: 6, Reboot: true},
		{Pool: "infra", Items: []string{"kubelet"}, Nodes: 2, Waves: 1},
	})
	want := "reboots 6 worker node(s) once, in 6 wave(s); updates 2 infra node(s) once, in 1 wave(s)"
	if got != want {
		t.Fatalf("disruption %q, want %q", got, want)
	}
}
