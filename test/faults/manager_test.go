package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// acquiredLease is what client-go's leader election logs (in lower case) once this process leads.
const acquiredLease = "successfully acquired lease"

// manager runs bin/manager as the process it is in a cluster: a process that exits
// without being asked to (a manager that cannot renew its lease in time exits) is started
// again, as the kubelet restarts a container.
type manager struct {
	name       string
	kubeconfig string
	args       []string

	mu sync.Mutex
	// logs[i] is the log of the (i+1)th process started.
	logs     []string
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	// stoppedAt is when stop ended the last process.
	stoppedAt time.Time
}

// managerOptions are the flags a spec adds to the common ones.
type managerOptions struct {
	// namespace is the operator's namespace, which holds the leader election lease.
	namespace string
	// metricsAddr serves the metrics over plain HTTP when set; otherwise they are off.
	metricsAddr string
	// shortLease times the leader election with shortLeaseDuration instead of the
	// defaults (15s), so a standby or a restarted manager takes over a killed leader's
	// lease sooner.
	shortLease bool
}

// shortLeaseDuration is the lease duration of managers started with shortLease.
const shortLeaseDuration = 4 * time.Second

// startManager starts bin/manager with leader election, the health poll of the tests and
// the given kubeconfig, and stops it when the spec ends.
func startManager(name, kubeconfig string, o managerOptions) *manager {
	GinkgoHelper()
	metrics := []string{"--metrics-bind-address=0"}
	if o.metricsAddr != "" {
		metrics = []string{"--metrics-bind-address=" + o.metricsAddr, "--metrics-secure=false"}
	}
	m := &manager{
		name: name, kubeconfig: kubeconfig,
		args: append([]string{
			"--leader-elect", "--namespace=" + o.namespace,
			"--health-probe-bind-address=0", "--health-poll-interval=1s",
			// The specs create the configs they run; none is advertised.
			"--advertise-profiles=false",
		}, metrics...),
	}
	if o.shortLease {
		m.args = append(m.args, "--leader-elect-lease-duration="+shortLeaseDuration.String(),
			"--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	}
	m.start()
	allManagers = append(allManagers, m)
	DeferCleanup(m.stop)
	return m
}

func (m *manager) start() {
	GinkgoHelper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startLocked()
}

func (m *manager) startLocked() {
	GinkgoHelper()
	logPath := filepath.Join(workDir, fmt.Sprintf("manager-%s-%d.log", m.name, len(m.logs)+1))
	logFile, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(managerBin, m.args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	Expect(cmd.Start()).To(Succeed())
	m.logs = append(m.logs, logPath)
	m.cmd = cmd
	exited := make(chan struct{})
	m.exited = exited
	go func() {
		defer GinkgoRecover()
		_ = cmd.Wait()
		_ = logFile.Close()
		close(exited)
		m.mu.Lock()
		again := !m.stopping && m.cmd == cmd
		m.mu.Unlock()
		if !again {
			return
		}
		_, _ = fmt.Fprintf(GinkgoWriter, "manager %s exited on its own (%s); starting it again\n", m.name, cmd.ProcessState)
		// The kubelet's back-off before it starts a container again.
		<-time.After(restartBackOff)
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.stopping && m.cmd == cmd {
			m.startLocked()
		}
	}()
}

// restartBackOff is how long a process that exited on its own stays down.
const restartBackOff = time.Second

// kill sends SIGKILL and waits until the process is gone: nothing it did not send yet is sent.
func (m *manager) kill() {
	GinkgoHelper()
	m.mu.Lock()
	m.stopping = true
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	// A process that already exited on its own is not started again either.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	Eventually(exited).WithTimeout(10 * time.Second).Should(BeClosed())
}

// restart starts a new process after kill.
func (m *manager) restart() {
	GinkgoHelper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopping = false
	m.startLocked()
}

// stop ends the process as the kubelet does: SIGTERM, then SIGKILL after a grace period.
func (m *manager) stop() {
	m.mu.Lock()
	m.stopping = true
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.stoppedAt = time.Now()
		m.mu.Unlock()
	}()
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// processes is how many processes were started.
func (m *manager) processes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.logs)
}

// reportProcesses prints how many processes ran and how many of those exited on their own.
func (m *manager) reportProcesses(started int) {
	By(fmt.Sprintf("manager %s: %d process(es) started by the spec, %d more after exiting on their own",
		m.name, started, m.processes()-started))
}

// log returns the log of the running (last started) process.
func (m *manager) log() string {
	m.mu.Lock()
	path := m.logs[len(m.logs)-1]
	m.mu.Unlock()
	data, _ := os.ReadFile(path)
	return string(data)
}

// leads tells whether the running process holds the leader election lease.
func (m *manager) leads() bool {
	return strings.Contains(strings.ToLower(m.log()), acquiredLease)
}

// allLogs returns the logs of every process, for a failed spec.
func (m *manager) allLogs() string {
	m.mu.Lock()
	paths := append([]string(nil), m.logs...)
	m.mu.Unlock()
	var b strings.Builder
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "==> %s <==\n%s\n", filepath.Base(p), data)
	}
	return b.String()
}

// allManagers are the managers the specs started.
var allManagers []*manager

// A failed spec reports the logs of the managers that ran during it.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	for _, m := range allManagers {
		m.mu.Lock()
		ran := m.stoppedAt.IsZero() || m.stoppedAt.After(report.StartTime)
		m.mu.Unlock()
		if ran {
			AddReportEntry("manager "+m.name+" log", m.allLogs())
		}
	}
})
