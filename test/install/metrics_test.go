package install

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/satoken"
)

const managerServiceAccount = "virt-advisor-operator-controller-manager"

var _ = Describe("The metrics endpoint of the manager on the service account of dist/install.yaml", Ordered, func() {
	var (
		cp                      *controlPlane
		metricsURL              string
		readerToken, otherToken string
		managerLog              string
		scrapeClient            = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The metrics server's certificate is self-signed, as in a cluster (see config/prometheus/monitor.yaml).
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test certificate
		}}
	)

	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, metricsURL, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := scrapeClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	BeforeAll(func(ctx SpecContext) {
		cp = startControlPlane()
		cp.kubectl("apply", "--server-side", "-f", installYAML)

		// Two scrapers: prometheus is bound to the metrics-reader ClusterRole, other to nothing.
		cp.createNamespaces("monitoring")
		cp.kubectl("create", "serviceaccount", "prometheus", "--namespace", "monitoring")
		cp.kubectl("create", "serviceaccount", "other", "--namespace", "monitoring")
		cp.kubectl("create", "clusterrolebinding", "prometheus-virt-advisor-metrics",
			"--clusterrole", "virt-advisor-operator-metrics-reader", "--serviceaccount", "monitoring:prometheus")
		var err error
		readerToken, err = satoken.Token(ctx, cp.config, "monitoring", "prometheus")
		Expect(err).NotTo(HaveOccurred())
		otherToken, err = satoken.Token(ctx, cp.config, "monitoring", "other")
		Expect(err).NotTo(HaveOccurred())

		dir := GinkgoT().TempDir()
		kubeconfig := filepath.Join(dir, "manager-kubeconfig")
		Expect(satoken.WriteKubeconfig(ctx, cp.config, operatorNamespace, managerServiceAccount, kubeconfig)).To(Succeed())
		port := freePort()
		metricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
		managerLog = filepath.Join(dir, "manager.log")
		startManager(kubeconfig, managerLog, managerArgs(port))

		Eventually(func() error { _, _, err := scrape(""); return err }).Should(Succeed(),
			"the metrics endpoint does not answer")
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			data, _ := os.ReadFile(managerLog)
			AddReportEntry("manager log", string(data))
		}
	})

	It("answers a token of a ServiceAccount bound to the metrics-reader ClusterRole with 200 "+
		"and the virt_advisor_ series", func() {
		status, body, err := scrape(readerToken)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(MatchRegexp(`(?m)^virt_advisor_[a-z_]+[{ ]`))
	})

	It("answers a token of a ServiceAccount without that binding with 403", func() {
		status, body, err := scrape(otherToken)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusForbidden), body)
		Expect(body).NotTo(ContainSubstring("virt_advisor_"))
	})

	It("answers a request without a token with 401", func() {
		status, body, err := scrape("")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusUnauthorized), body)
		Expect(body).NotTo(ContainSubstring("virt_advisor_"))
	})

	It("exports every virt_advisor_ metric the alerts of config/prometheus/prometheus_rule.yaml use", func() {
		names := alertMetricNames()
		Expect(names).NotTo(BeEmpty(), "found no virt_advisor_ metric in the alerts' expressions")
		// The series of a config appear once the manager has reconciled the configs it advertises.
		Eventually(func(g Gomega) {
			status, body, err := scrape(readerToken)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			for _, name := range names {
				g.Expect(body).To(MatchRegexp(`(?m)^`+regexp.QuoteMeta(name)+`(_bucket|_sum|_count)?[{ ]`), "no series of %s", name)
			}
		}).Should(Succeed())
	})

	It("runs without a request the API server forbids", func() {
		data, err := os.ReadFile(managerLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).NotTo(MatchRegexp(`is forbidden: User \\?"system:serviceaccount:`))
	})
})

// managerArgs are the manager's flags in the Deployment of dist/install.yaml, with the
// endpoints bound to the loopback interface.
func managerArgs(metricsPort int) []string {
	GinkgoHelper()
	deployments := ofKind(readObjects(installYAML), "Deployment")
	Expect(deployments).To(HaveLen(1))
	var args []string
	for _, arg := range managerContainer(deployments)["args"].([]any) {
		switch a := arg.(string); {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			args = append(args, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort))
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			args = append(args, "--health-probe-bind-address=127.0.0.1:0")
		default:
			args = append(args, a)
		}
	}
	Expect(args).To(ContainElement(HavePrefix("--metrics-bind-address=127.0.0.1:")),
		"the Deployment does not serve metrics")
	return args
}

// startManager runs the manager binary with kubeconfig in the operator's namespace (as the
// Deployment's POD_NAMESPACE says) until the calling container's specs are done.
func startManager(kubeconfig, logPath string, args []string) {
	GinkgoHelper()
	log, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(managerBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+operatorNamespace)
	cmd.Stdout, cmd.Stderr = log, log
	Expect(cmd.Start()).To(Succeed())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	DeferCleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = log.Close()
	})
}

// freePort is a TCP port on the loopback interface no one listens on.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

var metricName = regexp.MustCompile(`virt_advisor_[a-z_]+`)

// alertMetricNames are the virt_advisor_ metrics the alerts' expressions read.
func alertMetricNames() []string {
	GinkgoHelper()
	rules := readObjects(testenv.Path("config", "prometheus", "prometheus_rule.yaml"))
	Expect(rules).To(HaveLen(1))
	groups, _, err := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	Expect(err).NotTo(HaveOccurred())
	seen := map[string]bool{}
	var names []string
	for _, g := range groups {
		ruleList, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range ruleList {
			expr := fmt.Sprint(r.(map[string]any)["expr"])
			for _, name := range metricName.FindAllString(expr, -1) {
				if !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			}
		}
	}
	return names
}
