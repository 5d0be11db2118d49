package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// pluginCluster is a control plane with a manager and a pool simulator of its own: the
// plugin drives the load-aware workflow from the advertised config, whatever the other specs
// do with theirs.
type pluginCluster struct {
	kubeconfig string
	// pathDir holds only the plugin binary; it is put first on PATH for kubectl to find.
	pathDir string
	// managerLog is the log of the manager of this control plane, poolSimLog the pool
	// simulator's.
	managerLog string
	poolSimLog string
	// client reads the control plane as its administrator.
	client client.Client
	// pools plays the Machine Config Operator on this control plane.
	pools *poolsim.Simulator
}

// pluginBinary is the kubectl plugin under test: PLUGIN_BINARY, else next to the manager.
func pluginBinary() string {
	if bin := os.Getenv("PLUGIN_BINARY"); bin != "" {
		return bin
	}
	return filepath.Join(filepath.Dir(managerBin), "kubectl-virt_advisor")
}

// startPluginCluster starts a control plane with this project's CRD, the base test CRDs, the
// 4.20 KubeDescheduler and the upstream CRDs given (files of upstreamCRDFiles' form), the
// manager and the pool simulator; all stop when the calling container ends.
func startPluginCluster(upstream ...string) *pluginCluster {
	GinkgoHelper()
	bin := pluginBinary()
	_, err := os.Stat(bin)
	Expect(err).NotTo(HaveOccurred(), "set PLUGIN_BINARY to the kubectl plugin (make test-e2e builds it)")

	dir := GinkgoT().TempDir()
	pc := &pluginCluster{kubeconfig: filepath.Join(dir, "kubeconfig"), pathDir: filepath.Join(dir, "path")}
	Expect(os.Mkdir(pc.pathDir, 0o755)).To(Succeed())
	Expect(os.Symlink(bin, filepath.Join(pc.pathDir, "kubectl-virt_advisor"))).To(Succeed())

	pluginEnv, err := testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	for _, f := range upstream {
		crd, err := testenv.ReadCRD(upstreamCRD(f))
		Expect(err).NotTo(HaveOccurred())
		pluginEnv.CRDs = append(pluginEnv.CRDs, crd)
	}
	_, err = pluginEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(e *envtest.Environment) { Expect(e.Stop()).To(Succeed()) }, pluginEnv)
	Expect(os.WriteFile(pc.kubeconfig, pluginEnv.KubeConfig, 0o600)).To(Succeed())
	pc.client, err = client.New(pluginEnv.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())

	// Registered after the control plane's cleanup, so it stops before the control plane.
	pc.poolSimLog = filepath.Join(dir, "poolsim.log")
	var stopPools func() error
	pc.pools, stopPools = startPoolSimulator(pluginEnv.Config, pc.poolSimLog)
	DeferCleanup(stopPools)

	// The manager runs on its ServiceAccount's token with the RBAC of dist/install.yaml.
	pc.kubectl("apply", "--server-side", "-f", installRBAC())
	m, err := cluster.StartManager(context.Background(), pluginEnv.Config, managerBin, dir)
	Expect(err).NotTo(HaveOccurred())
	pc.managerLog = m.LogPath
	DeferCleanup(func() { Expect(m.Stop()).To(Succeed()) })
	return pc
}

// env is the environment of the commands run against the plugin's control plane: kubectl
// finds the plugin on PATH; the kubeconfig is passed with --kubeconfig only.
func (pc *pluginCluster) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+pc.pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func kubectlBinary() string { return filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl") }

// plugin runs `kubectl virt-advisor ARGS --kubeconfig ...` with the real kubectl and returns
// stdout, stderr and the exit code.
func (pc *pluginCluster) plugin(args ...string) (string, string, int) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBinary(), pc.pluginArgs(args...)...)
	cmd.Env = pc.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		Fail("kubectl virt-advisor " + strings.Join(args, " ") + ": " + err.Error())
	}
	GinkgoWriter.Printf("$ kubectl virt-advisor %s  (exit %d)\n%s%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(),
		stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func (pc *pluginCluster) pluginArgs(args ...string) []string {
	return append(append([]string{"virt-advisor"}, args...), "--kubeconfig="+pc.kubeconfig)
}

// startPlugin starts `kubectl virt-advisor ARGS` and returns at once.
func (pc *pluginCluster) startPlugin(args ...string) *gexec.Session {
	GinkgoHelper()
	cmd := exec.Command(kubectlBinary(), pc.pluginArgs(args...)...)
	cmd.Env = pc.env()
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill() })
	return session
}

// kubectl runs the real kubectl against the plugin's control plane.
func (pc *pluginCluster) kubectl(args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(kubectlBinary(), append(args, "--kubeconfig="+pc.kubeconfig)...)
	cmd.Env = pc.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "kubectl %s\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

func (pc *pluginCluster) jsonpath(resource, path string, extra ...string) string {
	GinkgoHelper()
	return pc.kubectl(append([]string{"get", resource, "-o", "jsonpath=" + path}, extra...)...)
}

// setUpWorkerPool creates three Ready worker Nodes (worker-0 to worker-2) and the baseline
// resources of a cluster without OpenShift, whose worker pool selects them, and waits until
// the pool has rolled out.
func (pc *pluginCluster) setUpWorkerPool() {
	GinkgoHelper()
	By("setting up the baseline resources of a cluster without OpenShift, with three workers")
	_, err := pc.pools.CreateNodes(context.Background(), "worker", 3)
	Expect(err).NotTo(HaveOccurred())
	pc.kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	pc.waitForWorkerPool()
}

// waitForWorkerPool waits until the worker pool has rolled out what its MachineConfigs hold.
func (pc *pluginCluster) waitForWorkerPool() {
	GinkgoHelper()
	waitForWorkerPool(pc.client)
}

// holdWorkerPool pauses the worker pool, as an administrator does to choose when its nodes
// reboot: the Machine Config Operator renders what changes but updates no node until
// rollOutWorkers.
func (pc *pluginCluster) holdWorkerPool() {
	GinkgoHelper()
	pc.kubectl("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":true}}`)
}

// rollOutWorkers unpauses the worker pool: the Machine Config Operator rolls it out, one
// node at a time.
func (pc *pluginCluster) rollOutWorkers() {
	GinkgoHelper()
	pc.kubectl("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":false}}`)
}

type statusRow struct {
	Name           string `json:"name"`
	Action         string `json:"action"`
	Phase          string `json:"phase"`
	Impact         string `json:"impact"`
	ItemsCompleted int    `json:"itemsCompleted"`
	ItemsTotal     int    `json:"itemsTotal"`
	Reason         string `json:"reason"`
	PlanHash       string `json:"planHash"`
}

func (pc *pluginCluster) status(name string) statusRow {
	GinkgoHelper()
	out, errOut, code := pc.plugin("status", "-o", "json")
	Expect(code).To(Equal(0), errOut)
	var rows []statusRow
	Expect(json.Unmarshal([]byte(out), &rows)).To(Succeed())
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	return statusRow{}
}

var planHashLine = regexp.MustCompile(`(?m)^Plan hash: ([0-9a-f]{64})$`)

const loadAware = "load-aware-rebalancing"

var _ = Describe("An administrator with the kubectl virt-advisor plugin", Ordered, func() {
	var (
		pc        *pluginCluster
		firstHash string
		driftHash string
	)
	descheduler := []string{"kubedescheduler/cluster", "-n", "openshift-kube-descheduler-operator"}

	BeforeAll(func() {
		pc = startPluginCluster()
		pc.setUpWorkerPool()
		By("pausing the worker pool: its nodes reboot when the spec that waits for them says so")
		pc.holdWorkerPool()
	})

	ReportAfterEach(func(report SpecReport) {
		if report.Failed() && pc != nil {
			data, _ := os.ReadFile(pc.managerLog)
			AddReportEntry("manager log (the plugin's control plane)", string(data))
			data, _ = os.ReadFile(pc.poolSimLog)
			AddReportEntry("pool simulator log (the plugin's control plane)", string(data))
		}
	})

	It("lists the advertised profiles with status", func() {
		Eventually(func() string { return pc.status(loadAware).Phase }).Should(Equal("Ignored"))
		out, _, code := pc.plugin("status")
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`(?m)^PROFILE\s+ACTION\s+PHASE\s+IMPACT\s+ITEMS\s+REASON\s+AGE$`))
		Expect(out).To(MatchRegexp(`(?m)^load-aware-rebalancing\s+Ignore\s+Ignored\s+-\s+0/0\s+ActionIgnore\s+\S+$`))
	})

	It("names the existing configs and the valid profiles for an unknown name", func() {
		_, errOut, code := pc.plugin("plan", "load-aware")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`"load-aware" is not a profile`))
		Expect(errOut).To(ContainSubstring("Existing VirtPlatformConfigs: "))
		Expect(errOut).To(ContainSubstring("load-aware-rebalancing (Ignored)"))
		Expect(errOut).To(ContainSubstring("Valid profile names: load-aware-rebalancing, virt-higher-density, platform-baseline"))
	})

	It("drafts the plan with dry-run and waits until it needs review", func() {
		out, _, code := pc.plugin("dry-run", loadAware)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("spec.action set to DryRun (was Ignore)"))
		_, errOut, code := pc.plugin("wait", loadAware, "--for=ReviewRequired", "--timeout=2m")
		Expect(code).To(Equal(0), errOut)
	})

	It("shows the plan with its diffs and the plan hash, and exits 2 because it changes something", func() {
		out, errOut, code := pc.plugin("plan", loadAware)
		Expect(code).To(Equal(2), errOut)
		Expect(out).To(ContainSubstring("Item 1/2: enable-load-aware-descheduling\n"))
		Expect(out).To(ContainSubstring("  target:  KubeDescheduler openshift-kube-descheduler-operator/cluster (operator.openshift.io/v1)\n"))
		Expect(out).To(ContainSubstring("\n-  - LifecycleAndUtilization\n"))
		Expect(out).To(ContainSubstring("\n+  - KubeVirtRelieveAndMigrate\n"))
		Expect(out).To(MatchRegexp(`(?m)^@@ -\d+,\d+ \+\d+,\d+ @@`))
		Expect(out).To(ContainSubstring("Item 2/2: enable-psi-metrics\n"))
		Expect(out).To(ContainSubstring("  impact:  High\n"))
		Expect(out).To(ContainSubstring("\n--- /dev/null\n+++ MachineConfig 99-worker-psi-karg (planned)\n"))
		Expect(out).To(ContainSubstring("\n+  - psi=1\n"))
		m := planHashLine.FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), "no plan hash in:\n%s", out)
		firstHash = m[1]
		Expect(pc.jsonpath("vpc/"+loadAware, "{.status.planHash}")).To(Equal(firstHash))
		Expect(out).To(ContainSubstring("kubectl virt-advisor approve load-aware-rebalancing --hash " + firstHash))

		out, _, code = pc.plugin("plan", loadAware, "--item", "enable-psi-metrics")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("Item 2/2: enable-psi-metrics"))
		Expect(out).NotTo(ContainSubstring("KubeDescheduler"))
	})

	It("colors the plan only when asked to, or on a terminal", func() {
		out, _, code := pc.plugin("plan", loadAware, "--color=auto")
		Expect(code).To(Equal(2))
		Expect(out).NotTo(ContainSubstring("\x1b"), "stdout is not a terminal")

		out, _, code = pc.plugin("plan", loadAware, "--color=always")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("\x1b[32m+  - KubeVirtRelieveAndMigrate\x1b[0m\n"))
		Expect(out).To(ContainSubstring("\x1b[31m-  - LifecycleAndUtilization\x1b[0m\n"))
		Expect(out).To(MatchRegexp(`\x1b\[36m@@ -\d+,\d+ \+\d+,\d+ @@\x1b\[0m`))
		Expect(out).To(ContainSubstring("\x1b[1m--- /dev/null\x1b[0m\n"))
		Expect(out).To(ContainSubstring("\x1b[1mPlan hash: " + firstHash + "\x1b[0m\n"))
	})

	It("approves exactly the plan shown", func() {
		out, errOut, code := pc.plugin("approve", loadAware)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("Approved plan " + firstHash))
		Expect(pc.jsonpath("vpc/"+loadAware, "{.spec.action} {.spec.approvedPlanHash}")).To(Equal("Apply " + firstHash))
	})

	It("waits for Completed, printing which item waits for what while the worker pool rolls out", func() {
		wait := pc.startPlugin("wait", loadAware, "--for=Completed", "--timeout=3m")
		Eventually(func() string { return string(wait.Out.Contents()) }).Should(
			MatchRegexp(`item 2/2 enable-psi-metrics InProgress: MachineConfigPool worker .*; pool worker `))
		Expect(wait.ExitCode()).To(Equal(-1), "still waiting while the pool has not rolled out")
		pc.rollOutWorkers()
		Eventually(wait).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		Expect(string(wait.Out.Contents())).To(MatchRegexp(`(?m)load-aware-rebalancing: Completed \(\w+\)`))

		row := pc.status(loadAware)
		Expect(row.Phase).To(Equal("Completed"))
		Expect(row.ItemsCompleted).To(Equal(2))
		Expect(row.ItemsTotal).To(Equal(2))
		Expect(pc.jsonpath("machineconfig/99-worker-psi-karg", "{.spec.kernelArguments}")).To(Equal(`["psi=1"]`))
		Expect(pc.jsonpath(descheduler[0], "{.spec.profiles}", descheduler[1:]...)).
			To(Equal(`["AffinityAndTaints","SoftTopologyAndDuplicates","KubeVirtRelieveAndMigrate"]`))
	})

	It("shows that the completed plan changes nothing, and refuses to approve it", func() {
		out, _, code := pc.plugin("plan", loadAware)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("This plan changes nothing."))

		rv := pc.jsonpath("vpc/"+loadAware, "{.metadata.resourceVersion}")
		_, errOut, code := pc.plugin("approve", loadAware)
		Expect(code).NotTo(Equal(0))
		Expect(errOut).To(ContainSubstring("nothing to approve: load-aware-rebalancing is Completed"))
		Expect(pc.jsonpath("vpc/"+loadAware, "{.metadata.resourceVersion}")).To(Equal(rv))
	})

	It("shows the correction of a drift in the plan", func() {
		pc.kubectl(append([]string{"patch"}, append(descheduler, "--type=merge", "--field-manager=cluster-admin",
			"-p", `{"spec":{"profiles":["AffinityAndTaints","LongLifecycle"]}}`)...)...)
		_, errOut, code := pc.plugin("wait", loadAware, "--for=ReviewRequired", "--timeout=2m")
		Expect(code).To(Equal(0), errOut)
		Expect(pc.status(loadAware).Phase).To(Equal("Drifted"))

		out, _, code := pc.plugin("plan", loadAware)
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("\n-  - LongLifecycle\n"))
		Expect(out).To(ContainSubstring("\n+  - KubeVirtRelieveAndMigrate\n"))
		m := planHashLine.FindStringSubmatch(out)
		Expect(m).NotTo(BeNil())
		driftHash = m[1]
		Expect(driftHash).NotTo(Equal(firstHash))
	})

	It("refuses to approve with an outdated hash, changing nothing", func() {
		before := pc.jsonpath("vpc/"+loadAware, "{.metadata.resourceVersion} {.spec}")
		_, errOut, code := pc.plugin("approve", loadAware, "--hash", firstHash)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--hash is " + firstHash + ", but the plan shown now has hash " + driftHash))
		Expect(errOut).To(ContainSubstring("kubectl virt-advisor plan load-aware-rebalancing"))
		Expect(pc.jsonpath("vpc/"+loadAware, "{.metadata.resourceVersion} {.spec}")).To(Equal(before))
	})

	It("approves the correction and waits for Completed and Ready", func() {
		_, errOut, code := pc.plugin("approve", loadAware, "--hash", driftHash)
		Expect(code).To(Equal(0), errOut)
		Expect(pc.jsonpath("vpc/"+loadAware, "{.spec.approvedPlanHash}")).To(Equal(driftHash))
		_, errOut, code = pc.plugin("wait", loadAware, "--for=Completed", "--timeout=2m")
		Expect(code).To(Equal(0), errOut)
		_, errOut, code = pc.plugin("wait", loadAware, "--for=Ready", "--timeout=1m")
		Expect(code).To(Equal(0), errOut)
		Expect(pc.jsonpath(descheduler[0], "{.spec.profiles}", descheduler[1:]...)).
			To(Equal(`["AffinityAndTaints","SoftTopologyAndDuplicates","KubeVirtRelieveAndMigrate"]`))
		out, _, code := pc.plugin("plan", loadAware)
		Expect(code).To(Equal(0), out)
	})
})
