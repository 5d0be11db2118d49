package plan_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// benchmarkTarget is a KubeDescheduler as large as a busy cluster's: many annotations
// and managed-fields entries that the diff must strip.
func benchmarkTarget(interval int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1",
		"kind":       "KubeDescheduler",
		"metadata": map[string]any{
			"name": "cluster", "namespace": "openshift-kube-descheduler-operator",
			"resourceVersion": "123456", "generation": int64(42), "uid": "5f0c",
		},
		"spec": map[string]any{
			"managementState":             "Managed",
			"mode":                        "Automatic",
			"deschedulingIntervalSeconds": interval,
			"profiles":                    []any{"AffinityAndTaints", "SoftTopologyAndDuplicates", "KubeVirtRelieveAndMigrate"},
			"profileCustomizations": map[string]any{
				"devDeviationThresholds": "AsymmetricLow", "devEnableEvictionsInBackground": true, "devEnableSoftTainter": true,
			},
			"evictionLimits": map[string]any{"total": int64(5), "node": int64(2)},
		},
	}}
	annotations := map[string]string{}
	var managed []any
	for i := range 50 {
		annotations[fmt.Sprintf("example.com/note-%d", i)] = fmt.Sprintf("value %d", i)
		managed = append(managed, map[string]any{"manager": fmt.Sprintf("m%d", i), "operation": "Update"})
	}
	u.SetAnnotations(annotations)
	u.Object["metadata"].(map[string]any)["managedFields"] = managed
	return u
}

func BenchmarkDiff(b *testing.B) {
	live, planned := benchmarkTarget(3600), benchmarkTarget(60)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plan.Diff(live, planned); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshotHash(b *testing.B) {
	desired, live := benchmarkTarget(60), benchmarkTarget(3600)
	b.ReportAllocs()
	for b.Loop() {
		plan.SnapshotHash(desired, live)
	}
}

func BenchmarkPlanHash(b *testing.B) {
	raw, err := benchmarkTarget(60).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	items := make([]advisorv1alpha1.PlanItem, 12)
	for i := range items {
		items[i] = advisorv1alpha1.PlanItem{Name: fmt.Sprintf("item-%d", i), Diff: "(no changes)"}
		items[i].DesiredState = &runtime.RawExtension{}
		items[i].DesiredState.Raw = raw
	}
	b.ReportAllocs()
	for b.Loop() {
		plan.PlanHash(0, items)
	}
}
