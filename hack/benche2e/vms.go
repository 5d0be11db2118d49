package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The VM cases set the VM forecast of a rollout (status.rollouts[].vms) beside what the
// rollout did to the VMs, as the pool simulator plays KubeVirt on the drained nodes
// (poolsim.Options.VMs), and measure the manager's memory with many VirtualMachineInstances.

// vmRolloutCase is a rollout of the worker pool of workers Nodes, maxUnavailable at a
// time, with vmsPerNode VMs on each, all live-migratable under the cluster-wide eviction
// strategy LiveMigrate except restarts VMs whose own eviction strategy None has the drain
// shut them down (their VirtualMachine starts them again). No VM blocks a drain: one
// would hold the batch.
type vmRolloutCase struct {
	name                                string
	workers, vmsPerNode, maxUnavailable int
	restarts                            int
}

var vmRolloutCases = []vmRolloutCase{
	{name: "6 workers x 10 VMs", workers: 6, vmsPerNode: 10, maxUnavailable: 1, restarts: 2},
	{name: "30 workers x 20 VMs", workers: 30, vmsPerNode: 20, maxUnavailable: 1, restarts: 6},
}

// The VMs of the rollout cases: vmMemory each, every fourth vmLargeMemory; each node has
// room for vmRoomFactor times its own VMs, so that the VMs a drain moves always fit on the
// nodes the scheduler prefers.
const (
	vmNamespace   = "bench-vms"
	vmMemory      = "2Gi"
	vmLargeMemory = "4Gi"
	vmRoomFactor  = 4
	// vmApplyTimeout is the longest wait for Completed after the approval in a rollout case.
	vmApplyTimeout = 5 * time.Minute
	// vmMigrationsPerNode is KubeVirt's parallelOutboundMigrationsPerNode in the rollout
	// cases, the cluster's parallelMigrationsPerCluster (5) rather than its default of 2: a
	// node's VMs leave in fewer rounds, and what the drains do to them is the same.
	vmMigrationsPerNode = 5
	// vmStatusTimeout is the longest wait for the VM forecast after ReviewRequired, and for
	// the rollout's record of what it did to the VMs after Completed.
	vmStatusTimeout = 10 * time.Second
)

// vmCounts is what a rollout does, or is forecast to do, to the VMs of a pool.
type vmCounts struct {
	// liveMigrate is the number of VMs that live-migrate, migrations their migrations in
	// all, maxPerVM the most migrations of one VM.
	liveMigrate, migrations, maxPerVM int
	// restarts is the number of VMs shut down, blocked the number that block a drain.
	restarts, blocked int
	// memoryToMigrate is the guest memory all the migrations copy, in bytes.
	memoryToMigrate int64
}

// meanPerVM is the mean number of migrations of a VM that migrates.
func (c vmCounts) meanPerVM() float64 {
	if c.liveMigrate == 0 {
		return 0
	}
	return float64(c.migrations) / float64(c.liveMigrate)
}

// vmRolloutResult is a rollout case's forecast and what happened.
type vmRolloutResult struct {
	name                                string
	vms, workers, maxUnavailable, waves int
	forecast, actual                    vmCounts
	// forecastSummary is the forecast's one line.
	forecastSummary string
	// perVM is how many VMs migrated how often ("2:10 1:50"); shutdowns is the number of
	// shut-downs (a VM started again may be shut down again).
	perVM     string
	shutdowns int
	// differences say where the forecast and the simulator's count differ; none: equal.
	differences []string
	// recorded is status.rollouts[].vmsActual of the worker pool (nil when absent), and
	// recordedDifferences where it differs from the simulator's count.
	recorded            *advisorv1alpha1.VMActual
	recordedDifferences []string
	// approvals is how many approvals the config took; rolloutSeconds the time from the
	// first one to Completed.
	approvals      int
	rolloutSeconds float64
	// peakRSSMiB is the manager's VmHWM at the end.
	peakRSSMiB float64
}

func (r vmRolloutResult) equal() bool { return len(r.differences) == 0 }

// runVMRollout runs one rollout case on a fresh control plane: the pool simulator creates
// the workers and plays KubeVirt, the VMs start on them, the manager plans
// load-aware-rebalancing (its psi=1 kernel argument reboots the workers) until
// ReviewRequired, where the VM forecast is read; once approved the plan is applied until
// Completed, and the simulator's count of migrations and shut-downs is set beside the
// forecast, and beside what the rollout's status recorded.
func runVMRollout(ctx context.Context, opts *options, vc vmRolloutCase) (res vmRolloutResult, err error) {
	res = vmRolloutResult{name: vc.name, vms: vc.workers * vc.vmsPerNode, workers: vc.workers,
		maxUnavailable: vc.maxUnavailable}
	c, err := newCluster(ctx, opts, "vms", clusterSetup{
		kubeVirt: true, simulate: true, renderDelay: opts.renderDelay, simulatedWorkers: vc.workers,
		vms: true, migrationTime: opts.migrationTime,
	})
	if err != nil {
		return res, err
	}
	defer func() { c.close(err != nil) }()
	if _, err := c.cp.dyn.Resource(mcpGVR).Patch(ctx, "worker", types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"maxUnavailable":%d}}`, vc.maxUnavailable),
		metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return res, fmt.Errorf("set maxUnavailable of the worker pool: %w", err)
	}
	start := time.Now()
	memory, err := c.startVMs(ctx, vc)
	if err != nil {
		return res, err
	}
	logf("%s: %d VMs started in %.1fs", vc.name, res.vms, time.Since(start).Seconds())

	vpc, pw, err := c.watchSample(ctx, "config/samples/loadaware_sample.yaml")
	if err != nil {
		return res, err
	}
	defer pw.stop()
	if err := c.startManager(ctx); err != nil {
		return res, err
	}
	if _, _, err := c.plan(ctx, vpc, pw); err != nil {
		return res, err
	}
	name := vpc.GetName()
	ro, err := c.workerRollout(ctx, name, func(ro *advisorv1alpha1.PoolRollout) bool {
		return ro.VMs != nil && ro.VMs.UnknownReason == ""
	})
	if err != nil {
		return res, fmt.Errorf("the VM forecast of the worker pool: %w", err)
	}
	res.waves = int(ro.Waves)
	res.forecast, res.forecastSummary = forecastCounts(ro.VMs), ro.VMs.Summary
	logf("%s: forecast: %s", vc.name, res.forecastSummary)

	// apply: approve, wait for Completed, approving again if the config asks.
	applyStart := time.Now()
	deadline := applyStart.Add(max(vmApplyTimeout, opts.applyTimeout))
	for {
		if err := c.approvePlan(ctx, name); err != nil {
			return res, err
		}
		res.approvals++
		_, phase, err := pw.untilOneOf(ctx, time.Until(deadline), stageApply, stagePlan)
		for err == nil && phase == stagePlan && !pw.asksForApproval() {
			_, phase, err = pw.untilOneOf(ctx, time.Until(deadline), stageApply, stagePlan)
		}
		if err != nil {
			return res, fmt.Errorf("apply stage: %w\nmanager log:\n%s", err, c.m.logTail())
		}
		if phase == stageApply {
			break
		}
		logf("%s: %s asks for an approval again", vc.name, name)
	}
	res.rolloutSeconds = time.Since(applyStart).Seconds()
	if res.peakRSSMiB, _, err = c.m.memory(); err != nil {
		return res, err
	}

	res.actual, res.perVM, res.shutdowns = c.simulatedCounts(vc.workers, memory)
	res.differences = differences(res.forecast, res.actual)
	// The record of what the rollout did may follow Completed.
	recorded := func(ro *advisorv1alpha1.PoolRollout) bool { return ro.VMsActual != nil }
	if ro, err = c.workerRollout(ctx, name, recorded); err == nil {
		res.recorded = ro.VMsActual
		res.recordedDifferences = recordedDifferences(ro.VMsActual, res.actual)
	} else {
		logf("%s: no status.rollouts[].vmsActual for the worker pool: %v", vc.name, err)
	}
	logf("%s: Completed %.1fs after the approval; migrations forecast %d, actual %d; restarts forecast %d, actual %d",
		vc.name, res.rolloutSeconds, res.forecast.migrations, res.actual.migrations,
		res.forecast.restarts, res.actual.restarts)
	return res, nil
}

// startVMs gives every worker room for vmRoomFactor times its VMs, creates the
// namespace, the KubeVirt CR (cluster-wide eviction strategy LiveMigrate) and the VMs
// (run strategy Always), and returns the memory of each VM, in bytes, by namespace/name.
// The VMs with the eviction strategy None are spread over the workers, the first worker's
// first VM among them.
func (c *cluster) startVMs(ctx context.Context, vc vmRolloutCase) (map[string]int64, error) {
	nodeMemory := resource.MustParse(vmLargeMemory)
	nodeMemory.Mul(int64(vc.vmsPerNode * vmRoomFactor))
	err := parallel(ctx, vc.workers, func(ctx context.Context, i int) error {
		return c.sim.SetAllocatableMemory(ctx, fmt.Sprintf("worker-%d", i), nodeMemory.String())
	})
	if err != nil {
		return nil, err
	}
	if err := c.cp.createNamespace(ctx, vmNamespace); err != nil {
		return nil, err
	}
	if err := c.cp.apply(ctx, kubeVirtCR(vmforecast.StrategyLiveMigrate, vmMigrationsPerNode)); err != nil {
		return nil, err
	}
	restarting := map[int]bool{}
	for j := range vc.restarts {
		restarting[j*vc.workers/vc.restarts] = true
	}
	specs := make([]poolsim.VMSpec, 0, vc.workers*vc.vmsPerNode)
	memory := map[string]int64{}
	for node := range vc.workers {
		for i := range vc.vmsPerNode {
			spec := poolsim.VMSpec{Namespace: vmNamespace, Name: fmt.Sprintf("vm-%d-%d", node, i),
				Node: fmt.Sprintf("worker-%d", node), Memory: vmMemory, RunStrategy: vmforecast.RunStrategyAlways}
			if i%4 == 3 {
				spec.Memory = vmLargeMemory
			}
			if i == 0 && restarting[node] {
				spec.EvictionStrategy = vmforecast.StrategyNone
			}
			specs = append(specs, spec)
			q := resource.MustParse(spec.Memory)
			memory[spec.Namespace+"/"+spec.Name] = q.Value()
		}
	}
	err = parallel(ctx, len(specs), func(ctx context.Context, i int) error { return c.sim.CreateVM(ctx, specs[i]) })
	return memory, err
}

// kubeVirtCR is the KubeVirt CR with the cluster-wide eviction strategy and, unless 0,
// the outbound migrations per node, in the namespace of OpenShift Virtualization.
func kubeVirtCR(strategy string, migrationsPerNode int) *unstructured.Unstructured {
	config := map[string]any{"evictionStrategy": strategy}
	if migrationsPerNode > 0 {
		config["migrations"] = map[string]any{"parallelOutboundMigrationsPerNode": int64(migrationsPerNode)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1",
		"kind":       "KubeVirt",
		"metadata":   map[string]any{"name": "kubevirt-kubevirt-hyperconverged", "namespace": "openshift-cnv"},
		"spec":       map[string]any{"configuration": config},
	}}
}

// workerRollout reads the config's status.rollouts entry of the worker pool until ready
// says it is, for at most vmStatusTimeout.
func (c *cluster) workerRollout(ctx context.Context, name string, ready func(*advisorv1alpha1.PoolRollout) bool) (
	*advisorv1alpha1.PoolRollout, error) {
	var last *advisorv1alpha1.PoolRollout
	poll := func(ctx context.Context) (bool, error) {
		u, err := c.cp.dyn.Resource(vpcGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		raw, _, _ := unstructured.NestedSlice(u.Object, "status", "rollouts")
		data, err := json.Marshal(raw)
		if err != nil {
			return false, err
		}
		var rollouts []advisorv1alpha1.PoolRollout
		if err := json.Unmarshal(data, &rollouts); err != nil {
			return false, err
		}
		for i := range rollouts {
			if rollouts[i].Pool == "worker" {
				last = &rollouts[i]
				return ready(last), nil
			}
		}
		return false, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, vmStatusTimeout, true, poll); err != nil {
		if last == nil {
			return nil, fmt.Errorf("no rollout of the worker pool in status.rollouts: %w", err)
		}
		vms, _ := json.Marshal(last.VMs)
		return last, fmt.Errorf("%w (vms: %s)", err, vms)
	}
	return last, nil
}

// approvePlan approves the plan the config shows: spec.action Apply and
// spec.approvedPlanHash its status.planHash.
func (c *cluster) approvePlan(ctx context.Context, name string) error {
	u, err := c.cp.dyn.Resource(vpcGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	hash, _, _ := unstructured.NestedString(u.Object, "status", "planHash")
	if hash == "" {
		return fmt.Errorf("VirtPlatformConfig %s shows no status.planHash", name)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"action": "Apply", "approvedPlanHash": hash}})
	if err != nil {
		return err
	}
	if _, err := c.cp.dyn.Resource(vpcGVR).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("approve %s: %w", name, err)
	}
	return nil
}

// forecastCounts reads a pool's VM forecast. Its status gives no maximum per VM: under
// the forecast's rules a VM migrates once, or twice when the first wave drains it and
// more waves follow, so it is 2 when there are more migrations than migrating VMs.
func forecastCounts(f *advisorv1alpha1.VMForecast) vmCounts {
	out := vmCounts{liveMigrate: int(f.LiveMigrate), migrations: int(f.Migrations),
		restarts: int(f.Restart), blocked: int(f.Block)}
	switch {
	case f.Migrations > f.LiveMigrate:
		out.maxPerVM = 2
	case f.Migrations > 0:
		out.maxPerVM = 1
	}
	if f.MemoryToMigrate != nil {
		out.memoryToMigrate = f.MemoryToMigrate.Value()
	}
	return out
}

// simulatedCounts is what the pool simulator did to the VMs: their migrations and
// shut-downs, the VMs whose drain it was refused on each of the workers, and the memory
// the migrations copied; with how many VMs migrated how often, and the shut-downs in all.
func (c *cluster) simulatedCounts(workers int, memory map[string]int64) (counts vmCounts, perVM string, shutdowns int) {
	migrations := c.sim.Migrations()
	times := map[int]int{}
	for vm, n := range migrations {
		if n == 0 {
			continue
		}
		counts.liveMigrate++
		counts.migrations += n
		counts.maxPerVM = max(counts.maxPerVM, n)
		counts.memoryToMigrate += int64(n) * memory[vm]
		times[n]++
	}
	for _, n := range c.sim.Shutdowns() {
		if n > 0 {
			counts.restarts++
			shutdowns += n
		}
	}
	blocked := map[string]bool{}
	for i := range workers {
		for _, vm := range c.sim.BlockingDrain(fmt.Sprintf("worker-%d", i)) {
			blocked[vm] = true
		}
	}
	counts.blocked = len(blocked)
	parts := make([]string, 0, len(times))
	for _, n := range slices.Backward(slices.Sorted(maps.Keys(times))) {
		parts = append(parts, fmt.Sprintf("%d:%d", n, times[n]))
	}
	if len(parts) == 0 {
		return counts, "-", shutdowns
	}
	return counts, strings.Join(parts, " "), shutdowns
}

// differences says where the forecast and what happened differ.
func differences(forecast, actual vmCounts) []string {
	var out []string
	add := func(what string, f, a int64) {
		if f != a {
			out = append(out, fmt.Sprintf("%s: forecast %d, actual %d", what, f, a))
		}
	}
	add("VMs that migrate", int64(forecast.liveMigrate), int64(actual.liveMigrate))
	add("migrations", int64(forecast.migrations), int64(actual.migrations))
	add("most migrations of a VM", int64(forecast.maxPerVM), int64(actual.maxPerVM))
	add("VMs restarted", int64(forecast.restarts), int64(actual.restarts))
	add("VMs blocking a drain", int64(forecast.blocked), int64(actual.blocked))
	add("memory to migrate (bytes)", forecast.memoryToMigrate, actual.memoryToMigrate)
	return out
}

// recordedDifferences says where the rollout's record of what it did to the VMs differs
// from the simulator's count.
func recordedDifferences(r *advisorv1alpha1.VMActual, actual vmCounts) []string {
	if r.UnknownReason != "" {
		return []string{"unknown: " + r.UnknownReason}
	}
	var out []string
	add := func(what string, rec, a int) {
		if rec != a {
			out = append(out, fmt.Sprintf("%s: recorded %d, simulator %d", what, rec, a))
		}
	}
	add("migrations", int(r.Migrations), actual.migrations)
	add("migrated VMs", int(r.MigratedVMs), actual.liveMigrate)
	add("most migrations of a VM", int(r.MaxPerVM), actual.maxPerVM)
	if r.Restarts == nil {
		out = append(out, "restarts: not recorded")
	} else {
		add("restarts", int(*r.Restarts), actual.restarts)
	}
	add("blocked", int(r.Blocked), actual.blocked)
	return out
}

// vmiMemoryResult is the manager's memory for a plan whose rollout drains workers Nodes
// that run vmis VirtualMachineInstances.
type vmiMemoryResult struct {
	vmis, workers int
	// createSeconds is the time the VirtualMachineInstances took to create.
	createSeconds float64
	// forecastVMs is the number of VMs the plan's forecast counted.
	forecastVMs int
	planSeconds float64
	// As in nodeScaleResult, rssSettle after ReviewRequired.
	peakRSSMiB, rssAfterMiB, heapInuseMiB float64
}

// runVMIMemory plans load-aware-rebalancing, whose rollout drains the workers, on a cluster
// of workers Nodes and vmis VirtualMachineInstances spread over them, and measures the
// manager's memory once the plan waits for review: the VMI informer then holds every
// instance. No pool simulator runs: nothing is applied.
func runVMIMemory(ctx context.Context, opts *options, workers, vmis int) (res vmiMemoryResult, err error) {
	res = vmiMemoryResult{vmis: vmis, workers: workers}
	kind := nodeKind{role: "worker", mcoAnnotations: true, renderedConfig: nodeScaleRendered}
	c, err := newCluster(ctx, opts, fmt.Sprintf("vmis-%d", vmis), clusterSetup{
		kubeVirt: true,
		nodes:    []nodeSet{{kind: kind, count: workers}},
	})
	if err != nil {
		return res, err
	}
	defer func() { c.close(err != nil) }()
	if err := c.cp.apply(ctx, kubeVirtCR(vmforecast.StrategyLiveMigrate, 0)); err != nil {
		return res, err
	}
	// No pool simulator reports the pool's machines: the forecast counts the waves of its
	// rollout, so drains its nodes, from them.
	counts := fmt.Appendf(nil, `{"status":{"machineCount":%d,"readyMachineCount":%d,"updatedMachineCount":%d,`+
		`"unavailableMachineCount":0,"degradedMachineCount":0}}`, workers, workers, workers)
	if _, err := c.cp.dyn.Resource(mcpGVR).Patch(ctx, "worker", types.MergePatchType, counts,
		metav1.PatchOptions{FieldManager: fieldManager}, "status"); err != nil {
		return res, fmt.Errorf("report the machines of the worker pool: %w", err)
	}
	start := time.Now()
	if err := createVMIs(ctx, c.cp, workers, vmis); err != nil {
		return res, err
	}
	res.createSeconds = time.Since(start).Seconds()
	if vmis > 0 {
		logf("%d VirtualMachineInstances on %d workers created in %.1fs", vmis, workers, res.createSeconds)
	}

	vpc, pw, err := c.watchSample(ctx, "config/samples/loadaware_sample.yaml")
	if err != nil {
		return res, err
	}
	defer pw.stop()
	addr, err := pprofAddress()
	if err != nil {
		return res, err
	}
	if err := c.startManager(ctx, "--pprof-bind-address="+addr); err != nil {
		return res, err
	}
	planStart, reviewAt, err := c.plan(ctx, vpc, pw)
	if err != nil {
		return res, err
	}
	res.planSeconds = reviewAt.Sub(planStart).Seconds()
	ro, err := c.workerRollout(ctx, vpc.GetName(), func(ro *advisorv1alpha1.PoolRollout) bool {
		return ro.VMs != nil && ro.VMs.UnknownReason == ""
	})
	if err != nil {
		return res, fmt.Errorf("the VM forecast of the worker pool: %w", err)
	}
	res.forecastVMs = int(ro.VMs.LiveMigrate + ro.VMs.Restart + ro.VMs.Block)
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(opts.rssSettle):
	}
	if res.peakRSSMiB, res.rssAfterMiB, err = c.m.memory(); err != nil {
		return res, err
	}
	if res.heapInuseMiB, err = heapInuse(ctx, addr); err != nil {
		return res, err
	}
	if opts.pprofDir != "" {
		path := filepath.Join(opts.pprofDir, fmt.Sprintf("heap-%d-vmis.pb.gz", vmis))
		if err := saveHeapProfile(ctx, addr, path); err != nil {
			return res, err
		}
		logf("heap profile of the manager with %d VirtualMachineInstances: %s", vmis, path)
	}
	logf("%d VMIs: forecast counts %d VMs; ReviewRequired after %.2fs, "+
		"peak RSS %.1f MiB, RSS after %.1f MiB, heap in use %.1f MiB",
		vmis, res.forecastVMs, res.planSeconds, res.peakRSSMiB, res.rssAfterMiB, res.heapInuseMiB)
	return res, nil
}

// vmiNamespaces is how many namespaces the VirtualMachineInstances of the memory case
// are spread over.
const vmiNamespaces = 10

// createVMIs creates count running VirtualMachineInstances, round robin on worker-0 ...
// worker-<workers-1>, from parallel clients, with what the VM forecast reads: the
// eviction strategy (the cluster's), the memory, the node, the phase Running and the
// LiveMigratable condition.
func createVMIs(ctx context.Context, cp *controlPlane, workers, count int) error {
	if count == 0 {
		return nil
	}
	for n := range vmiNamespaces {
		if err := cp.createNamespace(ctx, fmt.Sprintf("bench-vmis-%d", n)); err != nil {
			return err
		}
	}
	return parallel(ctx, count, func(ctx context.Context, i int) error {
		ns := fmt.Sprintf("bench-vmis-%d", i%vmiNamespaces)
		_, err := cp.dyn.Resource(vmiGVR).Namespace(ns).Create(ctx, benchVMI(ns, i, workers),
			metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("create VirtualMachineInstance %s/vmi-%d: %w", ns, i, err)
		}
		return nil
	})
}

func benchVMI(namespace string, i, workers int) *unstructured.Unstructured {
	memory := vmMemory
	if i%4 == 3 {
		memory = vmLargeMemory
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1",
		"kind":       "VirtualMachineInstance",
		"metadata":   map[string]any{"name": fmt.Sprintf("vmi-%d", i), "namespace": namespace},
		"spec": map[string]any{"domain": map[string]any{
			"devices":   map[string]any{},
			"resources": map[string]any{"requests": map[string]any{"memory": memory}},
		}},
		"status": map[string]any{
			"nodeName": fmt.Sprintf("worker-%d", i%workers),
			"phase":    "Running",
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
				map[string]any{"type": "LiveMigratable", "status": "True"},
			},
		},
	}}
}

// pprofAddress is an address on 127.0.0.1 for the manager's pprof endpoint.
func pprofAddress() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

var vmiGVR = schema.GroupVersion{Group: "kubevirt.io", Version: "v1"}.WithResource("virtualmachineinstances")

// perVMIKiB is the memory per VirtualMachineInstance, in KiB, between the case without
// and the case with them, from MiB figures.
func perVMIKiB(without, with float64, vmis int) float64 {
	return (with - without) * 1024 / float64(vmis)
}
