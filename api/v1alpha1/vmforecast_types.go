package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

// VMActual is what a pool's rollout did to the virtual machines on its nodes, counted when
// it finished, to set beside its forecast (PoolRollout.vms).
type VMActual struct {
	// unknownReason says why what happened to the VMs is not known; the counts below are
	// then empty.
	// +optional
	UnknownReason string `json:"unknownReason,omitempty"`
	// migrations is the number of live migrations the drains of the pool's nodes made
	// during the rollout: the VirtualMachineInstanceMigrations KubeVirt's evacuation
	// created for them.
	// +optional
	Migrations int32 `json:"migrations,omitempty"`
	// migratedVMs is the number of VMs that live-migrated at least once.
	// +optional
	MigratedVMs int32 `json:"migratedVMs,omitempty"`
	// maxPerVM is the most migrations of one VM.
	// +optional
	MaxPerVM int32 `json:"maxPerVM,omitempty"`
	// restarts is the number of VMs running on the pool's nodes when the rollout started
	// that were shut down during it (started again or not); absent when the operator did
	// not see the rollout start.
	// +optional
	Restarts *int32 `json:"restarts,omitempty"`
	// blocked is the number of VMs the operator saw block the drain of a node during the
	// rollout.
	// +optional
	Blocked int32 `json:"blocked,omitempty"`
	// blocking names them.
	// +optional
	Blocking *VMNames `json:"blocking,omitempty"`
	// movedMore names the VMs that live-migrated more often than forecast.
	// +optional
	MovedMore *VMNames `json:"movedMore,omitempty"`
	// duration is how long the rollout took, from the pool's resume to its last node.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// asForecast is true when the migrations, restarts and blocked drains are those
	// forecast.
	// +optional
	AsForecast bool `json:"asForecast,omitempty"`
	// summary says it in one line, forecast beside actual.
	// +optional
	Summary string `json:"summary,omitempty"`
}
