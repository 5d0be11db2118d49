package vmforecast

import (
	"slices"
	"strings"
	"time"
)

// NameBound is how many names a NameList holds; the rest are counted.
const NameBound = 10

// Node is what the update order of a pool's nodes depends on.
type Node struct {
	Name string
	// Zone is the node's topology.kubernetes.io/zone label; "" when it has none.
	Zone string
	// Created is the node's creationTimestamp.
	Created time.Time
}

// UpdateOrder is the order in which the Machine Config Operator's node controller updates
// the nodes (sortNodeList in pkg/controller/node/node_controller.go): by zone, nodes
// without one last, then oldest first. Nodes created in the same second, which the
// operator leaves in no defined order, go by name.
func UpdateOrder(nodes []Node) []string {
	sorted := slices.Clone(nodes)
	slices.SortStableFunc(sorted, func(a, b Node) int {
		switch {
		case (a.Zone == "") != (b.Zone == ""):
			if a.Zone == "" {
				return 1
			}
			return -1
		case a.Zone != b.Zone:
			return strings.Compare(a.Zone, b.Zone)
		case !a.Created.Equal(b.Created):
			return a.Created.Compare(b.Created)
		}
		return strings.Compare(a.Name, b.Name)
	})
	names := make([]string, 0, len(sorted))
	for _, n := range sorted {
		names = append(names, n.Name)
	}
	return names
}

// Pool is one MachineConfigPool whose nodes a roll-out drains.
type Pool struct {
	Name string
	// Nodes are the pool's nodes in the order the node controller updates them
	// (UpdateOrder).
	Nodes []string
	// MaxUnavailable is the pool's maxUnavailable as a number of nodes (at least 1).
	MaxUnavailable int
}

// Waves is how many rounds of at most MaxUnavailable nodes the roll-out takes.
func (p Pool) Waves() int {
	if len(p.Nodes) == 0 {
		return 0
	}
	limit := max(p.MaxUnavailable, 1)
	return (len(p.Nodes) + limit - 1) / limit
}

// firstWave are the nodes the roll-out drains first.
func (p Pool) firstWave() []string {
	return p.Nodes[:min(max(p.MaxUnavailable, 1), len(p.Nodes))]
}

// VMForecast is what the roll-out does to one VM.
type VMForecast struct {
	VM       VM
	Decision Decision
	// Migrations is how many times it live-migrates; Shutdowns how many times it is shut
	// down.
	Migrations int
	Shutdowns  int
	// MayExceed: it tolerates the update taint or is pinned, so the scheduler may place it
	// on a node that is still to be drained, and it may move more often than forecast.
	MayExceed bool
}

// ForecastVMs forecasts, for each VM running on a node of the pool, what the roll-out
// does to it, in the order of vms. VMs on other nodes are left out.
//
// Nothing is updated yet when the first wave is drained, so its VMs land on nodes that
// are still to be drained and move again later. From then on the Machine Config Operator's
// UpdateInProgress:PreferNoSchedule taint on every node still to be updated makes
// kube-scheduler prefer the updated ones (the taint's score outweighs free capacity), so
// every other VM moves once. A VM shut down in the first wave and started again lands on
// such a node too, and is shut down twice.
func ForecastVMs(pool Pool, vms []VM, clusterStrategy string) []VMForecast {
	inPool := map[string]bool{}
	for _, n := range pool.Nodes {
		inPool[n] = true
	}
	first := map[string]bool{}
	for _, n := range pool.firstWave() {
		first[n] = true
	}
	again := pool.Waves() > 1
	var out []VMForecast
	for _, vm := range vms {
		if !inPool[vm.Node] {
			continue
		}
		f := VMForecast{VM: vm, Decision: Classify(vm, clusterStrategy)}
		moves := 1
		if first[vm.Node] && again {
			moves = 2
		}
		switch f.Decision.Outcome {
		case LiveMigrates:
			f.Migrations = moves
			f.MayExceed = vm.ToleratesUpdateTaint || vm.Pinned
		case Restarts:
			f.Shutdowns = 1
			if f.Decision.StartedAgain {
				f.Shutdowns = moves
				f.MayExceed = vm.ToleratesUpdateTaint || vm.Pinned
			}
		case BlocksDrain:
		}
		out = append(out, f)
	}
	return out
}

// NameList is a bounded list of VM names (namespace/name, sorted) and how many more there are.
type NameList struct {
	Names []string
	More  int
}

// Len is the number of VMs the list stands for.
func (l NameList) Len() int { return len(l.Names) + l.More }

// BoundedNames is names sorted, at most NameBound of them, and how many more there are.
func BoundedNames(names []string) NameList {
	slices.Sort(names)
	if len(names) <= NameBound {
		return NameList{Names: names}
	}
	return NameList{Names: names[:NameBound], More: len(names) - NameBound}
}

// PoolForecast is what a roll-out of one pool does to the VMs on its nodes.
type PoolForecast struct {
	Pool string
	// Waves is the number of waves of the roll-out.
	Waves int
	// Migrate, Restart and Block are the numbers of VMs that live-migrate, are shut down,
	// and block the drain; StaysStopped are those shut down that no VirtualMachine starts
	// again.
	Migrate, Restart, Block, StaysStopped int
	// Migrations is the number of live migrations; Shutdowns the number of shut-downs.
	Migrations, Shutdowns int
	// MemoryBytes is the memory all the migrations copy: a VM's memory once per migration.
	MemoryBytes int64
	// Restarting, Blocking and MayExceed name the VMs that are shut down, that block the
	// drain, and that may move more often than forecast.
	Restarting, Blocking, MayExceed NameList
}

// ForecastPool forecasts what the roll-out of pool does to the VMs on its nodes.
func ForecastPool(pool Pool, vms []VM, clusterStrategy string) PoolForecast {
	return Summarize(pool, ForecastVMs(pool, vms, clusterStrategy))
}

// Summarize adds up the forecasts of the pool's VMs.
func Summarize(pool Pool, vms []VMForecast) PoolForecast {
	f := PoolForecast{Pool: pool.Name, Waves: pool.Waves()}
	var restarting, blocking, exceeding []string
	for _, v := range vms {
		switch v.Decision.Outcome {
		case LiveMigrates:
			f.Migrate++
		case Restarts:
			f.Restart++
			restarting = append(restarting, v.VM.Key())
			if !v.Decision.StartedAgain {
				f.StaysStopped++
			}
		case BlocksDrain:
			f.Block++
			blocking = append(blocking, v.VM.Key())
		}
		if v.MayExceed {
			exceeding = append(exceeding, v.VM.Key())
		}
		f.Migrations += v.Migrations
		f.Shutdowns += v.Shutdowns
		f.MemoryBytes += int64(v.Migrations) * v.VM.MemoryBytes
	}
	f.Restarting, f.Blocking, f.MayExceed = BoundedNames(restarting), BoundedNames(blocking), BoundedNames(exceeding)
	return f
}
