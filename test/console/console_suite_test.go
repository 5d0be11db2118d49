// Package console tests the OpenShift console plugin (console/) in a real browser: Debian's
// Chromium, driven by playwright-core from console/integration/console.mjs, opens the built
// plugin through the harness's host page, which loads it from its plugin-manifest.json as the
// console does. `kubectl proxy` serves the host page and the plugin's files and proxies
// /kubernetes/ (the console's /api/kubernetes/) to a real control plane, where the manager binary
// runs as its ServiceAccount and the pool simulator plays the Machine Config Operator.
//
// `make test-console` builds the plugin (console/dist) and the host page (console/harness/dist)
// first, and runs this test with the control plane's binaries (KUBEBUILDER_ASSETS) and the
// manager binary (MANAGER_BINARY).
package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The pool simulator's render delay and reboot time: a rollout of the three workers takes
// long enough for the page to show it wave by wave.
const (
	poolRenderDelay = 2 * time.Second
	poolRebootTime  = 3 * time.Second
)

// reviewer is the user of the second proxy: it may read VirtPlatformConfigs and Events, not
// change them.
const reviewer = "reviewer@example.com"

var (
	env        *envtest.Environment
	workDir    string
	kubeconfig string
	admin      client.Client
	manager    *cluster.Manager
	poolSimLog string
	stopPool   func() error
	// consoleURL is the host page and API of the administrator; reviewerURL the reviewer's.
	consoleURL, reviewerURL string
	stopProxies             []func()
	// screenshots is where the browser test writes its screenshots ($CONSOLE_SCREENSHOTS, else
	// the test's own directory).
	screenshots string
)

func TestConsole(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "virt-advisor console plugin in a browser")
}

var _ = BeforeSuite(func() {
	managerBin := os.Getenv("MANAGER_BINARY")
	Expect(managerBin).NotTo(BeEmpty(), "set MANAGER_BINARY to the manager binary (make test-console builds it)")
	for _, built := range []string{"dist/plugin-manifest.json", "harness/dist/index.html", "node_modules/playwright-core"} {
		_, err := os.Stat(testenv.Path("console", built))
		Expect(err).NotTo(HaveOccurred(), "console/%s is missing: make test-console builds the plugin and the host page", built)
	}

	workDir = GinkgoT().TempDir()
	screenshots = os.Getenv("CONSOLE_SCREENSHOTS")
	if screenshots == "" {
		screenshots = filepath.Join(workDir, "screenshots")
	}
	Expect(os.MkdirAll(screenshots, 0o755)).To(Succeed())

	var err error
	env, err = testenv.New(testenv.ClusterCRDs()...)
	Expect(err).NotTo(HaveOccurred())
	env.CRDs, err = cluster.UpstreamCRDs()
	Expect(err).NotTo(HaveOccurred())
	_, err = env.Start()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())
	admin, err = client.New(env.Config, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	By("setting up the cluster of the platform-baseline samples: the worker pool, three labelled workers, the HyperConverged")
	kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
	poolSimLog = filepath.Join(workDir, "poolsim.log")
	startPoolSimulator(env.Config)
	Eventually(func() error { return poolsim.RolledOut(context.Background(), admin, "worker") }).Should(Succeed())

	By("running the manager as its ServiceAccount with the RBAC of dist/install.yaml")
	rbac, err := cluster.InstallRBAC()
	Expect(err).NotTo(HaveOccurred())
	rbacFile := filepath.Join(workDir, "install-rbac.yaml")
	Expect(os.WriteFile(rbacFile, rbac, 0o600)).To(Succeed())
	kubectl("apply", "--server-side", "-f", rbacFile)
	manager, err = cluster.StartManager(context.Background(), env.Config, managerBin, workDir)
	Expect(err).NotTo(HaveOccurred())

	By("serving the host page and the plugin with kubectl proxy, for the administrator and for a reviewer")
	site := hostSite()
	consoleURL = startProxy(site)
	kubectl("apply", "-f", reviewerRBAC())
	reviewerURL = startProxy(site, "--as="+reviewer, "--as-group=system:authenticated")
})

var _ = AfterSuite(func() {
	for _, stop := range stopProxies {
		stop()
	}
	if manager != nil {
		Expect(manager.Stop()).To(Succeed())
	}
	if stopPool != nil {
		Expect(stopPool()).To(Succeed(), "the pool simulator stops")
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// Show the manager's and the pool simulator's logs for a failed spec.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	if manager != nil {
		data, _ := os.ReadFile(manager.LogPath)
		AddReportEntry("manager log", string(data))
	}
	if poolSimLog != "" {
		data, _ := os.ReadFile(poolSimLog)
		AddReportEntry("pool simulator log", string(data))
	}
})

func startPoolSimulator(cfg *rest.Config) {
	GinkgoHelper()
	// The simulator's informers log through controller-runtime; what it does is in its log.
	ctrllog.SetLogger(logr.Discard())
	var err error
	_, stopPool, err = poolsim.RunLogged(context.Background(), cfg,
		poolsim.Options{RenderDelay: poolRenderDelay, RebootTime: poolRebootTime}, poolSimLog)
	Expect(err).NotTo(HaveOccurred())
}

// hostSite is the directory kubectl proxy serves: the host page at / and the plugin's files
// where the console serves a plugin's, /api/plugins/<name>/.
func hostSite() string {
	GinkgoHelper()
	site := filepath.Join(workDir, "site")
	plugins := filepath.Join(site, "api", "plugins")
	Expect(os.MkdirAll(plugins, 0o755)).To(Succeed())
	Expect(os.Symlink(testenv.Path("console", "dist"), filepath.Join(plugins, "virt-advisor-plugin"))).To(Succeed())
	Expect(os.Symlink(testenv.Path("console", "harness", "dist"), filepath.Join(site, "harness"))).To(Succeed())
	Expect(os.Symlink(testenv.Path("console", "harness", "dist", "index.html"), filepath.Join(site, "index.html"))).To(Succeed())
	return site
}

// reviewerRBAC binds the reviewer to the operator's viewer role of dist/install.yaml, and
// lets it read Events.
func reviewerRBAC() string {
	GinkgoHelper()
	doc := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: virt-advisor-reviewer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: virt-advisor-operator-virtplatformconfig-viewer-role
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: event-reader
rules:
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: virt-advisor-reviewer-events
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: event-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: %[1]s
`, reviewer)
	path := filepath.Join(workDir, "reviewer-rbac.yaml")
	Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
	return path
}

var serving = regexp.MustCompile(`Starting to serve on (\S+)`)

// startProxy runs kubectl proxy on a free port: the files of site at /, the API server at
// /kubernetes/, with extra flags (impersonation). It returns its URL. (The console's backend
// serves the API at /api/kubernetes/; kubectl proxy strips no prefix that starts with /api.)
func startProxy(site string, extra ...string) string {
	GinkgoHelper()
	args := append([]string{"proxy", "--address=127.0.0.1", "--port=0",
		"--api-prefix=/kubernetes/", "--www=" + site, "--www-prefix=/"}, extra...)
	cmd := exec.Command(kubectlPath(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	cmd.Stderr = GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	stopProxies = append(stopProxies, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if m := serving.FindStringSubmatch(scanner.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	Eventually(addr).WithTimeout(30 * time.Second).Should(Receive(&url))
	return "http://" + url
}

func kubectlPath() string { return filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl") }

// kubectl runs the control plane's kubectl as the administrator and returns its stdout.
func kubectl(args ...string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "kubectl %s\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// browse runs one scenario of console/integration/console.mjs in Chromium and returns the
// result it reports; what it prints goes to the test's output.
func browse(scenario string, extraEnv ...string) map[string]any {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "integration/console.mjs", scenario)
	cmd.Dir = testenv.Path("console")
	cmd.Env = append(os.Environ(), append([]string{
		"CONSOLE_URL=" + consoleURL,
		"REVIEWER_URL=" + reviewerURL,
		"SCREENSHOTS=" + screenshots,
		"BROWSER_PROFILES=" + workDir,
	}, extraEnv...)...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, GinkgoWriter)
	cmd.Stderr = GinkgoWriter
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	Expect(err).NotTo(HaveOccurred(), "the browser scenario %s failed", scenario)
	result := map[string]any{}
	for _, line := range strings.Split(out.String(), "\n") {
		if reported, ok := strings.CutPrefix(line, "RESULT "); ok {
			Expect(json.Unmarshal([]byte(reported), &result)).To(Succeed())
		}
	}
	return result
}
