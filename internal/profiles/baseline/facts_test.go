package baseline_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
)

// The operator keeps of a Node only the labels nodeconfig.IsFactLabel names: the facts of
// a worker read from those alone are the facts read from all its labels.
func TestTheFactLabelsAreEveryLabelTheFactsAreReadFrom(t *testing.T) {
	workers := []map[string]string{
		{
			nodeconfig.WorkerNodeLabel: "", baseline.LabelNUMA: "true", baseline.LabelCPUVendor: "GenuineIntel",
			baseline.LabelIOMMU: "true", "feature.node.kubernetes.io/pci-0302_10de.present": "true",
			"feature.node.kubernetes.io/pci-0200_8086_1572.present":  "true",
			"feature.node.kubernetes.io/pci-0200_8086.sriov.capable": "true",
			"feature.node.kubernetes.io/usb-ef_046d_c52b.present":    "true",
			"feature.node.kubernetes.io/cpu-cpuid.AVX512F":           "true",
			"cpu-feature.node.kubevirt.io/vmx":                       "true", "kubernetes.io/hostname": "worker-0",
		},
		{
			nodeconfig.WorkerNodeLabel: "", baseline.LabelNUMA: "false", baseline.LabelCPUVendor: "AMD",
			"feature.node.kubernetes.io/usb-ff_0bda_8153.present": "true", "topology.kubernetes.io/zone": "rack1",
		},
		{nodeconfig.WorkerNodeLabel: "", "kubernetes.io/hostname": "worker-2"},
	}
	var all, kept []baseline.Worker
	for _, labels := range workers {
		all = append(all, baseline.Worker{Labels: labels})
		facts := maps.Clone(labels)
		maps.DeleteFunc(facts, func(k, _ string) bool { return !nodeconfig.IsFactLabel(k) })
		kept = append(kept, baseline.Worker{Labels: facts})
	}
	if got, want := baseline.FactsOf(kept...), baseline.FactsOf(all...); !reflect.DeepEqual(got, want) {
		t.Errorf("the facts of the kept labels are %+v, of all labels %+v", got, want)
	}
	if nodeconfig.IsFactLabel("kubernetes.io/hostname") || nodeconfig.IsFactLabel("feature.node.kubernetes.io/pci-0200_8086.sriov.capable") {
		t.Error("a label no profile decides from is kept")
	}
}
