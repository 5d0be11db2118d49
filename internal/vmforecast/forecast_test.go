package vmforecast_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

const gib = int64(1) << 30

// workers is a pool of n nodes, worker-0 first, with maxUnavailable limit.
func workers(n, limit int) vmforecast.Pool {
	p := vmforecast.Pool{Name: "worker", MaxUnavailable: limit}
	for i := range n {
		p.Nodes = append(p.Nodes, fmt.Sprintf("worker-%d", i))
	}
	return p
}

// vmsOn puts perNode migratable 2 GiB VMs, run strategy Always, on each node of the pool,
// named vm-<node>-<i> in namespace vms; change adjusts the VM of each index.
func vmsOn(p vmforecast.Pool, perNode int, change func(node, i int, vm *vmforecast.VM)) []vmforecast.VM {
	var out []vmforecast.VM
	for n, node := range p.Nodes {
		for i := range perNode {
			vm := vmforecast.VM{
				Namespace: "vms", Name: fmt.Sprintf("vm-%s-%d", node, i), Node: node,
				LiveMigratable: true, MemoryBytes: 2 * gib, RunStrategy: vmforecast.RunStrategyAlways,
			}
			if change != nil {
				change(n, i, &vm)
			}
			out = append(out, vm)
		}
	}
	return out
}

func TestForecastPool(t *testing.T) {
	pool := workers(6, 1)
	cases := []struct {
		name  string
		pool  vmforecast.Pool
		vms   []vmforecast.VM
		want  vmforecast.PoolForecast
		lines string
	}{
		{
			name: "when 6 workers at maxUnavailable 1 carry 10 migratable VMs each, the first wave's 10 move twice and the other 50 once: 70 migrations",
			pool: pool, vms: vmsOn(pool, 10, nil),
			want:  vmforecast.PoolForecast{Pool: "worker", Waves: 6, Migrate: 60, Migrations: 70, MemoryBytes: 140 * gib},
			lines: "60 VMs live-migrate (70 migrations)",
		},
		{
			name: "when maxUnavailable is 2, the first wave has two nodes, so 20 VMs move twice",
			pool: workers(6, 2), vms: vmsOn(workers(6, 2), 10, nil),
			want:  vmforecast.PoolForecast{Pool: "worker", Waves: 3, Migrate: 60, Migrations: 80, MemoryBytes: 160 * gib},
			lines: "60 VMs live-migrate (80 migrations)",
		},
		{
			name: "when the whole pool is one wave, nothing is left to be drained again: every VM moves once",
			pool: workers(3, 3), vms: vmsOn(workers(3, 3), 2, nil),
			want:  vmforecast.PoolForecast{Pool: "worker", Waves: 1, Migrate: 6, Migrations: 6, MemoryBytes: 12 * gib},
			lines: "6 VMs live-migrate (6 migrations)",
		},
		{
			name: "when some VMs are shut down, one cannot migrate and one tolerates every taint, each is counted where it belongs",
			pool: pool,
			vms: vmsOn(pool, 10, func(node, i int, vm *vmforecast.VM) {
				switch {
				case node == 0 && i == 0: // shut down in the first wave, started again on a node still to be drained
					vm.EvictionStrategy = vmforecast.StrategyNone
				case node == 2 && i == 0:
					vm.EvictionStrategy, vm.RunStrategy = vmforecast.StrategyNone, vmforecast.RunStrategyManual
				case node == 3 && i == 0:
					vm.Namespace, vm.Name = "db", "pg-0"
					vm.LiveMigratable, vm.NotMigratableReason = false, "DisksNotLiveMigratable"
				case node == 4 && i == 0:
					vm.ToleratesUpdateTaint = true
				}
			}),
			want: vmforecast.PoolForecast{
				Pool: "worker", Waves: 6, Migrate: 57, Restart: 2, Block: 1, StaysStopped: 1,
				Migrations: 66, Shutdowns: 3, MemoryBytes: 132 * gib,
				Restarting: vmforecast.NameList{Names: []string{"vms/vm-worker-0-0", "vms/vm-worker-2-0"}},
				Blocking:   vmforecast.NameList{Names: []string{"db/pg-0"}},
				MayExceed:  vmforecast.NameList{Names: []string{"vms/vm-worker-4-0"}},
			},
			lines: "57 VMs live-migrate (66 migrations), 2 restart (1 stays stopped), 1 blocks the drain (db/pg-0); " +
				"1 may move more often (vms/vm-worker-4-0)",
		},
		{
			name: "when many VMs block, the names stop at the bound and the rest are counted",
			pool: workers(2, 1),
			vms: vmsOn(workers(2, 1), 7, func(_, _ int, vm *vmforecast.VM) {
				vm.EvictionStrategy = vmforecast.StrategyExternal
			}),
			want: vmforecast.PoolForecast{
				Pool: "worker", Waves: 2, Block: 14,
				Blocking: vmforecast.NameList{Names: []string{
					"vms/vm-worker-0-0", "vms/vm-worker-0-1", "vms/vm-worker-0-2", "vms/vm-worker-0-3", "vms/vm-worker-0-4",
					"vms/vm-worker-0-5", "vms/vm-worker-0-6", "vms/vm-worker-1-0", "vms/vm-worker-1-1", "vms/vm-worker-1-2",
				}, More: 4},
			},
			lines: "14 VMs block the drain (vms/vm-worker-0-0, vms/vm-worker-0-1, vms/vm-worker-0-2 and 11 more)",
		},
		{
			name: "when a VM runs on a node of another pool, it is left out; when none is left, the summary says so",
			pool: workers(2, 1),
			vms:  []vmforecast.VM{{Namespace: "vms", Name: "elsewhere", Node: "infra-0", LiveMigratable: true}},
			want: vmforecast.PoolForecast{Pool: "worker", Waves: 2}, lines: "no VMs run on its nodes",
		},
		{
			name: "when one VM moves once, the words are singular",
			pool: workers(2, 1),
			vms:  []vmforecast.VM{{Namespace: "vms", Name: "one", Node: "worker-1", LiveMigratable: true, Pinned: true, MemoryBytes: gib}},
			want: vmforecast.PoolForecast{Pool: "worker", Waves: 2, Migrate: 1, Migrations: 1, MemoryBytes: gib,
				MayExceed: vmforecast.NameList{Names: []string{"vms/one"}}},
			lines: "1 VM live-migrates (1 migration); 1 may move more often (vms/one)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := vmforecast.ForecastPool(c.pool, c.vms, vmforecast.StrategyLiveMigrate)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("ForecastPool =\n %+v\nwant\n %+v", got, c.want)
			}
			if line := vmforecast.Summary(got); line != c.lines {
				t.Errorf("Summary = %q, want %q", line, c.lines)
			}
		})
	}
}

func TestForecastVMsCountsEachVM(t *testing.T) {
	pool := workers(6, 1)
	twice, once := 0, 0
	for _, f := range vmforecast.ForecastVMs(pool, vmsOn(pool, 10, nil), vmforecast.StrategyLiveMigrate) {
		switch {
		case f.VM.Node == "worker-0" && f.Migrations == 2:
			twice++
		case f.VM.Node != "worker-0" && f.Migrations == 1:
			once++
		default:
			t.Errorf("%s on %s migrates %d times", f.VM.Key(), f.VM.Node, f.Migrations)
		}
	}
	if twice != 10 || once != 50 {
		t.Errorf("%d VMs move twice and %d once, want 10 and 50", twice, once)
	}
}

func TestUpdateOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []vmforecast.Node{
		{Name: "no-zone-new", Created: t0.Add(time.Hour)},
		{Name: "no-zone-old", Created: t0},
		{Name: "b-1", Zone: "b", Created: t0},
		{Name: "a-young", Zone: "a", Created: t0.Add(time.Minute)},
		{Name: "a-2", Zone: "a", Created: t0},
		{Name: "a-1", Zone: "a", Created: t0},
	}
	want := []string{"a-1", "a-2", "a-young", "b-1", "no-zone-old", "no-zone-new"}
	if got := vmforecast.UpdateOrder(nodes); !reflect.DeepEqual(got, want) {
		t.Errorf("UpdateOrder = %v, want %v (by zone, zoneless last, then oldest, then by name)", got, want)
	}
}
