package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The reboot scenarios run on a cluster of scenarioWorkers workers (maxUnavailable 1) and
// scenarioMasters masters, all with Node Feature Discovery labels, where the pool
// simulator counts each node's reboots and each pool's waves. Each runs once: the counts
// do not vary between runs.
const (
	scenarioWorkers = 6
	scenarioMasters = 3
)

// scenarioManifest adds the master pool and the Self Node Remediation template.
const scenarioManifest = "hack/benche2e/testdata/scenario_cluster.yaml"

// scenario is a way of approving one or more configs.
type scenario struct {
	name string
	// samples are the configs, in the order of their approvals.
	samples []string
	// together approves all configs at once; otherwise each reaches Completed before the
	// next is approved.
	together bool
}

var scenarios = []scenario{
	{name: "platform-baseline, full sample", samples: []string{"config/samples/baseline_full_sample.yaml"}},
	{name: "three profiles approved together", together: true, samples: threeSamples},
	{name: "three profiles approved one after the other", samples: threeSamples},
}

var threeSamples = []string{
	"config/samples/loadaware_sample.yaml",
	"config/samples/higherdensity_sample.yaml",
	"config/samples/baseline_sample.yaml",
}

// scenarioResult is what a scenario's roll-outs did.
type scenarioResult struct {
	name string
	// approvals is how many approval commands were run: one per config unless a config
	// asked again after its approval.
	approvals, configs int
	// spreadSeconds is the time between the first approval's start and the last one's end.
	spreadSeconds float64
	// seconds is from the first approval until every config is Completed.
	seconds float64
	// Reboots per node, over the workers and over the masters.
	workerRebootsMin, workerRebootsMax, masterRebootsMin, masterRebootsMax int
	// Roll-outs of each pool, and their waves in all.
	workerRollouts, workerWaves, masterRollouts, masterWaves int
	// perItemWorkerReboots is what the same approvals reboot each worker with one roll-out
	// per item: the items the plans shown forecast for the worker pool, summed.
	perItemWorkerReboots int
}

// runScenario runs one scenario on a fresh control plane: every sample is planned
// (ReviewRequired), then approved with the command its status gives, all at once or one
// after the other; a config that asks for an approval again is given it.
func runScenario(ctx context.Context, opts *options, sc scenario) (res scenarioResult, err error) {
	c, err := newCluster(ctx, opts, "scenario", clusterSetup{
		upstreamCRDs: true,
		manifests:    []string{scenarioManifest},
		nodes: []nodeSet{
			{kind: nodeKind{role: "worker"}, count: scenarioWorkers},
			{kind: nodeKind{role: "master"}, count: scenarioMasters},
		},
		simulate:    true,
		renderDelay: opts.scenarioRenderDelay,
	})
	if err != nil {
		return res, err
	}
	defer func() { c.close(err != nil) }()
	if _, err := c.cp.dyn.Resource(mcpGVR).Patch(ctx, "worker", types.MergePatchType,
		[]byte(`{"spec":{"maxUnavailable":1}}`), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return res, fmt.Errorf("set maxUnavailable of the worker pool: %w", err)
	}

	var names []string
	watchers := map[string]*phaseWatcher{}
	for _, sample := range sc.samples {
		vpc, pw, err := c.watchSample(ctx, sample)
		if err != nil {
			return res, err
		}
		defer pw.stop()
		watchers[vpc.GetName()] = pw
		names = append(names, vpc.GetName())
		if err := c.cp.apply(ctx, vpc); err != nil {
			return res, err
		}
	}
	if err := c.startManager(ctx); err != nil {
		return res, err
	}
	for _, name := range names {
		if _, err := watchers[name].until(ctx, stagePlan, opts.planTimeout); err != nil {
			return res, fmt.Errorf("%s: %w\nmanager log:\n%s", name, err, c.m.logTail())
		}
	}

	res = scenarioResult{name: sc.name, configs: len(names)}
	if res.perItemWorkerReboots, err = c.forecastItemsOf(ctx, names, "worker"); err != nil {
		return res, err
	}
	var mu sync.Mutex
	var firstStart, lastEnd time.Time
	approve := func(ctx context.Context, name string) error {
		command, err := c.approvalCommand(ctx, name)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := c.run(ctx, command); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		res.approvals++
		if firstStart.IsZero() || start.Before(firstStart) {
			firstStart = start
		}
		lastEnd = time.Now()
		return nil
	}
	// complete waits until the config is Completed, giving it the approval it asks for
	// again, if it does.
	complete := func(ctx context.Context, name string) error {
		pw := watchers[name]
		deadline := time.Now().Add(opts.applyTimeout)
		for {
			_, phase, err := pw.untilOneOf(ctx, time.Until(deadline), stageApply, stagePlan)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if phase == stageApply {
				return nil
			}
			if !pw.asksForApproval() {
				continue
			}
			logf("%s: %s asks for an approval again", sc.name, name)
			if err := approve(ctx, name); err != nil {
				return err
			}
		}
	}

	if sc.together {
		// The commands first, all at once, then the waits.
		if err := forEach(ctx, names, approve); err != nil {
			return res, err
		}
		res.spreadSeconds = lastEnd.Sub(firstStart).Seconds()
		if err := forEach(ctx, names, complete); err != nil {
			return res, fmt.Errorf("%w\nmanager log:\n%s", err, c.m.logTail())
		}
	} else {
		for _, name := range names {
			if err := approve(ctx, name); err != nil {
				return res, err
			}
			if err := complete(ctx, name); err != nil {
				return res, fmt.Errorf("%w\nmanager log:\n%s", err, c.m.logTail())
			}
		}
		res.spreadSeconds = lastEnd.Sub(firstStart).Seconds()
	}
	res.seconds = time.Since(firstStart).Seconds()
	// One approval may complete a config another one's approval redrafted: every config
	// must still be Completed.
	if err := c.allIn(ctx, names, stageApply); err != nil {
		return res, err
	}

	res.workerRebootsMin, res.workerRebootsMax = c.reboots("worker", scenarioWorkers)
	res.masterRebootsMin, res.masterRebootsMax = c.reboots("master", scenarioMasters)
	res.workerRollouts, res.workerWaves = c.waves("worker")
	res.masterRollouts, res.masterWaves = c.waves("master")
	logf("%s: %d approval(s), %.1fs; reboots per worker %d-%d, per master %d-%d; worker waves %d in %d roll-out(s)",
		sc.name, res.approvals, res.seconds, res.workerRebootsMin, res.workerRebootsMax,
		res.masterRebootsMin, res.masterRebootsMax, res.workerWaves, res.workerRollouts)
	return res, nil
}

// allIn fails unless every config is in phase.
func (c *cluster) allIn(ctx context.Context, names []string, phase string) error {
	for _, name := range names {
		got, err := c.vpcPhase(ctx, name)
		if err != nil {
			return err
		}
		if got != phase {
			return fmt.Errorf("%s is %s at the end, not %s", name, got, phase)
		}
	}
	return nil
}

// forecastItemsOf is how many items the plans shown by the configs roll out in pool.
func (c *cluster) forecastItemsOf(ctx context.Context, names []string, pool string) (int, error) {
	total := 0
	for _, name := range names {
		n, err := c.forecastItems(ctx, name, pool)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// forecastItems is how many items the plan shown by the config rolls out in pool.
func (c *cluster) forecastItems(ctx context.Context, name, pool string) (int, error) {
	u, err := c.cp.dyn.Resource(vpcGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	rollouts, _, _ := unstructured.NestedSlice(u.Object, "status", "rollouts")
	for _, r := range rollouts {
		if m, ok := r.(map[string]any); ok && m["pool"] == pool {
			items, _ := m["items"].([]any)
			return len(items), nil
		}
	}
	return 0, nil
}

// forEach runs do for every name at once and returns the first error.
func forEach(ctx context.Context, names []string, do func(context.Context, string) error) error {
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() { errs <- do(ctx, name) }()
	}
	var first error
	for range names {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// run runs a command an administrator would, with the benchmark's kubeconfig and the
// control plane's kubectl first on PATH.
func (c *cluster) run(ctx context.Context, command string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.adminKubeconfig,
		"PATH="+c.opts.assets+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", command, err, out)
	}
	return nil
}

// reboots is the fewest and the most reboots of the pool's Nodes <pool>-0 ... <pool>-<n-1>.
func (c *cluster) reboots(pool string, n int) (low, high int) {
	counts := make([]int, 0, n)
	for i := range n {
		counts = append(counts, c.sim.Reboots(fmt.Sprintf("%s-%d", pool, i)))
	}
	return slices.Min(counts), slices.Max(counts)
}

// waves is how many roll-outs the pool made, and their waves in all.
func (c *cluster) waves(pool string) (rollouts, waves int) {
	for _, r := range c.sim.Rollouts(pool) {
		rollouts++
		waves += len(r.Waves)
	}
	return rollouts, waves
}
