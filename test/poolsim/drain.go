package poolsim

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

// migration is a live migration in flight.
type migration struct {
	namespace, name     string
	vmi, source, target string
	memory              int64
	until               time.Time
}

// taintNodes plays the node controller's taint of an unpaused pool: every node whose
// desiredConfig is not the pool's configuration carries UpdateInProgress:PreferNoSchedule,
// the others do not.
func (s *Simulator) taintNodes(ctx context.Context, p *pass, pl *pool) {
	target := pl.Spec.Configuration.Name
	if !s.opts.VMs || pl.Spec.Paused || target == "" {
		return
	}
	for _, n := range p.snap.nodesOf[pl.Name] {
		pending := n.Annotations[DesiredConfigAnnotation] != target
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&updateInProgressTaint) })
		if pending == tainted {
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.MatchTaint(&updateInProgressTaint) })
		if pending {
			taints = append(taints, updateInProgressTaint)
		}
		raw, err := toMaps(taints)
		if err == nil {
			err = s.patch(ctx, p, nodeGVK, n.Name, n.ResourceVersion, map[string]any{"spec": map[string]any{"taints": raw}}, false)
		}
		s.report(p, err)
	}
}

// drainNode evicts every VM of the cordoned node as the pod eviction admitter of KubeVirt
// answers the drain, and tells whether none is left.
func (s *Simulator) drainNode(ctx context.Context, p *pass, n *corev1.Node) bool {
	vmis := p.snap.vmisOn[n.Name]
	blocking := map[string]bool{}
	defer func() {
		s.mu.Lock()
		s.blocking[n.Name] = blocking
		s.mu.Unlock()
	}()
	if len(vmis) == 0 {
		return true
	}
	for _, vmi := range vmis {
		if _, moving := s.migrations[vmi.key()]; moving || p.migrated[vmi.key()] || vmi.DeletionTimestamp != nil {
			continue
		}
		switch action, why := evictionOf(vmi, p.snap.kubeVirt.evictionStrategy); action {
		case evictionMigrates:
			s.startMigration(ctx, p, vmi)
		case evictionShutsDown:
			s.shutDown(ctx, p, vmi, why)
		case evictionRefused:
			blocking[vmi.key()] = true
			if !s.blockedBefore(n.Name, vmi.key()) {
				s.logf("node %s: the drain is blocked by VirtualMachineInstance %s (%s)", n.Name, vmi.key(), why)
			}
		}
	}
	return false
}

func (s *Simulator) blockedBefore(node, vmi string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocking[node][vmi]
}

type eviction int

const (
	evictionMigrates eviction = iota
	evictionShutsDown
	evictionRefused
)

// evictionOf is how KubeVirt answers the eviction of the VM's pod (admitLauncherPod of
// pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go, with
// VMIEvictionStrategy of pkg/util/migrations): the VM's own strategy, else the cluster's,
// else None. LiveMigrate migrates a LiveMigratable VM and refuses the others;
// LiveMigrateIfPossible migrates or lets the pod go; External refuses and leaves the VM to
// another controller; None lets the pod go.
func evictionOf(vmi *vmInstance, clusterStrategy string) (eviction, string) {
	strategy := vmi.Spec.EvictionStrategy
	if strategy == "" {
		strategy = clusterStrategy
	}
	switch strategy {
	case vmforecast.StrategyLiveMigrate:
		if vmi.liveMigratable() {
			return evictionMigrates, strategy
		}
		return evictionRefused, "LiveMigrate, not live-migratable"
	case vmforecast.StrategyLiveMigrateIfPossible:
		if vmi.liveMigratable() {
			return evictionMigrates, strategy
		}
		return evictionShutsDown, "LiveMigrateIfPossible, not live-migratable"
	case vmforecast.StrategyExternal:
		return evictionRefused, "External"
	}
	return evictionShutsDown, "eviction strategy None"
}

// startMigration plays the evacuation controller (pkg/virt-controller/watch/drain/
// evacuation/evacuation.go): a VirtualMachineInstanceMigration for the VM, within the
// cluster's and the source node's limits of concurrent migrations, to the node the
// scheduler model picks (the target pod may not go to the source node).
func (s *Simulator) startMigration(ctx context.Context, p *pass, vmi *vmInstance) {
	source, sent := vmi.Status.NodeName, 0
	for _, m := range s.migrations {
		if m.source == source {
			sent++
		}
	}
	if len(s.migrations) >= p.snap.kubeVirt.migrationsPerCluster || sent >= p.snap.kubeVirt.perNodeSent {
		return // a migration that ends wakes the simulator
	}
	target := s.schedule(p, vmi.Spec, source)
	if target == "" {
		s.logf("VirtualMachineInstance %s: no node has room to migrate to (retrying)", vmi.key())
		s.wakeAt(p.now.Add(retryInterval))
		return
	}
	vmim := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"generateName": "kubevirt-evacuation-", "namespace": vmi.Namespace,
			"annotations": map[string]any{evacuationAnnotation: source},
		},
		"spec": map[string]any{"vmiName": vmi.Name},
	}}
	vmim.SetGroupVersionKind(migrationGVK)
	if err := s.create(ctx, vmim); err != nil {
		s.report(p, err)
		return
	}
	state := map[string]any{"sourceNode": source, "targetNode": target, "startTimestamp": metav1.NewTime(p.now).Rfc3339Copy()}
	body := map[string]any{"status": map[string]any{"evacuationNodeName": source, "migrationState": state}}
	if err := s.patchIn(ctx, p, vmiGVK, vmi.Namespace, vmi.Name, vmi.ResourceVersion, body, false); err != nil {
		s.report(p, err)
	}
	m := &migration{namespace: vmi.Namespace, name: vmim.GetName(), vmi: vmi.Name, source: source, target: target,
		memory: vmi.Spec.memory(), until: p.now.Add(s.opts.MigrationTime)}
	s.migrations[vmi.key()] = m
	p.vmMemory[target] += m.memory
	s.logf("VirtualMachineInstance %s: migrating from %s to %s (%s)", vmi.key(), source, target, m.name)
	s.wakeAt(m.until)
}

// completeMigrations ends the migrations whose time is up: the VM runs on the target
// node, and the migration Succeeded.
func (s *Simulator) completeMigrations(ctx context.Context, p *pass) {
	for key, m := range s.migrations {
		vmi := p.snap.vmiByKey[key]
		if vmi == nil {
			delete(s.migrations, key)
			continue
		}
		if p.now.Before(m.until) {
			s.wakeAt(m.until)
			continue
		}
		ended := metav1.NewTime(p.now).Rfc3339Copy()
		state := map[string]any{"sourceNode": m.source, "targetNode": m.target, "completed": true, "endTimestamp": ended}
		body := map[string]any{"status": map[string]any{"nodeName": m.target, "evacuationNodeName": nil, "migrationState": state}}
		if err := s.patchIn(ctx, p, vmiGVK, m.namespace, m.vmi, vmi.ResourceVersion, body, false); err != nil {
			s.report(p, err)
			continue
		}
		status := map[string]any{"status": map[string]any{"phase": "Succeeded", "migrationState": state}}
		s.report(p, s.patchIn(ctx, p, migrationGVK, m.namespace, m.name, "", status, true))
		delete(s.migrations, key)
		p.migrated[key] = true
		s.mu.Lock()
		s.migrated[key]++
		count := s.migrated[key]
		s.mu.Unlock()
		s.logf("VirtualMachineInstance %s: migrated to %s (migration %d)", key, m.target, count)
	}
}

// shutDown lets the drain take the VM's pod: the VirtualMachineInstance ends and is
// removed (the graceful shutdown, its Succeeded phase and the VirtualMachine controller's
// deletion of it are one step here).
func (s *Simulator) shutDown(ctx context.Context, p *pass, vmi *vmInstance, why string) {
	if err := s.removeIn(ctx, vmiGVK, vmi.Namespace, vmi.Name); err != nil {
		s.report(p, err)
		return
	}
	s.mu.Lock()
	s.shutdowns[vmi.key()]++
	s.mu.Unlock()
	s.logf("VirtualMachineInstance %s: shut down on %s (%s)", vmi.key(), vmi.Status.NodeName, why)
}

// runVMControllers plays the VirtualMachine controller (syncRunStrategy of
// pkg/virt-controller/watch/vm/vm.go) for the run strategies a drain meets: Always starts
// a VirtualMachineInstance that is gone again, on the node the scheduler model picks;
// Halted stops one that runs. The others leave things as they are.
func (s *Simulator) runVMControllers(ctx context.Context, p *pass) {
	for _, key := range slices.Sorted(maps.Keys(p.snap.vms)) {
		vm := p.snap.vms[key]
		vmi := p.snap.vmiByKey[key]
		switch strategy := vm.runStrategy(); {
		case strategy == vmforecast.RunStrategyAlways && vmi == nil && vm.DeletionTimestamp == nil:
			s.startVM(ctx, p, vm)
		case strategy == vmforecast.RunStrategyHalted && vmi != nil && vmi.DeletionTimestamp == nil:
			if err := s.removeIn(ctx, vmiGVK, vmi.Namespace, vmi.Name); err != nil {
				s.report(p, err)
				continue
			}
			s.logf("VirtualMachine %s: stopped (run strategy Halted)", key)
		}
	}
}

func (s *Simulator) startVM(ctx context.Context, p *pass, vm *virtualMachine) {
	var spec vmiSpec
	if raw, _, _ := unstructured.NestedMap(vm.template, "spec"); raw != nil {
		if err := decode(&unstructured.Unstructured{Object: raw}, &spec); err != nil {
			s.logf("VirtualMachine %s: %v", vm.key(), err)
			return
		}
	}
	node := s.schedule(p, spec, "")
	if node == "" {
		s.logf("VirtualMachine %s: no node has room to start on (retrying)", vm.key())
		s.wakeAt(p.now.Add(retryInterval))
		return
	}
	owner := &unstructured.Unstructured{}
	owner.SetName(vm.Name)
	owner.SetUID(vm.UID)
	if err := s.create(ctx, newVMI(vm.Namespace, vm.Name, owner, vm.template, node)); err != nil {
		s.report(p, err)
		return
	}
	p.vmMemory[node] += spec.memory()
	s.logf("VirtualMachine %s: started on %s", vm.key(), node)
}

// Scheduler weights of the default profile of kube-scheduler
// (pkg/scheduler/apis/config/v1/default_plugins.go): TaintToleration 3, NodeResourcesFit 1.
const (
	taintWeight  = 3
	fitWeight    = 1
	maxNodeScore = 100
	noScore      = -1
)

// schedule is the node kube-scheduler would pick for a VM's pod, not on exclude.
// Filter: schedulable, Ready, every NoSchedule and NoExecute taint tolerated, node
// selector and required node affinity met, room for its memory. Score: 3 × TaintToleration
// (the intolerable PreferNoSchedule taints, fewest best, normalized to 0–100) + 1 ×
// LeastAllocated on memory (the share of allocatable memory left free, 100 on a node
// without a reported memory). Ties go to the first node by name. "" when no node fits.
func (s *Simulator) schedule(p *pass, spec vmiSpec, exclude string) string {
	type candidate struct {
		name        string
		intolerable int
		free        int
	}
	var feasible []candidate
	need := spec.memory()
	for _, n := range p.snap.nodes {
		if n.Name == exclude || n.Spec.Unschedulable || !nodeReady(n) || !fits(spec, n) {
			continue
		}
		c := candidate{name: n.Name, free: maxNodeScore}
		if alloc := n.Status.Allocatable.Memory().Value(); alloc > 0 {
			left := alloc - p.vmMemory[n.Name] - need
			if left < 0 {
				continue
			}
			c.free = int(left * maxNodeScore / alloc)
		}
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !vmforecast.Tolerates(spec.Tolerations, t) {
				c.intolerable++
			}
		}
		feasible = append(feasible, c)
	}
	most := 0
	for _, c := range feasible {
		most = max(most, c.intolerable)
	}
	best, bestScore := "", noScore
	for _, c := range feasible {
		taintScore := maxNodeScore
		if most > 0 {
			taintScore = maxNodeScore - c.intolerable*maxNodeScore/most
		}
		score := taintWeight*taintScore + fitWeight*c.free
		if score > bestScore || (score == bestScore && c.name < best) {
			best, bestScore = c.name, score
		}
	}
	return best
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fits applies the filters of TaintToleration (NoSchedule, NoExecute) and NodeAffinity.
func fits(spec vmiSpec, n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectPreferNoSchedule && !vmforecast.Tolerates(spec.Tolerations, t) {
			return false
		}
	}
	for k, v := range spec.NodeSelector {
		if have, ok := n.Labels[k]; !ok || have != v {
			return false
		}
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	ok, err := vmforecast.MatchesNodeSelector(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, n.Name, n.Labels)
	return err == nil && ok
}

// vmMemory is the memory the VMs running on each node, and those migrating to it, take.
func (s *Simulator) vmMemory(snap *snapshot) map[string]int64 {
	used := map[string]int64{}
	for node, vmis := range snap.vmisOn {
		for _, v := range vmis {
			used[node] += v.Spec.memory()
		}
	}
	for key, m := range s.migrations {
		if v := snap.vmiByKey[key]; v != nil {
			used[m.target] += v.Spec.memory()
		}
	}
	return used
}
