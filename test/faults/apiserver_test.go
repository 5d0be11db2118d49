package faults

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// outage is how long the API server stays down.
const outage = 10 * time.Second

var _ = Describe("The API server stopped and started again on the same etcd", func() {
	BeforeEach(resetCluster)

	It("stopped for 10 s during a status write and during execution: the config ends Completed, nothing applied twice, nothing lost", func() {
		const ns = "faults-apiserver"
		createNamespace(ns)
		// The manager reaches the API server through a proxy, which can hold a status
		// write on its way while the API server stops.
		p := startProxy("faults-apiserver-proxy")
		m := startManager("apiserver", p.kubeconfig("faults-apiserver-manager"), managerOptions{namespace: ns})
		mark := audit.mark()

		createConfig(advisorv1alpha1.ActionDryRun, nil)
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)

		By("approving; the status write that follows the KubeDescheduler's apply is held on its way")
		held, release := make(chan struct{}), make(chan struct{})
		// Released at the latest when the spec ends, so the proxy can close.
		releaseHeld := sync.OnceFunc(func() { close(release) })
		DeferCleanup(releaseHeld)
		var mu sync.Mutex
		applied, holding := false, false
		p.setIntercept(func(r *http.Request) verdict {
			mu.Lock()
			if r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/kubedeschedulers/cluster") && !r.URL.Query().Has("dryRun") {
				applied = true
			}
			hold := applied && !holding && isStatusPatch(r, configName)
			holding = holding || hold
			mu.Unlock()
			if !hold {
				return forward
			}
			close(held)
			<-release
			// The API server went away while the write was on its way: it never arrives.
			return dropConnection
		})
		approve()
		Eventually(held).Should(BeClosed())
		Eventually(func() []auditEvent { return appliesOf(mark, deschedulerTarget) }).Should(HaveLen(1),
			"the apply went through before the status write")

		By("stopping the API server while the status write is on its way")
		apiServerOutage(outage, releaseHeld)
		p.setIntercept(nil)
		Expect(p.entries()).To(ContainElement(And(HaveField("Method", http.MethodPatch),
			HaveField("Path", configPath(configName)+"/status"), HaveField("Injected", true))), "the held status write was lost")

		By("execution resumes: the KubeDescheduler is recorded as applied without a second apply, the MachineConfig is applied")
		waitingForPool(2 * time.Minute)
		Expect(testenv.Item(getConfig(), loadaware.ItemDescheduler).State).To(Equal(advisorv1alpha1.ItemCompleted))
		Expect(appliesOf(mark, deschedulerTarget)).To(HaveLen(1))
		Expect(appliesOf(mark, psiTarget)).To(HaveLen(1))

		By("stopping the API server while the MachineConfig item waits for its pool")
		apiServerOutage(outage, nil)
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted, 2*time.Minute)
		expectCompletedAsPlanned(vpc)

		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(1), "the KubeDescheduler was applied twice")
		Expect(counts[psiTarget].applied).To(Equal(1), "the MachineConfig was applied twice")
		// The KubeDescheduler's first status write was lost, and it was applied once: the
		// record of its apply comes from finding it already applied. (Whether the Event
		// saying so arrives depends on whether the API server still took it before it went
		// away: Events are not retried past the process.)
		Expect(testenv.Item(vpc, loadaware.ItemDescheduler).Applied).NotTo(BeNil(), "the KubeDescheduler's apply is recorded")
		Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale))
		m.reportProcesses(1)
	})
})

// apiServerOutage stops the kube-apiserver process while etcd keeps running, keeps it
// unreachable for d from the moment it stops listening (whileDown runs at that moment),
// and starts it again. It must come back on the same port with the same certificates, so
// every kubeconfig still works, and serve what etcd holds.
func apiServerOutage(d time.Duration, whileDown func()) {
	GinkgoHelper()
	api := env.ControlPlane.APIServer
	port := api.Port
	// The API server's graceful shutdown waits up to a minute for the watches open on it to
	// end. The pool simulator, which runs in this process, is stopped for the outage, so that
	// its watches do not hold the API server up, and started again with the API server.
	Expect(stopPoolSimulator()).To(Succeed(), "the pool simulator stops")
	begin := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- api.Stop() }()
	Eventually(apiServerUp).WithTimeout(30 * time.Second).Should(BeFalse())
	down := time.Now()
	if whileDown != nil {
		whileDown()
	}
	Consistently(apiServerUp).WithTimeout(d).WithPolling(time.Second).Should(BeFalse())
	// The process may linger a while after it stopped listening.
	var err error
	Eventually(stopped).WithTimeout(time.Minute).Should(Receive(&err))
	Expect(err).NotTo(HaveOccurred())
	exited := time.Since(begin)

	Expect(api.Start()).To(Succeed())
	Expect(api.Port).To(Equal(port), "the API server moved to another port")
	Eventually(apiServerReady).Should(Succeed())
	_, stopPoolSimulator = startPoolSimulator(rest.CopyConfig(env.Config), poolSimLog)
	// The CRDs are served again and what etcd holds is there.
	Eventually(func() error { return k8s.Get(ctx, objectKey(configName), &advisorv1alpha1.VirtPlatformConfig{}) }).Should(Succeed())
	Eventually(func() error { return k8s.Get(ctx, deschedulerKey, testenv.Object(deschedulerGVK, deschedulerKey)) }).Should(Succeed())
	By(fmt.Sprintf("the API server on port %s was unreachable for %s (its process exited %s after SIGTERM) and serves again on the same port",
		port, time.Since(down).Round(100*time.Millisecond), exited.Round(100*time.Millisecond)))
}

// apiServerUp tells whether the API server answers /readyz with the administrator's credentials.
func apiServerUp() bool { return apiServerReady() == nil }

// apiServerReady asks the API server's /readyz with the administrator's credentials.
func apiServerReady() error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Timeout = 2 * time.Second
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	resp, err := c.Get(strings.TrimSuffix(cfg.Host, "/") + "/readyz")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("/readyz: %s\n%s", resp.Status, body)
	}
	return nil
}
