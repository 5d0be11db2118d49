// Command benche2e measures the manager binary end to end, each case on a fresh local
// control plane (the envtest kube-apiserver and etcd, with the API server's audit log on)
// with the project's CRD, the test CRDs, the upstream CRDs and objects the profile's
// targets need, the manager running as a user of its own, and the project's pool
// simulator (test/poolsim) playing the Machine Config Operator: it renders each pool's
// MachineConfigs and KubeletConfigs and rolls its Nodes out to them, maxUnavailable at a
// time, each reboot taking -reboot-time.
//
// Each profile case runs -runs times and times the two stages an administrator waits for:
//
//   - plan: server-side apply of the profile's sample until .status.phase is ReviewRequired;
//   - apply: the merge patch spec.action=Apply until .status.phase is Completed, while the
//     pool simulator rolls out each MachineConfig and KubeletConfig of the plan;
//
// then an idle window of -idle-seconds, in which the manager should send nothing but keep
// its watches open. Both phases are observed through a watch. The audit log gives the
// manager's requests per stage: all of them, the writes (create, update, patch, delete,
// deletecollection; dry runs are counted apart) and the ones answered 409 Conflict. The
// startup row is the time from launching the manager until /readyz answers, with the
// requests it sent before the plan stage began. The tables list every run and the medians,
// and the peak RSS (VmHWM) and the RSS (VmRSS) of the manager at the end of the idle
// window. One case repeats load-aware-rebalancing among unrelated bulk objects:
// large MachineConfigs and many ConfigMaps (-large).
//
// Then, once each: the reboot scenarios (reboots per node and waves per pool for the full
// platform-baseline sample and for the three profiles approved together and one after
// the other, on 6 workers and 3 masters, with the Machine Config Operator's render delay, as
// it decides which changes one reboot takes together; see scenarios.go), and the manager's
// memory for a platform-baseline plan as the worker Nodes grow (-node-counts; see
// nodescale.go).
//
// Then the VM cases (-vms; see vms.go), with KubeVirt's CRDs and the pool simulator
// playing KubeVirt's VMs on the drained nodes: two rollouts of the worker pool with VMs
// (6 workers × 10 VMs, 30 workers × 20 VMs), each setting the VM forecast the plan shows
// (status.rollouts[].vms) beside the migrations and restarts the simulator made and the
// record of the rollout (status.rollouts[].vmsActual); and the manager's memory per
// VirtualMachineInstance, for a plan that drains 100 workers with -vmis of them against
// one with none. -only runs some parts alone (-only=vms: the VM cases).
//
//	KUBEBUILDER_ASSETS=bin/k8s/<version> MANAGER_BINARY=bin/manager go run ./hack/benche2e
//
// It runs from the repository root (or -root). `make bench` runs it after the Go benchmarks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	testcluster "github.com/kubevirt/virt-advisor-operator/test/cluster"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// profileCase is one case the benchmark runs: its name, its profile, the sample that plans
// it, and what its control plane has besides the project's CRD, the test CRDs and
// config/samples/mock_baseline_resources.yaml.
type profileCase struct {
	name    string
	profile string
	sample  string
	// upstreamCRDs installs the upstream CRDs of the operators the profiles' targets belong
	// to (testcluster.UpstreamCRDFiles, from -upstream-crds).
	upstreamCRDs bool
	// baseline are further manifests, relative to the repository root, applied in order
	// after mock_baseline_resources.yaml and before the manager starts.
	baseline []string
	// bulk are unrelated objects created before the manager starts.
	bulk *bulkObjects
}

// commonBaseline is the manifest every profile case applies first.
const commonBaseline = "config/samples/mock_baseline_resources.yaml"

var profileCases = []profileCase{
	{name: "load-aware-rebalancing", profile: "load-aware-rebalancing", sample: "config/samples/loadaware_sample.yaml"},
	{name: "virt-higher-density", profile: "virt-higher-density", sample: "config/samples/higherdensity_sample.yaml"},
	{
		// As in test/e2e: the Machine Config Operator's KubeletConfig, the Node Health Check
		// and Self Node Remediation operators are installed; MTV and MetalLB are not, so
		// their items are Skipped.
		name:         "platform-baseline",
		profile:      "platform-baseline",
		sample:       "config/samples/baseline_sample.yaml",
		upstreamCRDs: true,
		baseline:     []string{"test/e2e/testdata/platform_baseline_cluster.yaml"},
	},
}

// largeCase is load-aware-rebalancing among the bulk objects of a long-lived cluster.
var largeCase = profileCase{
	name:    "load-aware-rebalancing, large",
	profile: "load-aware-rebalancing",
	sample:  "config/samples/loadaware_sample.yaml",
	bulk: &bulkObjects{
		machineConfigs: 500, machineConfigBytes: 100 << 10,
		configMaps: 5000, configMapBytes: 1 << 10, configMapNamespaces: 10,
	},
}

// options are the command line settings.
type options struct {
	root            string
	assets          string
	upstreamCRDs    string
	manager         string
	runs            int
	profiles        []profileCase
	settle          time.Duration
	planTimeout     time.Duration
	applyTimeout    time.Duration
	keep            bool
	operatorUser    string
	managerNS       string
	startupDeadline time.Duration
	// renderDelay and rebootTime are the pool simulator's in the profile cases;
	// scenarioRenderDelay is its render delay in the reboot scenarios.
	renderDelay, rebootTime, scenarioRenderDelay time.Duration
	// idle is the idle window after Completed.
	idle time.Duration
	// scenarios runs the reboot scenarios.
	scenarios bool
	// nodeCounts are the worker counts of the node-scale cases; rssSettle is the wait after
	// ReviewRequired before their memory is read; pprofDir receives their heap profiles.
	nodeCounts []int
	rssSettle  time.Duration
	pprofDir   string
	// vms runs the VM cases: the rollouts of vmRolloutCases, each live migration taking
	// migrationTime, and the memory case of vmiCount VirtualMachineInstances on vmiWorkers
	// workers (none: 0).
	vms                  bool
	migrationTime        time.Duration
	vmiCount, vmiWorkers int
}

// results are every figure of a benchmark.
type results struct {
	runs      []runResult
	scenarios []scenarioResult
	nodeScale []nodeScaleResult
	// vmRollouts are the rollout VM cases; vmiMemory the memory cases, without
	// VirtualMachineInstances first.
	vmRollouts []vmRolloutResult
	vmiMemory  []vmiMemoryResult
}

func main() {
	opts, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(2)
	}
	// envtest logs through controller-runtime; its messages are of no use here.
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := runAll(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(1)
	}
	printTables(os.Stdout, opts, res)
}

// runAll runs every profile case opts.runs times, then the reboot scenarios and the
// node-scale cases once each, each time from a copy of the manager binary made for this
// benchmark. The peak RSS includes the pages of the binary's file the
// manager has mapped, and that part depends on the state of the file in the page cache:
// the same build peaked at 57-59 MiB run from bin/manager and at 52-53 MiB run from a
// copy, the difference all in RssFile. A fresh copy is in the same state for every build
// compared.
func runAll(ctx context.Context, opts *options) (*results, error) {
	dir, err := os.MkdirTemp("", "benche2e-manager-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	run := *opts
	run.manager = filepath.Join(dir, "manager")
	if err := copyExecutable(opts.manager, run.manager); err != nil {
		return nil, err
	}
	res := &results{}
	for _, pc := range run.profiles {
		for i := 1; i <= run.runs; i++ {
			logf("%s: run %d/%d", pc.name, i, run.runs)
			r, err := runOnce(ctx, &run, pc, i)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", pc.name, i, err)
			}
			res.runs = append(res.runs, r)
		}
	}
	if run.scenarios {
		for _, sc := range scenarios {
			logf("scenario: %s", sc.name)
			r, err := runScenario(ctx, &run, sc)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.name, err)
			}
			res.scenarios = append(res.scenarios, r)
		}
	}
	for _, n := range run.nodeCounts {
		logf("platform-baseline plan with %d worker Nodes", n)
		r, err := runNodeScale(ctx, &run, n)
		if err != nil {
			return nil, fmt.Errorf("%d worker Nodes: %w", n, err)
		}
		res.nodeScale = append(res.nodeScale, r)
	}
	if run.vms {
		if err := runVMCases(ctx, &run, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runVMCases runs the rollout VM cases, then the memory case with and without
// VirtualMachineInstances.
func runVMCases(ctx context.Context, opts *options, res *results) error {
	start := time.Now()
	for _, vc := range vmRolloutCases {
		logf("VMs: %s", vc.name)
		r, err := runVMRollout(ctx, opts, vc)
		if err != nil {
			return fmt.Errorf("VMs %s: %w", vc.name, err)
		}
		res.vmRollouts = append(res.vmRollouts, r)
	}
	if opts.vmiCount > 0 {
		for _, n := range []int{0, opts.vmiCount} {
			logf("load-aware-rebalancing plan with %d VirtualMachineInstances on %d worker Nodes", n, opts.vmiWorkers)
			r, err := runVMIMemory(ctx, opts, opts.vmiWorkers, n)
			if err != nil {
				return fmt.Errorf("%d VirtualMachineInstances: %w", n, err)
			}
			res.vmiMemory = append(res.vmiMemory, r)
		}
	}
	logf("the VM cases took %.0fs", time.Since(start).Seconds())
	return nil
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy the manager binary: %w", err)
	}
	return out.Close()
}

// parseFlags reads the command line. The flags are a set of the benchmark's own: the test
// helpers it links register theirs (Ginkgo's, controller-runtime's -kubeconfig) on the
// process's default set, and none of them is the benchmark's.
func parseFlags() (*options, error) {
	flags := flag.NewFlagSet("benche2e", flag.ExitOnError)
	opts := &options{}
	var profiles, nodeCounts, only string
	var idleSeconds int
	var large bool
	flags.StringVar(&opts.root, "root", ".", "The repository root: samples and baseline manifests are read from it.")
	flags.StringVar(&opts.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"Directory of kube-apiserver and etcd (default $KUBEBUILDER_ASSETS).")
	flags.StringVar(&opts.upstreamCRDs, "upstream-crds", os.Getenv("UPSTREAM_CRDS"),
		"Directory of the upstream CRDs some profiles install (default $UPSTREAM_CRDS, else <root>/../shared/upstream-crds).")
	flags.StringVar(&opts.manager, "manager", os.Getenv("MANAGER_BINARY"), "The manager binary (default $MANAGER_BINARY).")
	flags.IntVar(&opts.runs, "runs", 3, "Runs per profile case, each on a fresh control plane.")
	flags.StringVar(&profiles, "profiles", "",
		"Comma-separated profiles whose cases run (default: all; none: no profile case).")
	flags.DurationVar(&opts.settle, "settle", 2*time.Second,
		"Wait after /readyz answers before the plan stage, so that start-up requests stay out of it.")
	flags.DurationVar(&opts.planTimeout, "plan-timeout", 2*time.Minute, "Longest wait for ReviewRequired.")
	flags.DurationVar(&opts.applyTimeout, "apply-timeout", 2*time.Minute, "Longest wait for Completed.")
	flags.DurationVar(&opts.startupDeadline, "startup-timeout", time.Minute, "Longest wait for the manager's /readyz.")
	flags.BoolVar(&opts.keep, "keep", false,
		"Keep every run's directory (logs, audit log); failed runs keep theirs anyway.")
	flags.StringVar(&opts.operatorUser, "operator-user", "virt-advisor-bench-operator",
		"The user the manager authenticates as; the audit log counts its requests.")
	flags.StringVar(&opts.managerNS, "namespace", "virt-advisor-bench", "The namespace the manager runs in (--namespace).")
	flags.DurationVar(&opts.renderDelay, "render-delay", 100*time.Millisecond,
		"The pool simulator's render delay (the Machine Config Operator's is 5s): "+
			"short, so that the manager's own time stays visible.")
	flags.DurationVar(&opts.scenarioRenderDelay, "scenario-render-delay", poolsim.DefaultRenderDelay,
		"The pool simulator's render delay in the reboot scenarios: the Machine Config Operator's, "+
			"since it decides which changes one render, so one reboot, takes together.")
	flags.DurationVar(&opts.rebootTime, "reboot-time", 100*time.Millisecond,
		"How long a simulated node takes to reboot into a new configuration.")
	flags.IntVar(&idleSeconds, "idle-seconds", 60, "The idle window after Completed, in seconds.")
	flags.BoolVar(&large, "large", true,
		"Also run load-aware-rebalancing among 500 MachineConfigs of 100 KiB and 5,000 ConfigMaps.")
	flags.BoolVar(&opts.scenarios, "scenarios", true,
		"Run the reboot scenarios (6 workers, 3 masters): the full platform-baseline sample, "+
			"the three profiles together and one after the other.")
	flags.StringVar(&nodeCounts, "node-counts", "6,3000",
		"Comma-separated worker Node counts of the node-scale cases (a platform-baseline plan); empty: none.")
	flags.DurationVar(&opts.rssSettle, "rss-settle", 10*time.Second,
		"Wait after ReviewRequired before the node-scale cases read the manager's memory.")
	flags.StringVar(&opts.pprofDir, "pprof-dir", "",
		"Write the manager's heap profile of each node-scale case and VM memory case to this directory.")
	flags.BoolVar(&opts.vms, "vms", true,
		"Run the VM cases: rollouts of 6 workers × 10 VMs and 30 workers × 20 VMs, forecast against actual, "+
			"and the manager's memory per VirtualMachineInstance.")
	flags.DurationVar(&opts.migrationTime, "migration-time", 50*time.Millisecond,
		"How long a simulated live migration takes in the VM cases.")
	flags.IntVar(&opts.vmiCount, "vmis", 10000,
		"VirtualMachineInstances of the VM memory case, measured against none (0: no memory case).")
	flags.IntVar(&opts.vmiWorkers, "vmi-workers", 100,
		"Worker Nodes the VirtualMachineInstances of the VM memory case run on.")
	flags.StringVar(&only, "only", "",
		"Comma-separated parts to run, the others not: profiles, scenarios, node-scale, vms (default: all).")
	_ = flags.Parse(os.Args[1:])

	if opts.assets == "" {
		return nil, errors.New("set KUBEBUILDER_ASSETS (or -assets) to the directory of kube-apiserver and etcd: " +
			"export KUBEBUILDER_ASSETS=$(make -s envtest)")
	}
	if opts.manager == "" {
		return nil, errors.New("set MANAGER_BINARY (or -manager) to the manager binary: make build builds bin/manager")
	}
	if opts.runs < 1 {
		return nil, fmt.Errorf("-runs=%d: want at least 1", opts.runs)
	}
	if idleSeconds < 0 {
		return nil, fmt.Errorf("-idle-seconds=%d: want 0 or more", idleSeconds)
	}
	opts.idle = time.Duration(idleSeconds) * time.Second
	if opts.vmiCount < 0 || opts.vmiWorkers < 1 {
		return nil, fmt.Errorf("-vmis=%d -vmi-workers=%d: want 0 or more VMIs on 1 or more workers",
			opts.vmiCount, opts.vmiWorkers)
	}
	if err := applyOnly(opts, only, &profiles, &nodeCounts); err != nil {
		return nil, err
	}
	for _, field := range strings.Split(nodeCounts, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		n, err := strconv.Atoi(field)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-node-counts: %q is not a positive number", field)
		}
		opts.nodeCounts = append(opts.nodeCounts, n)
	}
	if opts.upstreamCRDs == "" {
		opts.upstreamCRDs = filepath.Join(opts.root, "..", "shared", "upstream-crds")
	}
	var err error
	for _, p := range []*string{&opts.root, &opts.assets, &opts.manager, &opts.upstreamCRDs} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(opts.root, "config", "samples")); err != nil {
		return nil, fmt.Errorf("-root=%s is not the repository root: %w", opts.root, err)
	}
	if st, err := os.Stat(opts.manager); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("manager binary %s is not an executable file (make build builds it)", opts.manager)
	}
	cases := profileCases
	if large {
		cases = append(cases[:len(cases):len(cases)], largeCase)
	}
	opts.profiles = cases
	if profiles == "none" {
		opts.profiles = nil
	} else if profiles != "" {
		opts.profiles = nil
		for _, name := range strings.Split(profiles, ",") {
			found := false
			for _, pc := range cases {
				if pc.profile == strings.TrimSpace(name) {
					opts.profiles = append(opts.profiles, pc)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("-profiles: unknown profile %q", name)
			}
		}
	}
	if err := checkUpstreamCRDs(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// applyOnly reads -only, the parts to run (all when empty), and turns the others off:
// -profiles=none, no -node-counts, -scenarios=false, -vms=false.
func applyOnly(opts *options, only string, profiles, nodeCounts *string) error {
	if strings.TrimSpace(only) == "" {
		return nil
	}
	parts := map[string]bool{}
	for _, part := range strings.Split(only, ",") {
		switch part = strings.TrimSpace(part); part {
		case "profiles", "scenarios", "node-scale", "vms":
			parts[part] = true
		default:
			return fmt.Errorf("-only: unknown part %q (want profiles, scenarios, node-scale or vms)", part)
		}
	}
	if !parts["profiles"] {
		*profiles = "none"
	}
	if !parts["node-scale"] {
		*nodeCounts = ""
	}
	opts.scenarios = opts.scenarios && parts["scenarios"]
	opts.vms = opts.vms && parts["vms"]
	return nil
}

// checkUpstreamCRDs fails when a case to run needs the upstream CRDs and -upstream-crds
// does not hold them.
func checkUpstreamCRDs(opts *options) error {
	var need string
	switch {
	case opts.scenarios || len(opts.nodeCounts) > 0:
		need = "the scenarios need"
	default:
		for _, pc := range opts.profiles {
			if pc.upstreamCRDs {
				need = "profile " + pc.name + " needs"
				break
			}
		}
	}
	if need == "" {
		return nil
	}
	if _, err := testcluster.UpstreamCRDsIn(opts.upstreamCRDs); err != nil {
		return fmt.Errorf("%s the upstream CRDs (set UPSTREAM_CRDS or -upstream-crds to the directory of the "+
			"upstream CRDs): %w", need, err)
	}
	return nil
}

var started = time.Now()

// logf writes a progress line to stderr; stdout holds only the tables.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%7.2fs benche2e: %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}
