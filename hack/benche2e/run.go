package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Stage names, as the table shows them.
const (
	stageStartup = "startup"
	stagePlan    = "ReviewRequired"
	stageApply   = "Completed"
)

// stageResult is the figures of one stage of one run.
type stageResult struct {
	name    string
	seconds float64
	counts
	// spent is what the stage's time went to (see account); empty for the startup.
	spent [activities]time.Duration
}

// runResult is the figures of one run of a profile.
type runResult struct {
	profile    string
	run        int
	stages     []stageResult
	peakRSSMiB float64
}

// runOnce runs one profile once on a fresh control plane.
func runOnce(ctx context.Context, opts *options, pc profileCase, n int) (res runResult, err error) {
	dir, err := os.MkdirTemp("", "benche2e-"+pc.name+"-")
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil || opts.keep {
			logf("logs and audit log of %s run %d kept in %s", pc.name, n, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()

	cp, err := startControlPlane(opts, pc, dir)
	if err != nil {
		return res, err
	}
	defer cp.stop()

	// The baseline: the objects of a cluster the profiles apply to, and the worker pool
	// Updated on the rendered configuration of its MachineConfigs.
	if err := cp.createNamespace(ctx, opts.managerNS); err != nil {
		return res, err
	}
	for _, manifest := range append([]string{commonBaseline}, pc.baseline...) {
		if err := cp.applyFile(ctx, filepath.Join(opts.root, filepath.FromSlash(manifest))); err != nil {
			return res, err
		}
	}
	kubeletConfigs, err := cp.serves(kubeletConfigGVK)
	if err != nil {
		return res, err
	}
	vpc, others, err := readSample(filepath.Join(opts.root, pc.sample))
	if err != nil {
		return res, err
	}
	simCtx, stopSim := context.WithCancel(ctx)
	defer stopSim()
	sim := &poolSim{dyn: cp.dyn, pool: "worker", machines: 3, kubeletConfigs: kubeletConfigs}
	if err := sim.start(simCtx, vpc.GetName()); err != nil {
		return res, err
	}
	if _, err := sim.render(ctx); err != nil {
		return res, err
	}
	for _, obj := range others {
		if err := cp.apply(ctx, obj); err != nil {
			return res, err
		}
	}
	pw, err := newPhaseWatcher(ctx, cp.dyn, vpc.GetName())
	if err != nil {
		return res, err
	}
	defer pw.stop()

	m, err := startManager(ctx, opts, cp, dir)
	if err != nil {
		return res, err
	}
	defer m.stop()
	logf("%s: manager ready %.2fs after launch", pc.name, m.ready.Sub(m.launched).Seconds())
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(opts.settle):
	}
	if m.exited() {
		return res, fmt.Errorf("the manager exited (%v):\n%s", m.exitErr, m.logTail())
	}

	// plan: server-side apply the sample, wait for ReviewRequired.
	planStart := time.Now()
	if err := cp.apply(ctx, vpc); err != nil {
		return res, err
	}
	reviewAt, err := pw.until(ctx, stagePlan, opts.planTimeout)
	if err != nil {
		return res, fmt.Errorf("plan stage: %w\nmanager log:\n%s", err, m.logTail())
	}
	logf("%s: %s after %.3fs", pc.name, stagePlan, reviewAt.Sub(planStart).Seconds())

	// apply: approve, wait for Completed while the pool simulator rolls the plan out.
	simDone := make(chan struct{})
	go func() {
		defer close(simDone)
		sim.run(simCtx, vpc.GetName())
	}()
	defer func() { stopSim(); <-simDone }()
	applyStart := time.Now()
	if _, err := cp.dyn.Resource(vpcGVR).Patch(ctx, vpc.GetName(), types.MergePatchType,
		[]byte(`{"spec":{"action":"Apply"}}`), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return res, fmt.Errorf("approve: %w", err)
	}
	doneAt, err := pw.until(ctx, stageApply, opts.applyTimeout)
	if err != nil {
		return res, fmt.Errorf("apply stage: %w\nmanager log:\n%s", err, m.logTail())
	}
	logf("%s: %s after %.3fs (items: %s)", pc.name, stageApply, doneAt.Sub(applyStart).Seconds(), pw.itemStates())

	res = runResult{profile: pc.name, run: n}
	if res.peakRSSMiB, err = m.peakRSSMiB(); err != nil {
		return res, err
	}
	// Once the manager has stopped, every request it sent has its audit event in the log.
	m.stop()
	reqs, err := readRequests(cp.auditLog, opts.operatorUser)
	if err != nil {
		return res, err
	}
	if count(reqs, m.launched, doneAt).requests == 0 {
		return res, fmt.Errorf("the audit log %s has no request of user %s", cp.auditLog, opts.operatorUser)
	}
	if gap := count(reqs, reviewAt, applyStart); gap.requests > 0 {
		logf("%s: %d manager request(s) between seeing %s and sending the approval (%.3fs), in neither stage",
			pc.name, gap.requests, stagePlan, applyStart.Sub(reviewAt).Seconds())
	}
	res.stages = []stageResult{
		{name: stageStartup, seconds: m.ready.Sub(m.launched).Seconds(), counts: count(reqs, m.launched, planStart)},
		{name: stagePlan, seconds: reviewAt.Sub(planStart).Seconds(), counts: count(reqs, planStart, reviewAt),
			spent: account(reqs, planStart, reviewAt)},
		{name: stageApply, seconds: doneAt.Sub(applyStart).Seconds(), counts: count(reqs, applyStart, doneAt),
			spent: account(reqs, applyStart, doneAt)},
	}
	return res, nil
}

// readSample reads a sample: its VirtPlatformConfig, and the other objects it holds, which
// are applied before the manager starts.
func readSample(path string) (vpc *unstructured.Unstructured, others []*unstructured.Unstructured, err error) {
	objs, err := readManifest(path)
	if err != nil {
		return nil, nil, err
	}
	for _, obj := range objs {
		if obj.GetKind() == "VirtPlatformConfig" && vpc == nil {
			vpc = obj
			continue
		}
		others = append(others, obj)
	}
	if vpc == nil {
		return nil, nil, fmt.Errorf("%s holds no VirtPlatformConfig", path)
	}
	return vpc, others, nil
}
