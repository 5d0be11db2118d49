package vmforecast_test

import (
	"testing"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

func TestClassify(t *testing.T) {
	migratable := vmforecast.VM{Namespace: "ns", Name: "vm", LiveMigratable: true, RunStrategy: vmforecast.RunStrategyAlways}
	pinnedDisk := vmforecast.VM{Namespace: "ns", Name: "vm", NotMigratableReason: "DisksNotLiveMigratable", RunStrategy: vmforecast.RunStrategyAlways}
	with := func(vm vmforecast.VM, strategy, runStrategy string) vmforecast.VM {
		vm.EvictionStrategy, vm.RunStrategy = strategy, runStrategy
		return vm
	}
	cases := []struct {
		name         string
		vm           vmforecast.VM
		cluster      string
		outcome      vmforecast.Outcome
		strategy     string
		startedAgain bool
		reason       string
	}{
		{"when neither the VM nor the cluster sets a strategy, KubeVirt's default None shuts it down and Always starts it again",
			migratable, "", vmforecast.Restarts, "None", true, "eviction strategy None, started again (run strategy Always)"},
		{"when the cluster says LiveMigrate and the VM can migrate, it live-migrates",
			migratable, "LiveMigrate", vmforecast.LiveMigrates, "LiveMigrate", false, "eviction strategy LiveMigrate"},
		{"when the cluster says LiveMigrate and the VM cannot migrate, it blocks the drain and says why",
			pinnedDisk, "LiveMigrate", vmforecast.BlocksDrain, "LiveMigrate", false,
			"eviction strategy LiveMigrate, but not live-migratable (DisksNotLiveMigratable)"},
		{"when the VM's own None overrides the cluster's LiveMigrate, it is shut down",
			with(migratable, "None", "Always"), "LiveMigrate", vmforecast.Restarts, "None", true,
			"eviction strategy None, started again (run strategy Always)"},
		{"when the VM's own LiveMigrate overrides the cluster's None, a non-migratable VM blocks",
			with(pinnedDisk, "LiveMigrate", "Always"), "None", vmforecast.BlocksDrain, "LiveMigrate", false,
			"eviction strategy LiveMigrate, but not live-migratable (DisksNotLiveMigratable)"},
		{"when LiveMigrateIfPossible and migratable, it live-migrates",
			migratable, "LiveMigrateIfPossible", vmforecast.LiveMigrates, "LiveMigrateIfPossible", false,
			"eviction strategy LiveMigrateIfPossible"},
		{"when LiveMigrateIfPossible and not migratable, it is shut down as under None",
			pinnedDisk, "LiveMigrateIfPossible", vmforecast.Restarts, "LiveMigrateIfPossible", true,
			"eviction strategy LiveMigrateIfPossible, not live-migratable (DisksNotLiveMigratable), started again (run strategy Always)"},
		{"when External, it blocks the drain even if it could migrate",
			migratable, "External", vmforecast.BlocksDrain, "External", false,
			"eviction strategy External: waits for another controller to remove it"},
		{"when shut down under RerunOnFailure, it stays stopped (a graceful shutdown is no failure)",
			with(migratable, "None", "RerunOnFailure"), "", vmforecast.Restarts, "None", false,
			"eviction strategy None, stays stopped (run strategy RerunOnFailure)"},
		{"when shut down under Manual, it stays stopped",
			with(migratable, "None", "Manual"), "", vmforecast.Restarts, "None", false,
			"eviction strategy None, stays stopped (run strategy Manual)"},
		{"when shut down with no VirtualMachine, it stays stopped",
			with(migratable, "None", ""), "", vmforecast.Restarts, "None", false,
			"eviction strategy None, stays stopped (no VirtualMachine owns it)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := vmforecast.Classify(c.vm, c.cluster)
			if d.Outcome != c.outcome || d.Strategy != c.strategy || d.StartedAgain != c.startedAgain || d.Reason != c.reason {
				t.Errorf("Classify = {%v %q startedAgain=%v %q}, want {%v %q startedAgain=%v %q}",
					d.Outcome, d.Strategy, d.StartedAgain, d.Reason, c.outcome, c.strategy, c.startedAgain, c.reason)
			}
		})
	}
}
