package faults

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

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The pool simulator's delays: short, so that the roll-out of each spec's reset takes seconds.
const (
	poolRenderDelay = time.Second
	poolRebootTime  = 500 * time.Millisecond
)

var poolGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}

// startPoolSimulator runs the pool simulator, which plays the Machine Config Operator on the
// control plane of cfg, until the returned stop is called; it appends to the log logPath.
func startPoolSimulator(cfg *rest.Config, logPath string) (sim *poolsim.Simulator, stop func()) {
	GinkgoHelper()
	// The simulator's informers log through controller-runtime; what the simulator does is
	// in its own log.
	ctrllog.SetLogger(logr.Discard())
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	Expect(err).NotTo(HaveOccurred())
	sim, err = poolsim.New(cfg, poolsim.Options{RenderDelay: poolRenderDelay, RebootTime: poolRebootTime, Out: log})
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Start(runCtx) }()
	return sim, func() {
		GinkgoHelper()
		cancel()
		Eventually(done).Should(Receive(BeNil()), "the pool simulator stops")
		Expect(log.Close()).To(Succeed())
	}
}

// workerPoolRolledOut tells, with an error that says why not, whether the worker pool runs,
// on every node, the configuration rendered from the MachineConfigs that select it now.
func workerPoolRolledOut() error {
	pool := testenv.Read(ctx, k8s, poolGVK, objectKey("worker"))
	if pool == nil {
		return fmt.Errorf("there is no MachineConfigPool worker")
	}
	configs := &unstructured.UnstructuredList{}
	configs.SetGroupVersionKind(mcGVK.GroupVersion().WithKind("MachineConfigList"))
	if err := k8s.List(ctx, configs, client.MatchingLabels{"machineconfiguration.openshift.io/role": "worker"}); err != nil {
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
