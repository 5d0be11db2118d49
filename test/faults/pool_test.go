package faults

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The pool simulator's delays: short, so that the roll-out of each spec's reset takes seconds.
const (
	poolRenderDelay = time.Second
	poolRebootTime  = 500 * time.Millisecond
)

// startPoolSimulator runs the pool simulator, which plays the Machine Config Operator on the
// control plane of cfg, until the returned stop is called; it appends to the log logPath.
func startPoolSimulator(cfg *rest.Config, logPath string) (sim *poolsim.Simulator, stop func() error) {
	GinkgoHelper()
	// The simulator's informers log through controller-runtime; what the simulator does is
	// in its own log.
	ctrllog.SetLogger(logr.Discard())
	sim, stop, err := poolsim.RunLogged(context.Background(), cfg,
		poolsim.Options{RenderDelay: poolRenderDelay, RebootTime: poolRebootTime}, logPath)
	Expect(err).NotTo(HaveOccurred())
	return sim, stop
}

// workerPoolRolledOut tells, with an error that says why not, whether the worker pool runs,
// on every node, the configuration rendered from the MachineConfigs that select it now.
func workerPoolRolledOut() error {
	return poolsim.RolledOut(ctx, k8s, "worker")
}

// Show the pool simulator's log for a failed spec.
var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() && poolSimLog != "" {
		data, _ := os.ReadFile(poolSimLog)
		AddReportEntry("pool simulator log", string(data))
	}
})

// pauseWorkerPool pauses or unpauses the worker pool. A paused pool renders what changes,
// and updates no node until it is unpaused.
func pauseWorkerPool(paused bool) {
	GinkgoHelper()
	kubectl("patch", "mcp", "worker", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"paused":%t}}`, paused))
}
