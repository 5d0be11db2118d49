// Package vmforecast forecasts what a roll-out of a MachineConfigPool, which drains its
// nodes one wave after the other, does to the KubeVirt virtual machines running on them:
// which live-migrate and how often, which are shut down (and started again or not), and
// which block the drain. It is pure: facts about the VMs and the pool go in, a forecast
// comes out; reading them from a cluster is the caller's business (FromObjects reads one
// VM's facts from its objects).
//
// The rules follow KubeVirt (the pod eviction admitter, the evacuation controller and the
// VirtualMachine controller), the Machine Config Operator's node controller and
// kube-scheduler's default scoring; docs/vm-forecast.md names the sources.
package vmforecast

import "fmt"

// The eviction strategies of KubeVirt (spec.evictionStrategy of a VirtualMachineInstance,
// spec.configuration.evictionStrategy of the KubeVirt CR).
const (
	// StrategyNone lets the drain evict the VM's pod: the VM is shut down.
	StrategyNone = "None"
	// StrategyLiveMigrate migrates the VM; one that cannot migrate blocks the drain.
	StrategyLiveMigrate = "LiveMigrate"
	// StrategyLiveMigrateIfPossible migrates the VM when it can, and shuts it down otherwise.
	StrategyLiveMigrateIfPossible = "LiveMigrateIfPossible"
	// StrategyExternal leaves the VM to another controller: the drain waits until it is gone.
	StrategyExternal = "External"
)

// The run strategies of a VirtualMachine (spec.runStrategy).
const (
	RunStrategyAlways         = "Always"
	RunStrategyRerunOnFailure = "RerunOnFailure"
	RunStrategyManual         = "Manual"
	RunStrategyHalted         = "Halted"
	RunStrategyOnce           = "Once"
)

// UpdateInProgressTaint is the key of the PreferNoSchedule taint the Machine Config
// Operator puts on every node of a pool that still waits for its update.
const UpdateInProgressTaint = "UpdateInProgress"

// VM is what the forecast needs to know about one running VirtualMachineInstance.
type VM struct {
	// Namespace and Name are the VirtualMachineInstance's.
	Namespace, Name string
	// Node is the node it runs on (status.nodeName).
	Node string
	// EvictionStrategy is its own spec.evictionStrategy; "" follows the cluster's.
	EvictionStrategy string
	// LiveMigratable is its LiveMigratable condition; NotMigratableReason says why not
	// (the condition's reason and message).
	LiveMigratable      bool
	NotMigratableReason string
	// ToleratesUpdateTaint: its tolerations tolerate UpdateInProgress:PreferNoSchedule, so
	// the scheduler does not prefer updated nodes for it.
	ToleratesUpdateTaint bool
	// Pinned: a required node affinity or node selector keeps it off some nodes of its pool.
	Pinned bool
	// MemoryBytes is its guest memory, the memory a live migration copies.
	MemoryBytes int64
	// RunStrategy is the run strategy of the VirtualMachine that owns it; "" when none does.
	RunStrategy string
}

// Key is namespace/name.
func (v VM) Key() string { return v.Namespace + "/" + v.Name }

// Outcome is what a drain does to a VM.
type Outcome int

const (
	// LiveMigrates: the VM moves to another node while it runs.
	LiveMigrates Outcome = iota
	// Restarts: the VM is shut down; Decision.StartedAgain says whether it comes back.
	Restarts
	// BlocksDrain: the eviction is refused until the VM is gone or can migrate; the node
	// stays cordoned and the pool's roll-out stalls.
	BlocksDrain
)

func (o Outcome) String() string {
	switch o {
	case LiveMigrates:
		return "live-migrates"
	case Restarts:
		return "restarts"
	case BlocksDrain:
		return "blocks the drain"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Decision is what a drain does to one VM, and why.
type Decision struct {
	Outcome Outcome
	// Strategy is the eviction strategy in effect: the VM's own, else the cluster's, else
	// KubeVirt's default, None.
	Strategy string
	// StartedAgain: a VM that Restarts is started again by its VirtualMachine.
	StartedAgain bool
	// Reason says why, in a few words, for the approver.
	Reason string
}

// EffectiveStrategy is the eviction strategy KubeVirt applies to the VM: its own, else the
// cluster-wide one (the KubeVirt CR's spec.configuration.evictionStrategy), else None,
// KubeVirt's default.
func EffectiveStrategy(vm VM, clusterStrategy string) string {
	switch {
	case vm.EvictionStrategy != "":
		return vm.EvictionStrategy
	case clusterStrategy != "":
		return clusterStrategy
	}
	return StrategyNone
}

// Classify says what draining its node does to the VM under the cluster-wide eviction
// strategy clusterStrategy ("" when the KubeVirt CR sets none).
func Classify(vm VM, clusterStrategy string) Decision {
	strategy := EffectiveStrategy(vm, clusterStrategy)
	d := Decision{Strategy: strategy}
	switch strategy {
	case StrategyLiveMigrate:
		if vm.LiveMigratable {
			d.Outcome, d.Reason = LiveMigrates, "eviction strategy LiveMigrate"
			return d
		}
		d.Outcome, d.Reason = BlocksDrain, "eviction strategy LiveMigrate, but not live-migratable"+reasonSuffix(vm)
		return d
	case StrategyLiveMigrateIfPossible:
		if vm.LiveMigratable {
			d.Outcome, d.Reason = LiveMigrates, "eviction strategy LiveMigrateIfPossible"
			return d
		}
		d.Reason = "eviction strategy LiveMigrateIfPossible, not live-migratable" + reasonSuffix(vm)
	case StrategyExternal:
		d.Outcome, d.Reason = BlocksDrain, "eviction strategy External: waits for another controller to remove it"
		return d
	default:
		d.Reason = "eviction strategy " + strategy
	}
	d.Outcome = Restarts
	d.StartedAgain = startedAgain(vm.RunStrategy)
	if d.StartedAgain {
		d.Reason += ", started again (run strategy " + vm.RunStrategy + ")"
	} else {
		d.Reason += ", " + staysStopped(vm.RunStrategy)
	}
	return d
}

func reasonSuffix(vm VM) string {
	if vm.NotMigratableReason == "" {
		return ""
	}
	return " (" + vm.NotMigratableReason + ")"
}

// startedAgain tells whether the VirtualMachine controller starts a VM of this run
// strategy again after its VirtualMachineInstance was shut down by an eviction. The
// eviction shuts the guest down gracefully, so the instance ends Succeeded: Always starts
// it again; RerunOnFailure only after a failure (the grace period running out), which is
// not forecast; Manual, Halted and Once leave it stopped, and so does the lack of a
// VirtualMachine.
func startedAgain(runStrategy string) bool {
	return runStrategy == RunStrategyAlways
}

func staysStopped(runStrategy string) string {
	if runStrategy == "" {
		return "stays stopped (no VirtualMachine owns it)"
	}
	return "stays stopped (run strategy " + runStrategy + ")"
}
