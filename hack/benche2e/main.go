// Command benche2e measures the manager binary end to end: for each profile it starts a
// fresh local control plane (the envtest kube-apiserver and etcd, with the API server's
// audit log on), installs the CRDs and the baseline objects (the project's CRD, the test
// CRDs, and the upstream CRDs and objects the profile's targets need), starts the manager as
// a user of its own, and times the two stages an administrator waits for:
//
//   - plan: server-side apply of the profile's sample until .status.phase is ReviewRequired;
//   - apply: the merge patch spec.action=Apply until .status.phase is Completed, while a
//     simulated Machine Config Operator rolls out each MachineConfig and KubeletConfig of
//     the plan to the worker pool as soon as it exists.
//
// Both phases are observed through a watch. The audit log gives the manager's requests per
// stage: all of them, the writes (create, update, patch, delete, deletecollection; dry runs
// are counted apart) and the ones answered 409 Conflict. The startup row is the time from
// launching the manager until /readyz answers, with the requests it sent before the plan
// stage began. Each profile runs -runs times; the table lists every run and the medians,
// where the time of each stage went (the class of API request in flight at each moment, see
// account), and the peak RSS (VmHWM) of the manager at the end of each run.
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
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// profileCase is one profile the benchmark runs: its name, the sample that plans it, and
// what its control plane has besides the project's CRD, the test CRDs and
// config/samples/mock_baseline_resources.yaml.
type profileCase struct {
	name   string
	sample string
	// upstreamCRDs are the CRDs of the operators the profile's targets belong to, as files
	// "<group>/<plural>.yaml" of the upstream CRD directory (-upstream-crds).
	upstreamCRDs []string
	// baseline are further manifests, relative to the repository root, applied in order
	// after mock_baseline_resources.yaml and before the manager starts.
	baseline []string
}

// commonBaseline is the manifest every profile case applies first.
const commonBaseline = "config/samples/mock_baseline_resources.yaml"

var profileCases = []profileCase{
	{name: "load-aware-rebalancing", sample: "config/samples/loadaware_sample.yaml"},
	{name: "virt-higher-density", sample: "config/samples/higherdensity_sample.yaml"},
	{
		// As in test/e2e: the Machine Config Operator's KubeletConfig, the Node Health Check
		// and Self Node Remediation operators are installed; MTV and MetalLB are not, so
		// their items are Skipped.
		name:   "platform-baseline",
		sample: "config/samples/baseline_sample.yaml",
		upstreamCRDs: []string{
			"machineconfiguration.openshift.io/kubeletconfigs.yaml",
			"remediation.medik8s.io/nodehealthchecks.yaml",
			"self-node-remediation.medik8s.io/selfnoderemediationtemplates.yaml",
		},
		baseline: []string{"test/e2e/testdata/platform_baseline_cluster.yaml"},
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
	results, err := runAll(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(1)
	}
	printTables(os.Stdout, opts, results)
}

// runAll runs every profile opts.runs times, each time from a copy of the manager binary
// made for this benchmark. The peak RSS includes the pages of the binary's file the
// manager has mapped, and that part depends on the state of the file in the page cache:
// the same build peaked at 57-59 MiB run from bin/manager and at 52-53 MiB run from a
// copy, the difference all in RssFile. A fresh copy is in the same state for every build
// compared.
func runAll(ctx context.Context, opts *options) ([]runResult, error) {
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
	var results []runResult
	for _, pc := range run.profiles {
		for i := 1; i <= run.runs; i++ {
			logf("%s: run %d/%d", pc.name, i, run.runs)
			res, err := runOnce(ctx, &run, pc, i)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", pc.name, i, err)
			}
			results = append(results, res)
		}
	}
	return results, nil
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

func parseFlags() (*options, error) {
	opts := &options{}
	var profiles string
	flag.StringVar(&opts.root, "root", ".", "The repository root: CRDs, samples and baseline are read from it.")
	flag.StringVar(&opts.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"Directory of kube-apiserver and etcd (default $KUBEBUILDER_ASSETS).")
	flag.StringVar(&opts.upstreamCRDs, "upstream-crds", os.Getenv("UPSTREAM_CRDS"),
		"Directory of the upstream CRDs some profiles install (default $UPSTREAM_CRDS, else <root>/../shared/upstream-crds).")
	flag.StringVar(&opts.manager, "manager", os.Getenv("MANAGER_BINARY"), "The manager binary (default $MANAGER_BINARY).")
	flag.IntVar(&opts.runs, "runs", 3, "Runs per profile, each on a fresh control plane.")
	flag.StringVar(&profiles, "profiles", "", "Comma-separated profiles to run (default: all).")
	flag.DurationVar(&opts.settle, "settle", 2*time.Second,
		"Wait after /readyz answers before the plan stage, so that start-up requests stay out of it.")
	flag.DurationVar(&opts.planTimeout, "plan-timeout", 2*time.Minute, "Longest wait for ReviewRequired.")
	flag.DurationVar(&opts.applyTimeout, "apply-timeout", 2*time.Minute, "Longest wait for Completed.")
	flag.DurationVar(&opts.startupDeadline, "startup-timeout", time.Minute, "Longest wait for the manager's /readyz.")
	flag.BoolVar(&opts.keep, "keep", false,
		"Keep every run's directory (logs, audit log); failed runs keep theirs anyway.")
	flag.StringVar(&opts.operatorUser, "operator-user", "virt-advisor-bench-operator",
		"The user the manager authenticates as; the audit log counts its requests.")
	flag.StringVar(&opts.managerNS, "namespace", "virt-advisor-bench", "The namespace the manager runs in (--namespace).")
	flag.Parse()

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
	opts.profiles = profileCases
	if profiles != "" {
		opts.profiles = nil
		for _, name := range strings.Split(profiles, ",") {
			found := false
			for _, pc := range profileCases {
				if pc.name == strings.TrimSpace(name) {
					opts.profiles = append(opts.profiles, pc)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("-profiles: unknown profile %q", name)
			}
		}
	}
	for _, pc := range opts.profiles {
		for _, f := range pc.upstreamCRDs {
			if _, err := os.Stat(filepath.Join(opts.upstreamCRDs, filepath.FromSlash(f))); err != nil {
				return nil, fmt.Errorf("profile %s needs the upstream CRD %s (set UPSTREAM_CRDS or -upstream-crds to "+
					"the directory of the upstream CRDs): %w", pc.name, f, err)
			}
		}
	}
	return opts, nil
}

var started = time.Now()

// logf writes a progress line to stderr; stdout holds only the tables.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%7.2fs benche2e: %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}
