package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	testcluster "github.com/kubevirt/virt-advisor-operator/test/cluster"
)

// managerProc is the manager binary running against the control plane as the operator's
// user (testcluster.Launch).
type managerProc struct {
	*testcluster.Manager
	// ready is when its /readyz first answered 200.
	ready time.Time
}

// startManager starts the manager, with the benchmark's flags and extraArgs, and waits
// until its /readyz answers.
func startManager(ctx context.Context, opts *options, cp *controlPlane, dir string,
	extraArgs ...string) (*managerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	probe := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := make([]string, 0, 6+len(extraArgs))
	args = append(args,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+probe,
		"--namespace="+opts.managerNS,
		"--health-poll-interval=1s",
		"--advertise-profiles=false",
	)
	proc, err := testcluster.Launch(opts.manager, cp.operatorKubeconfig, filepath.Join(dir, "manager.log"),
		append(args, extraArgs...)...)
	if err != nil {
		return nil, err
	}
	m := &managerProc{Manager: proc}

	client := &http.Client{Timeout: time.Second}
	url := "http://" + probe + "/readyz"
	deadline := time.After(opts.startupDeadline)
	for {
		if ok, _ := probeOK(ctx, client, url); ok {
			m.ready = time.Now()
			return m, nil
		}
		select {
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-m.Done():
			return nil, fmt.Errorf("the manager exited before it was ready (%v):\n%s", m.ExitErr(), m.logTail())
		case <-deadline:
			m.stop()
			return nil, fmt.Errorf("the manager's %s did not answer 200 within %s:\n%s", url, opts.startupDeadline, m.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func probeOK(ctx context.Context, client *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// memory is the manager's resident set size: its peak so far (VmHWM) and now (VmRSS), in MiB.
func (m *managerProc) memory() (peak, now float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.Pid()))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[2] != "kB" || (fields[0] != "VmHWM:" && fields[0] != "VmRSS:") {
			continue
		}
		kb, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return 0, 0, err
		}
		if fields[0] == "VmHWM:" {
			peak = kb / 1024
		} else {
			now = kb / 1024
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("no VmHWM or VmRSS in /proc/%d/status", m.Pid())
	}
	return peak, now, nil
}

// stop ends the manager: an interrupt, and SIGKILL if it is still running 15s later.
func (m *managerProc) stop() {
	if m.Terminate() {
		logf("the manager did not stop within 15s of an interrupt: killed it")
	}
}

// logTailLines is how much of the manager's log an error shows.
const logTailLines = 20

// logTail is the end of the manager's log.
func (m *managerProc) logTail() string { return m.LogTail(logTailLines) }
