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
	"github.com/kubevirt/virt-advisor-operator/test/testca"
)

const managerServiceAccount = "virt-advisor-operator-controller-manager"

var _ = Describe("The metrics endpoint of the manager on the service account of dist/install.yaml", Ordered, func() {
	var (
		cp                      *controlPlane
		metricsURL              string
		readerToken, otherToken string
		managerLog              string
		// certDir is where the Deployment mounts the Secret of the serving certificate: empty,
		// as the optional volume of a Secret that does not exist (yet).
		certDir      string
		scrapeClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// Without the Secret the certificate is self-signed: nothing can verify it.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the self-signed fallback
		}}
	)

	scrapeWith := func(c *http.Client, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, metricsURL, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	scrape := func(token string) (int, string, error) { return scrapeWith(scrapeClient, token) }

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
		certDir = GinkgoT().TempDir()
		startManager(kubeconfig, managerLog, managerArgs(port, certDir))

		Eventually(func() error { _, _, err := scrape(""); return err }).Should(Succeed(),
			"the metrics endpoint does not answer")
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			data, _ := os.ReadFile(managerLog)
			AddReportEntry("manager log", string(data))
		}
	})

	It("serves the metrics with a self-signed certificate for localhost while the Secret of the serving "+
		"certificate is absent", func() {
		conn, err := tls.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(metricsURL, "https://"), "/metrics"),
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // inspecting the self-signed fallback
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close() }()
		Expect(conn.ConnectionState().PeerCertificates[0].DNSNames).To(ConsistOf("localhost"))
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

	It("exports every virt_advisor_ metric the alerts of config/prometheus/prometheus_rule.yaml use (but those that have a series only while something happens)", func() {
		names := alertMetricNames()
		Expect(names).NotTo(BeEmpty(), "found no virt_advisor_ metric in the alerts' expressions")
		// The series of a config appear once the manager has reconciled the configs it advertises.
		Eventually(func(g Gomega) {
			status, body, err := scrape(readerToken)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			for _, name := range names {
				if _, later := seriesOnlyWhile[name]; later {
					continue
				}
				g.Expect(body).To(MatchRegexp(`(?m)^`+regexp.QuoteMeta(name)+`(_bucket|_sum|_count)?[{ ]`), "no series of %s", name)
			}
		}).Should(Succeed())
	})

	It("serves the certificate of the Secret once it is mounted: a scrape that verifies it with the CA "+
		"and the metrics Service's DNS name, as the ServiceMonitor does, gets the series", func() {
		serviceCA, err := testca.New("openshift-service-serving-signer")
		Expect(err).NotTo(HaveOccurred())
		verifying := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: serviceCA.Pool(), ServerName: metricsServiceDNSName()},
		}}
		_, _, err = scrapeWith(verifying, readerToken)
		Expect(err).To(MatchError(ContainSubstring("certificate")), "the self-signed certificate verified")

		// What the service CA writes into the Secret, and the kubelet into the volume.
		Expect(serviceCA.WriteServingSecret(certDir, 2, metricsServiceDNSName())).To(Succeed())

		Eventually(func(g Gomega) {
			status, body, err := scrapeWith(verifying, readerToken)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(body).To(MatchRegexp(`(?m)^virt_advisor_[a-z_]+[{ ]`))
		}).Should(Succeed())
	})

	It("runs without a request the API server forbids", func() {
		data, err := os.ReadFile(managerLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).NotTo(MatchRegexp(`is forbidden: User \\?"system:serviceaccount:`))
	})
})

// managerArgs are the manager's flags in the Deployment of dist/install.yaml, with the
// endpoints bound to the loopback interface and the serving certificate read from certDir
// (where the Deployment mounts its Secret).
func managerArgs(metricsPort int, certDir string) []string {
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
		case strings.HasPrefix(a, "--metrics-cert-path="):
			args = append(args, "--metrics-cert-path="+certDir)
		default:
			args = append(args, a)
		}
	}
	Expect(args).To(ContainElement(HavePrefix("--metrics-bind-address=127.0.0.1:")),
		"the Deployment does not serve metrics")
	Expect(args).To(ContainElement("--metrics-cert-path="+certDir), "the Deployment reads no serving certificate")
	return args
}

// metricsServiceDNSName is the DNS name of the metrics Service of dist/install.yaml, which
// its serving certificate names and the ServiceMonitor verifies.
func metricsServiceDNSName() string {
	GinkgoHelper()
	services := ofKind(readObjects(installYAML), "Service")
	Expect(services).To(HaveLen(1))
	return services[0].GetName() + "." + services[0].GetNamespace() + ".svc"
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
// seriesOnlyWhile are the alerts' metrics that have a series only while something happens
// that this cluster does not do, and what: their names are in internal/metrics' tests.
var seriesOnlyWhile = map[string]string{
	"virt_advisor_pool_paused_since_timestamp_seconds": "a MachineConfigPool is paused by the operator",
}

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
