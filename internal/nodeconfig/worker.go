package nodeconfig

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	// RoleLabel is the MachineConfig label the worker pool's machineConfigSelector matches.
	RoleLabel = "machineconfiguration.openshift.io/role"
	// WorkerPoolLabel is the label of the worker MachineConfigPool that a KubeletConfig's
	// machineConfigPoolSelector matches.
	WorkerPoolLabel = "pools.operator.machineconfiguration.openshift.io/worker"
	// WorkerNodeLabel marks worker nodes.
	WorkerNodeLabel = "node-role.kubernetes.io/worker"
)

// workerMachineConfig is a MachineConfig for the worker pool with the given spec.
func workerMachineConfig(name string, spec map[string]any) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	mc.SetGroupVersionKind(targets.MachineConfig.GVK)
	mc.SetName(name)
	mc.SetLabels(map[string]string{RoleLabel: "worker"})
	return mc
}
