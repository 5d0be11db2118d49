package plan_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

const (
	psiMC        = "99-worker-psi-health"
	renderedOld  = "rendered-worker-1111"
	renderedNew  = "rendered-worker-2222"
	baseMC       = "00-worker"
	roleLabelKey = "machineconfiguration.openshift.io/role"
)

// pool is a MachineConfigPool named name that selects the MachineConfigs of role and
// targets the rendered configuration built from sources.
func pool(name, role, rendered string, sources ...string) *unstructured.Unstructured {
	p := object(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: ` + name + `
spec:
  machineConfigSelector:
    matchLabels:
      ` + roleLabelKey + `: ` + role + `
`)
	Expect(unstructured.SetNestedField(p.Object, configuration(rendered, sources...), "spec", "configuration")).To(Succeed())
	return p
}

func configuration(rendered string, sources ...string) map[string]any {
	src := make([]any, 0, len(sources))
	for _, s := range sources {
		src = append(src, map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": s})
	}
	return map[string]any{"name": rendered, "source": src}
}

// poolStatus is what the Machine Config Operator reports on a pool.
type poolStatus struct {
	// rendered and sources are status.configuration.
	rendered string
	sources  []string
	// observedGeneration; 0 means the pool's current generation.
	observedGeneration int64
	// conditions maps condition types to their status.
	conditions map[string]string
	// updated of machines machines run the current configuration.
	updated, machines int64
}

// report writes status to the pool's status subresource, as the Machine Config Operator
// does.
func report(p *unstructured.Unstructured, s poolStatus) {
	current := live(p)
	if s.observedGeneration == 0 {
		s.observedGeneration = current.GetGeneration()
	}
	var conditions []any
	for t, st := range s.conditions {
		conditions = append(conditions, map[string]any{
			"type": t, "status": st, "reason": t + "Reason", "message": "pool is " + t + "=" + st,
			"lastTransitionTime": "2025-01-15T10:00:00Z",
		})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"configuration":       configuration(s.rendered, s.sources...),
		"observedGeneration":  s.observedGeneration,
		"conditions":          conditions,
		"machineCount":        s.machines,
		"updatedMachineCount": s.updated,
		"readyMachineCount":   s.updated,
	}})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Status().Patch(ctx, current, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// render points the pool's spec at a new rendered configuration, as the Machine Config
// Operator does when a MachineConfig of its role changes; the generation goes up.
func render(p *unstructured.Unstructured, rendered string, sources ...string) {
	current := live(p)
	generation := current.GetGeneration()
	Expect(unstructured.SetNestedField(current.Object, configuration(rendered, sources...), "spec", "configuration")).To(Succeed())
	Expect(k8sClient.Update(ctx, current)).To(Succeed())
	Expect(current.GetGeneration()).To(BeNumerically(">", generation))
}

var updatedTrue = map[string]string{"Updated": "True", "Updating": "False", "Degraded": "False"}

// renderedConfig is the rendered MachineConfig the Machine Config Operator would have made
// of MachineConfigs adding kernelArguments, as the pool's status names it.
func renderedConfig(name string, kernelArguments ...any) *unstructured.Unstructured {
	mc := object(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + name + `
spec:
  config:
    ignition:
      version: 3.5.0
  kernelType: default
`)
	Expect(unstructured.SetNestedSlice(mc.Object, kernelArguments, "spec", "kernelArguments")).To(Succeed())
	return mc
}

// The engine's side of health: the baseline recorded before the apply, waitTimeout, and an
// apply that changes no spec. What each health check makes of a pool's state is the table
// tests of internal/targets (health_test.go): a rollout is judged by what the rendered
// configuration the pool runs holds, so the rendered MachineConfigs exist here too.
var _ = Describe("Engine.CheckHealth", func() {
	var (
		worker    *unstructured.Unstructured
		item      advisorv1alpha1.PlanItem
		appliedAt time.Time
	)

	check := func(timeout time.Duration, now time.Time) plan.Health {
		h, err := engine.CheckHealth(ctx, item, appliedAt, timeout, now)
		Expect(err).NotTo(HaveOccurred())
		return h
	}
	checkNow := func() plan.Health { return check(0, appliedAt.Add(time.Minute)) }

	// Before each spec: a worker pool that is fully updated to its old configuration (which
	// lacks psi=1), the new one rendered with the PSI MachineConfig, and the PSI
	// MachineConfig applied through the engine, which records the baseline.
	BeforeEach(func() {
		for _, r := range []*unstructured.Unstructured{renderedConfig(renderedOld), renderedConfig(renderedNew, "psi=1")} {
			Expect(k8sClient.Create(ctx, r)).To(Succeed())
			cleanUp(r)
		}
		worker = pool("worker", "worker", renderedOld, baseMC)
		Expect(k8sClient.Create(ctx, worker)).To(Succeed())
		cleanUp(worker)
		report(worker, poolStatus{rendered: renderedOld, sources: []string{baseMC}, conditions: updatedTrue, updated: 3, machines: 3})

		mc := psiItem(psiMC)
		cleanUp(mc.Desired)
		item = draftOne(mc)
		out, err := apply(engine, item, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Applied).To(BeTrue())
		Expect(out.SpecChanged).To(BeTrue())
		appliedAt = time.Now()
	})

	It("is Healthy once the pool runs, on every machine, a rendered configuration holding the MachineConfig's content, observed its spec and is Updated", func() {
		render(worker, renderedNew, baseMC, psiMC)
		report(worker, poolStatus{rendered: renderedNew, sources: []string{baseMC, psiMC}, conditions: updatedTrue, updated: 3, machines: 3})

		h := checkNow()

		Expect(h.State).To(Equal(plan.Healthy))
		Expect(h.Message).To(Equal("MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)"))
	})

	It("keeps Waiting, saying what the configuration the pool runs lacks, until the pool runs one that holds the MachineConfig's content", func() {
		h := checkNow()

		Expect(h.State).To(Equal(plan.Waiting))
		Expect(h.Message).To(Equal("MachineConfigPool worker runs " + renderedOld + ", which lacks kernel argument psi=1 of MachineConfig " + psiMC))
	})

	It("is Healthy when the pool runs a configuration that holds the content under the name it ran before, as after a correction", func() {
		render(worker, renderedNew, baseMC, psiMC)
		report(worker, poolStatus{rendered: renderedNew, sources: []string{baseMC, psiMC}, conditions: updatedTrue, updated: 3, machines: 3})

		h := checkNow()

		Expect(h.State).To(Equal(plan.Healthy))
		Expect(h.Message).To(Equal("MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)"))
	})

	It("is Unhealthy when still waiting after waitTimeout has passed since the apply", func() {
		timeout := 30 * time.Minute

		Expect(check(timeout, appliedAt.Add(29*time.Minute)).State).To(Equal(plan.Waiting), "within waitTimeout")

		h := check(timeout, appliedAt.Add(31*time.Minute))
		Expect(h.State).To(Equal(plan.Unhealthy))
		Expect(h.Message).To(ContainSubstring("waitTimeout 30m0s"))
		Expect(h.Message).To(ContainSubstring("MachineConfigPool worker"))
	})

	It("keeps Waiting without a waitTimeout, however long it takes", func() {
		Expect(check(0, appliedAt.Add(1000*time.Hour)).State).To(Equal(plan.Waiting))
	})

	It("is Healthy at once when the apply only adds the ownership marks to a MachineConfig already rolled out", func() {
		const adopted = "99-worker-psi-adopted"
		createAsOtherManager(machineConfig(adopted, "worker"))
		render(worker, renderedNew, baseMC, psiMC, adopted)
		report(worker, poolStatus{rendered: renderedNew, sources: []string{baseMC, psiMC, adopted}, conditions: updatedTrue, updated: 3, machines: 3})

		pi := draftOne(psiItem(adopted))
		_, added := changedLines(pi.Diff)
		Expect(added).To(ConsistOf(
			"+    advisor.kubevirt.io/managed-by: virt-advisor-operator",
		), "only the marks change (the profile's annotation is in no comparison):\n%s", pi.Diff)

		out, err := apply(engine, pi, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Applied).To(BeTrue())
		Expect(out.SpecChanged).To(BeFalse(), "no new configuration will be rendered, so there is nothing to wait for")

		h, err := engine.CheckHealth(ctx, pi, appliedAt, time.Hour, appliedAt.Add(time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(h.State).To(Equal(plan.Healthy))
	})
})
