// Package guide runs the user guide in docs/guide: every command a reader would run is in a
// fenced block marked "sh test", and this test runs them, page after page in pageOrder, on a
// local control plane (a real kube-apiserver and etcd) with the operator running.
//
// How the blocks run:
//
//   - Each block runs on its own, `bash -euo pipefail -c '<block>'`, in order: a failing
//     command fails its block, and a failing block fails the test with the page, the block's
//     number and line, its text, its output and the end of the operator's log. The pages
//     after it are not run, since each page starts from the state the earlier ones left.
//   - Blocks share state through the cluster only: no shell variables carry over from one
//     block to the next (a block that needs a plan hash reads it itself), and no block writes
//     files, so a reader can run any block of a page as it stands.
//   - The working directory is the repository root (config/samples/... paths work). PATH
//     starts with the control plane's kubectl, then bin/ (the kubectl plugin `kubectl
//     virt-advisor`, built by `make build`). KUBECONFIG is the administrator's; HOME and
//     TMPDIR are the test's own.
//   - Blocks wait with `kubectl wait --for=... --timeout=...`, never with sleep. Where the
//     Machine Config Operator rolls a MachineConfigPool out on OpenShift, the pool simulator
//     (test/poolsim, the library of hack/poolsim) does it here, on its own, as the guide's
//     setup runs it: two worker Nodes, worker-0 and worker-1, the operator's render delay
//     and a short reboot per node. It also plays KubeVirt's VMs on them (poolsim.Options.VMs):
//     the VirtualMachines a block creates start on the workers, each of which has 32Gi of
//     allocatable memory for them, and a drain migrates, shuts down or is blocked by them as
//     KubeVirt answers it, each live migration taking a second.
//
// The control plane is the one `make test-e2e` uses: this project's CRD, the test CRDs of
// test/crds/base (MachineConfig, MachineConfigPool, HyperConverged, ...), the 4.20
// KubeDescheduler, and the upstream CRDs of KubeletConfig, NodeHealthCheck and
// SelfNodeRemediationTemplate (testenv.UpstreamCRDs), plus prometheus-operator's
// PrometheusRule and ServiceMonitor and KubeVirt's VirtualMachine,
// VirtualMachineInstance, VirtualMachineInstanceMigration and KubeVirt (test/crds/kubevirt).
// The operator is the manager
// binary (MANAGER_BINARY), running as its ServiceAccount with exactly the RBAC of
// dist/install.yaml; the control plane runs no pods, so there is no Deployment. The
// admission policies and bindings of dist/install.yaml are installed too, as in a cluster.
//
// The command blocks of the repository's README.md run the same way (TestReadme), on a
// control plane of their own, set up as `make demo` sets up its own: the samples' mock
// baseline, and the worker pool rolled out.
//
// A shell block that cannot run there (installing into a real cluster, for instance) is a
// plain "sh" block listed in untestedBlocks with the reason; TestGuidePages fails on any
// other shell block that is not marked "sh test".
package guide

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// pageOrder is the order the pages run in; every page of docs/guide is listed.
var pageOrder = []string{
	"README.md",
	"getting-started.md",
	"load-aware-rebalancing.md",
	"virt-higher-density.md",
	"platform-baseline.md",
	"approvals.md",
	"drift.md",
	"annotations.md",
	"alerts.md",
	"troubleshooting.md",
	"reboots.md",
	"revert.md",
	"fleet.md",
	"console.md",
	"uninstall.md",
}

// untested is a shell block the test deliberately does not run, and why.
type untested struct {
	// text is the block's exact content.
	text string
	// reason says why it cannot run on the test control plane.
	reason string
}

// noNodes is why installing the operator cannot run here.
const noNodes = "installs the operator's Deployment, which needs a cluster that runs pods; the test " +
	"control plane has no nodes, so the test runs the manager binary with the ServiceAccount and RBAC " +
	"of dist/install.yaml instead"

// untestedBlocks are the shell blocks of each page that are not run, by page.
var untestedBlocks = map[string][]untested{
	readmePage: {
		{text: `make demo   # the whole workflow on a local control plane (builds everything it needs)
make test   # everything CI runs`,
			reason: "runs the demo and every test, this one among them; make test runs the demo with DEMO_EXIT=1 " +
				"(make demo-check), which exits at its end instead of waiting for Ctrl-C"},
		{text: `make build-installer IMG=<registry>/virt-advisor-operator:<tag>   # writes dist/install.yaml
kubectl apply --server-side -f dist/install.yaml`,
			reason: "builds the installer for an image of your registry and " + noNodes +
				"; make test-install applies dist/install.yaml on a control plane"},
		{text: `helm install virt-advisor-operator dist/chart --namespace virt-advisor-operator-system --create-namespace \
  --set manager.image.tag=<tag> --set prometheus.enable=true --set prometheusRule.enable=true`,
			reason: noNodes + "; make test-install installs the chart, its ServiceMonitor and PrometheusRule " +
				"included, on a control plane"},
	},
	guidePage("getting-started.md"): {
		{text: `helm install virt-advisor-operator dist/chart \
  --namespace virt-advisor-operator-system --create-namespace --set manager.image.tag=<tag>
kubectl label namespace virt-advisor-operator-system pod-security.kubernetes.io/enforce=restricted`,
			reason: noNodes + "; make test-install installs the chart on a control plane"},
		{text: `kubectl apply --server-side -f dist/install.yaml
kubectl -n virt-advisor-operator-system rollout status deployment/virt-advisor-operator-controller-manager --timeout=5m`,
			reason: noNodes + "; make test-install applies dist/install.yaml on a control plane"},
		{text: `make envtest build controlplane poolsim
export KUBECONFIG=/tmp/virt-advisor.kubeconfig PATH="$(make -s envtest):$PWD/bin:$PATH"
bin/controlplane --write-kubeconfig "$KUBECONFIG" &
until kubectl get namespace default >/dev/null 2>&1; do sleep 1; done
kubectl create namespace virt-advisor-operator-system
bin/manager --namespace=virt-advisor-operator-system --metrics-bind-address=0 --health-probe-bind-address=0 &
bin/poolsim --workers 2 --reboot-time 2s >/tmp/virt-advisor-poolsim.log &`,
			reason: "starts the local control plane, the operator and the pool simulator this test itself provides"},
	},
	guidePage("alerts.md"): {
		{text: `helm upgrade virt-advisor-operator dist/chart --namespace virt-advisor-operator-system --reuse-values \
  --set prometheus.enable=true --set prometheusRule.enable=true \
  --set prometheus.labels.release=kube-prometheus-stack --set prometheusRule.labels.release=kube-prometheus-stack`,
			reason: "upgrades a Helm release, and the operator here was not installed with Helm (" + noNodes +
				"); make test-install renders and installs the chart's PrometheusRule and ServiceMonitor"},
	},
	guidePage("troubleshooting.md"): {
		{text: `kubectl logs -n virt-advisor-operator-system deployment/virt-advisor-operator-controller-manager --tail=100`,
			reason: "reads the log of the operator's pod; the test control plane runs no pods, and the test " +
				"prints the manager binary's log when a block fails"},
	},
	guidePage("console.md"): {
		{text: `make console-docker-build console-docker-push CONSOLE_IMG=<registry>/virt-advisor-console-plugin:<tag>
helm upgrade virt-advisor-operator dist/chart --namespace virt-advisor-operator-system --reuse-values \
  --set consolePlugin.enable=true --set consolePlugin.image.repository=<registry>/virt-advisor-console-plugin \
  --set consolePlugin.image.tag=<tag>`,
			reason: "builds and pushes an image to your registry, and upgrades a Helm release, and the operator here was not " +
				"installed with Helm (" + noNodes + "); make test-install installs the chart with the console plugin on a " +
				"control plane with OpenShift's ConsolePlugin CRD"},
		{text: `oc get consoles.operator.openshift.io cluster -o jsonpath='{.spec.plugins}{"\n"}'
oc patch consoles.operator.openshift.io cluster --type=json \
  -p '[{"op":"add","path":"/spec/plugins/-","value":"virt-advisor-plugin"}]'`,
			reason: "enables the plugin in the console of an OpenShift cluster; the test control plane runs no console"},
		{text: `oc patch consoles.operator.openshift.io cluster --type=json \
  -p '[{"op":"add","path":"/spec/plugins","value":["virt-advisor-plugin"]}]'`,
			reason: "enables the plugin in the console of an OpenShift cluster; the test control plane runs no console"},
		{text: `make test-console`,
			reason: "runs the console plugin's tests, in a browser, on a control plane of their own; it is a target of its own " +
				"because it needs Node.js and Chromium"},
	},
	guidePage("uninstall.md"): {
		{text: `helm uninstall virt-advisor-operator --namespace virt-advisor-operator-system`,
			reason: "uninstalls a Helm release, and the operator here was not installed with Helm; " +
				"make test-install installs, upgrades and uninstalls the chart"},
		{text: `kubectl delete --ignore-not-found -f dist/install.yaml`,
			reason: "deletes the operator's namespace, which the test control plane cannot finish deleting (it " +
				"runs no namespace controller), and the Deployment the test never ran; make test-install " +
				"deletes dist/install.yaml on a control plane"},
	},
}

// blockTimeout bounds one block; its kubectl waits have their own, shorter timeouts.
const blockTimeout = 4 * time.Minute

// TestGuide runs every "sh test" block of the guide against the operator.
func TestGuide(t *testing.T) {
	managerBin := os.Getenv("MANAGER_BINARY")
	if managerBin == "" {
		t.Fatal("set MANAGER_BINARY to the manager binary (make test-guide builds it)")
	}
	pages := make([]page, 0, len(pageOrder))
	for _, name := range pageOrder {
		p, err := readPage(guidePage(name))
		if err != nil {
			t.Fatalf("%v", err)
		}
		pages = append(pages, p)
	}

	cp := startControlPlane(t, managerBin)

	blocks, pagesRun, untestedRun := 0, 0, 0
	for _, p := range pages {
		ok := t.Run(strings.TrimSuffix(path.Base(p.name), ".md"), func(t *testing.T) {
			if p.name == guidePage("fleet.md") {
				// The fleet page's clusters run while it does.
				cp.startFleet(t, managerBin)
			}
			pagesRun++
			untestedRun += len(untestedBlocks[p.name])
			blocks += cp.runBlocks(t, p)
		})
		if !ok {
			t.Fatalf("stopped after %s: the pages after it start from the state it leaves", p.name)
		}
	}
	t.Logf("ran %d blocks of %d pages; %d shell blocks of those pages are deliberately untested (untestedBlocks)",
		blocks, pagesRun, untestedRun)
}

// runBlocks runs the tested blocks of p in order and returns how many it ran.
func (cp *controlPlane) runBlocks(t *testing.T, p page) int {
	t.Helper()
	n := 0
	for i, b := range p.blocks {
		if !b.tested() {
			continue
		}
		n++
		cp.runBlock(t, p, i, b)
	}
	return n
}

// controlPlane is the running control plane, operator and pool simulator the blocks talk to.
type controlPlane struct {
	// env is what every block runs with.
	env []string
	// kubeconfig is the blocks' kubeconfig.
	kubeconfig string
	// managerLog is the operator's log file, poolSimLog the pool simulator's.
	managerLog string
	poolSimLog string
}

// The pool simulator of the guide's control plane: as the guide's setup runs hack/poolsim
// (docs/guide/getting-started.md), with two workers, the Machine Config Operator's render
// delay and a 2-second reboot per node; it also plays the VMs on the workers, each of
// which has room for 16 VMs of 2Gi, with a 1-second live migration.
const (
	guideWorkers       = 2
	guideRebootTime    = 2 * time.Second
	guideMigrationTime = time.Second
	guideWorkerMemory  = "32Gi"
)

// startControlPlane starts the control plane and the operator; both stop when t ends.
func startControlPlane(t *testing.T, managerBin string) *controlPlane {
	t.Helper()
	env, err := testenv.New(append(testenv.ClusterCRDs(), testenv.Path("test", "crds", "monitoring"), testenv.KubeVirtCRDs)...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The operators the control plane has besides the base ones: the Migration Toolkit for
	// Virtualization and MetalLB are not installed, so their platform-baseline items are Skipped.
	upstream, err := cluster.UpstreamCRDs()
	if err != nil {
		t.Fatalf("%v", err)
	}
	env.CRDs = append(env.CRDs, upstream...)
	if _, err := env.Start(); err != nil {
		t.Fatalf("start the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})

	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	for _, dir := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(work, dir), 0o700); err != nil {
			t.Fatalf("%v", err)
		}
	}
	cp := &controlPlane{
		env:        blockEnv(kubeconfig, work),
		kubeconfig: kubeconfig,
		managerLog: filepath.Join(work, "manager.log"),
		poolSimLog: filepath.Join(work, "poolsim.log"),
	}
	cp.startPoolSimulator(t, env.Config)

	// The operator runs on the credentials it has in a cluster: a token of its
	// ServiceAccount, bound by exactly the RBAC of dist/install.yaml (which also creates its
	// namespace). The admission policies of dist/install.yaml record who requested and who
	// approved each plan, and enforce the verb approve and four-eyes.
	rbac := filepath.Join(work, "install-rbac.yaml")
	installRBAC, err := cluster.InstallRBACAndPolicies()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(rbac, installRBAC, 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	if out, err := cp.run(context.Background(), "kubectl", "apply", "--server-side", "-f", rbac); err != nil {
		t.Fatalf("apply the RBAC and admission policies of dist/install.yaml: %v\n%s", err, out)
	}
	manager, err := cluster.StartManager(context.Background(), env.Config, managerBin, work)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cp.managerLog = manager.LogPath
	// Registered after the control plane's cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := manager.Stop(); err != nil {
			data, _ := os.ReadFile(cp.managerLog)
			t.Errorf("%v: the guide needs it\n%s", err, tail(string(data), 40))
		}
	})
	return cp
}

// fleetClusters are the clusters of the fleet page, beside the guide's own: each a control
// plane with the operator and the pool simulator (cluster.StartPlane), with a context of its
// own in the blocks' kubeconfig.
var fleetClusters = []string{"east", "west", "south"}

// startFleet starts the fleet page's clusters, one after the other (API servers starting at
// once on a busy machine miss their start timeout), and adds their contexts to the blocks'
// kubeconfig; they stop when t ends.
func (cp *controlPlane) startFleet(t *testing.T, managerBin string) {
	t.Helper()
	// The work directories are made first: they are removed after everything stopped.
	works := make([]string, len(fleetClusters))
	for i := range works {
		works[i] = t.TempDir()
	}
	var planes []*cluster.Plane
	t.Cleanup(func() {
		for _, p := range planes {
			if err := p.Stop(); err != nil {
				t.Errorf("%v", err)
			}
		}
	})
	for i, name := range fleetClusters {
		p, err := cluster.StartPlane(name, works[i], managerBin, cluster.PlaneOptions{
			Workers: guideWorkers, RebootTime: guideRebootTime,
		})
		planes = append(planes, p)
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
	if err := cluster.AddContexts(cp.kubeconfig, planes...); err != nil {
		t.Fatalf("%v", err)
	}
}

// startPoolSimulator runs the pool simulator, which plays the Machine Config Operator and
// KubeVirt's VMs, with the guide's workers, until t ends (before the control plane stops).
func (cp *controlPlane) startPoolSimulator(t *testing.T, cfg *rest.Config) {
	t.Helper()
	// The simulator's informers log through controller-runtime; what the simulator does is
	// in its own log.
	ctrllog.SetLogger(logr.Discard())
	sim, stop, err := poolsim.RunLogged(context.Background(), cfg, poolsim.Options{
		RenderDelay: poolsim.DefaultRenderDelay, RebootTime: guideRebootTime,
		VMs: true, MigrationTime: guideMigrationTime,
	}, cp.poolSimLog)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("the pool simulator: %v", err)
		}
	})
	workers, err := sim.CreateNodes(context.Background(), "worker", guideWorkers)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The room the scheduler model gives VMs: without it, every VM would start on the
	// first worker.
	for _, node := range workers {
		if err := sim.SetAllocatableMemory(context.Background(), node, guideWorkerMemory); err != nil {
			t.Fatalf("%v", err)
		}
	}
}

// blockEnv is the environment of every block: the administrator's kubeconfig, the control
// plane's kubectl first on PATH, then bin/, and a HOME and TMPDIR of the test's own.
func blockEnv(kubeconfig, work string) []string {
	searchPath := strings.Join([]string{
		os.Getenv("KUBEBUILDER_ASSETS"), testenv.Path("bin"), os.Getenv("PATH"),
	}, string(os.PathListSeparator))
	replaced := map[string]string{
		"KUBECONFIG": kubeconfig,
		"PATH":       searchPath,
		"HOME":       filepath.Join(work, "home"),
		"TMPDIR":     filepath.Join(work, "tmp"),
	}
	env := make([]string, 0, len(os.Environ())+len(replaced))
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		// KUBECTL would name another kubectl than the one on PATH.
		if _, ok := replaced[key]; ok || key == "KUBECTL" {
			continue
		}
		env = append(env, kv)
	}
	for key, value := range replaced {
		env = append(env, key+"="+value)
	}
	return env
}

// run runs a command with the blocks' environment in the repository root and returns its
// combined output.
func (cp *controlPlane) run(ctx context.Context, name string, args ...string) (string, error) {
	out, _, err := cp.runSplit(ctx, name, args...)
	return out, err
}

// runSplit is run that also returns what the command wrote to stderr alone.
func (cp *controlPlane) runSplit(ctx context.Context, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = cp.env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&out, &stderr)
	// A process a block leaves behind must not keep the test waiting for its output.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), stderr.String(), err
}

// runBlock runs block i of page p and fails t with everything needed to see why.
func (cp *controlPlane) runBlock(t *testing.T, p page, i int, b block) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	start := time.Now()
	out, stderr, err := cp.runSplit(ctx, "bash", "-euo", "pipefail", "-c", b.text)
	where := fmt.Sprintf("%s block %d (line %d)", p.name, i+1, b.line)
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(strings.ToLower(line), "warning") && !watchStopped(line) {
			t.Errorf("%s printed a warning on stderr: %s", where, line)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out after %s)", err, blockTimeout)
		}
		managerLog, _ := os.ReadFile(cp.managerLog)
		poolSimLog, _ := os.ReadFile(cp.poolSimLog)
		t.Fatalf("%s failed: %v\n--- block\n%s\n--- output\n%s\n--- operator log (last 40 lines)\n%s\n"+
			"--- pool simulator log (last 20 lines)\n%s",
			where, err, b.text, out, tail(string(managerLog), 40), tail(string(poolSimLog), 20))
	}
	t.Logf("%s (%s)\n$ %s\n%s", where, time.Since(start).Round(100*time.Millisecond),
		strings.ReplaceAll(b.text, "\n", "\n$ "), out)
}

// watchStopped tells the line client-go's reflector logs in kubectl wait when the wait
// stops its watch, the condition met or the timeout reached: "Warning: watch ended with
// error" for the canceled context. It says nothing about the command.
func watchStopped(line string) bool {
	return strings.Contains(line, "watch ended with error") && strings.Contains(line, "context canceled")
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
