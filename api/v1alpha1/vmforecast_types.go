package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// VMForecast is what draining a pool's nodes for its rollout does to the KubeVirt virtual
// machines running on them: which live-migrate and how often, which are shut down, and
// which block the drain. VMs move all the time, so it is refreshed while the plan waits,
// and never part of status.planHash: a VM that moves never invalidates an approval.
type VMForecast struct {
	// unknownReason says why the VMs on the pool's nodes are unknown (the cluster serves
	// no VirtualMachineInstances, or they are not readable); the counts below are then
	// empty. Empty when the VMs were read.
	// +optional
	UnknownReason string `json:"unknownReason,omitempty"`
	// liveMigrate is the number of VMs that live-migrate.
	// +optional
	LiveMigrate int32 `json:"liveMigrate,omitempty"`
	// restart is the number of VMs that are shut down; stayStopped of them are not started
	// again (their VirtualMachine's run strategy does not, or none owns them).
	// +optional
	Restart int32 `json:"restart,omitempty"`
	// stayStopped is the number of VMs shut down and not started again.
	// +optional
	StayStopped int32 `json:"stayStopped,omitempty"`
	// block is the number of VMs that block the drain: the node stays cordoned and the
	// rollout stalls until each is migrated, stopped or given another eviction strategy.
	// +optional
	Block int32 `json:"block,omitempty"`
	// migrations is the number of live migrations: the VMs of the first wave move twice,
	// the others once.
	// +optional
	Migrations int32 `json:"migrations,omitempty"`
	// memoryToMigrate is the guest memory all the migrations copy.
	// +optional
	MemoryToMigrate *resource.Quantity `json:"memoryToMigrate,omitempty"`
	// restarting names the VMs that are shut down.
	// +optional
	Restarting *VMNames `json:"restarting,omitempty"`
	// blocking names the VMs that block the drain.
	// +optional
	Blocking *VMNames `json:"blocking,omitempty"`
	// mayExceed names the VMs that may move more often than forecast: they tolerate the
	// Machine Config Operator's UpdateInProgress taint, or are pinned by node affinity.
	// +optional
	MayExceed *VMNames `json:"mayExceed,omitempty"`
	// summary says it in one line, as status.disruption and the approval message show it;
	// empty when the cluster serves no VirtualMachineInstances (it runs no VMs).
	// +optional
	Summary string `json:"summary,omitempty"`
}

// VMNames is a bounded list of VMs, and how many more there are.
type VMNames struct {
	// names are namespace/name of the first VMs, sorted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Names []string `json:"names,omitempty"`
	// more is the number of VMs beyond names.
	// +optional
	More int32 `json:"more,omitempty"`
}
