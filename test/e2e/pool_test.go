package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

var (
	poolGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	machineConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
)

// startPoolSimulator runs the pool simulator, which plays the Machine Config Operator on the
// control plane of cfg, until the returned stop is called; it logs to logPath.
func startPoolSimulator(cfg *rest.Config, logPath string) (sim *poolsim.Simulator, stop func()) {
	GinkgoHelper()
	// The simulator's informers log through controller-runtime; what the simulator does is
	// in its own log.
	ctrllog.SetLogger(logr.Discard())
	log, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	sim, err = poolsim.New(cfg, poolsim.Options{RenderDelay: poolRenderDelay, RebootTime: poolRebootTime, Out: log})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	return sim, func() {
		GinkgoHelper()
		cancel()
		Eventually(done).Should(Receive(BeNil()), "the pool simulator stops")
		Expect(log.Close()).To(Succeed())
	}
}

// workerPoolRolledOut tells, with an error that says why not, whether the worker pool runs,
// on every node, the configuration rendered from the MachineConfigs that select it now.
func workerPoolRolledOut(ctx context.Context, c client.Reader) error {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(poolGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: "worker"}, pool); err != nil {
		return err
	}
	configs := &unstructured.UnstructuredList{}
	configs.SetGroupVersionKind(machineConfigGVK.GroupVersion().WithKind("MachineConfigList"))
	if err := c.List(ctx, configs, client.MatchingLabels{"machineconfiguration.openshift.io/role": "worker"}); err != nil {
		return err
	}
	var selected []string
	for _, mc := range configs.Items {
		if mc.GetDeletionTimestamp() == nil {
			selected = append(selected, mc.GetName())
		}
	}
	var rendered []string
	sources, _, _ := unstructured.NestedSlice(pool.Object, "spec", "configuration", "source")
	for _, s := range sources {
		if ref, ok := s.(map[string]any); ok {
			rendered = append(rendered, fmt.Sprint(ref["name"]))
		}
	}
	slices.Sort(selected)
	slices.Sort(rendered)
	if !slices.Equal(selected, rendered) {
		return fmt.Errorf("MachineConfigPool worker renders [%s], its MachineConfigs are [%s]",
			strings.Join(rendered, " "), strings.Join(selected, " "))
	}
	target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	current, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	updated := ""
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	for _, cond := range conditions {
		if m, ok := cond.(map[string]any); ok && m["type"] == "Updated" {
			updated = fmt.Sprint(m["status"])
		}
	}
	if observed != pool.GetGeneration() || current != target || updated != "True" {
		return fmt.Errorf("MachineConfigPool worker is rolling out %s (runs %q, Updated %q, observed generation %d of %d)",
			target, current, updated, observed, pool.GetGeneration())
	}
	return nil
}

// waitForWorkerPool waits until the worker pool has rolled out what its MachineConfigs hold.
func waitForWorkerPool(c client.Reader) {
	GinkgoHelper()
	Eventually(func() error { return workerPoolRolledOut(context.Background(), c) }).
		WithTimeout(poolRolloutTimeout).Should(Succeed())
}
