package e2e

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The pool simulator's delays in the suite: a render delay long enough that a spec sees an
// item wait for its pool before the pool rolls out, and short reboots, so that a roll-out of
// three workers takes seconds.
const (
	poolRenderDelay = 2 * time.Second
	poolRebootTime  = 500 * time.Millisecond
)

// poolRolloutTimeout bounds the wait for a pool to roll out what its MachineConfigs hold.
const poolRolloutTimeout = 2 * time.Minute

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

// waitForWorkerPool waits until the worker pool has rolled out what its MachineConfigs hold.
func waitForWorkerPool(c client.Reader) {
	GinkgoHelper()
	Eventually(func() error { return poolsim.RolledOut(context.Background(), c, "worker") }).
		WithTimeout(poolRolloutTimeout).Should(Succeed())
}
