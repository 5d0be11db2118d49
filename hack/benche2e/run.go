package main

import (
	"context"
	"fmt"
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
}

// runResult is the figures of one run of a case.
type runResult struct {
	name   string
	run    int
	stages []stageResult
	// idle are the manager's requests in the idle window after Completed, idleAfter1s
	// those after its first second, and idleRequests what they were.
	idle, idleAfter1s counts
	idleRequests      string
	// peakRSSMiB is VmHWM at the end of the idle window, rssAfterMiB VmRSS then.
	peakRSSMiB, rssAfterMiB float64
}

// runOnce runs one case once on a fresh control plane: the manager starts, plans the
// sample (ReviewRequired), applies it once approved while the pool simulator rolls out its
// MachineConfigs and KubeletConfigs (Completed), then the idle window passes.
func runOnce(ctx context.Context, opts *options, pc profileCase, n int) (res runResult, err error) {
	c, err := newCluster(ctx, opts, pc.name, clusterSetup{
		upstreamCRDs: pc.upstreamCRDs, manifests: pc.baseline,
		simulate: true, renderDelay: opts.renderDelay, simulatedWorkers: profileWorkers, bulk: pc.bulk,
	})
	if err != nil {
		return res, err
	}
	defer func() { c.close(err != nil) }()

	vpc, pw, err := c.watchSample(ctx, pc.sample)
	if err != nil {
		return res, err
	}
	defer pw.stop()
	if err := c.startManager(ctx); err != nil {
		return res, err
	}

	// plan: server-side apply the sample, wait for ReviewRequired.
	planStart, reviewAt, err := c.plan(ctx, vpc, pw)
	if err != nil {
		return res, err
	}
	logf("%s: %s after %.3fs", pc.name, stagePlan, reviewAt.Sub(planStart).Seconds())

	// apply: approve, wait for Completed while the pool simulator rolls the plan out.
	applyStart := time.Now()
	if _, err := c.cp.dyn.Resource(vpcGVR).Patch(ctx, vpc.GetName(), types.MergePatchType,
		[]byte(`{"spec":{"action":"Apply"}}`), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return res, fmt.Errorf("approve: %w", err)
	}
	doneAt, err := pw.until(ctx, stageApply, opts.applyTimeout)
	if err != nil {
		return res, fmt.Errorf("apply stage: %w\nmanager log:\n%s", err, c.m.logTail())
	}
	logf("%s: %s after %.3fs (items: %s)", pc.name, stageApply, doneAt.Sub(applyStart).Seconds(), pw.itemStates())

	// idle: nothing changes; the manager should send nothing but keep its watches.
	idleEnd := doneAt.Add(opts.idle)
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(time.Until(idleEnd)):
	}
	if c.m.Exited() {
		return res, fmt.Errorf("the manager exited during the idle window (%v):\n%s", c.m.ExitErr(), c.m.logTail())
	}
	res = runResult{name: pc.name, run: n}
	if res.peakRSSMiB, res.rssAfterMiB, err = c.m.memory(); err != nil {
		return res, err
	}
	reqs, err := c.managerRequests()
	if err != nil {
		return res, err
	}
	if gap := count(reqs, reviewAt, applyStart); gap.requests > 0 {
		logf("%s: %d manager request(s) between seeing %s and sending the approval (%.3fs), in neither stage",
			pc.name, gap.requests, stagePlan, applyStart.Sub(reviewAt).Seconds())
	}
	res.stages = []stageResult{
		{name: stageStartup, seconds: c.m.ready.Sub(c.m.Launched).Seconds(), counts: count(reqs, c.m.Launched, planStart)},
		{name: stagePlan, seconds: reviewAt.Sub(planStart).Seconds(), counts: count(reqs, planStart, reviewAt)},
		{name: stageApply, seconds: doneAt.Sub(applyStart).Seconds(), counts: count(reqs, applyStart, doneAt)},
	}
	res.idle = count(reqs, doneAt, idleEnd)
	res.idleAfter1s = count(reqs, doneAt.Add(time.Second), idleEnd)
	res.idleRequests = describe(reqs, doneAt, idleEnd)
	return res, nil
}

// profileWorkers is how many worker Nodes a profile case's pool has when its baseline
// brings none.
const profileWorkers = 3

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

// watchSample reads the sample (relative to the repository root), applies the objects it
// holds besides its VirtPlatformConfig and opens the watch of the config's phase; the
// config itself is not applied yet.
func (c *cluster) watchSample(ctx context.Context, sample string) (*unstructured.Unstructured, *phaseWatcher, error) {
	vpc, others, err := readSample(filepath.Join(c.opts.root, filepath.FromSlash(sample)))
	if err != nil {
		return nil, nil, err
	}
	for _, obj := range others {
		if err := c.cp.apply(ctx, obj); err != nil {
			return nil, nil, err
		}
	}
	pw, err := newPhaseWatcher(ctx, c.cp.dyn, vpc.GetName())
	if err != nil {
		return nil, nil, err
	}
	return vpc, pw, nil
}

// plan is the plan stage: it server-side applies the VirtPlatformConfig and waits until pw
// sees it ReviewRequired. It returns when the apply started and when the phase came.
func (c *cluster) plan(ctx context.Context, vpc *unstructured.Unstructured, pw *phaseWatcher) (
	start, reviewAt time.Time, err error) {
	start = time.Now()
	if err := c.cp.apply(ctx, vpc); err != nil {
		return start, reviewAt, err
	}
	if reviewAt, err = pw.until(ctx, stagePlan, c.opts.planTimeout); err != nil {
		return start, reviewAt, fmt.Errorf("plan stage: %w\nmanager log:\n%s", err, c.m.logTail())
	}
	return start, reviewAt, nil
}
