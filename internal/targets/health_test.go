package targets_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	psiMC       = "99-worker-psi"
	baseMC      = "00-worker"
	renderedOld = "rendered-worker-1111"
	renderedNew = "rendered-worker-2222"
	roleLabel   = "machineconfiguration.openshift.io/role"
	poolLabel   = "pools.operator.machineconfiguration.openshift.io/"
)

// pool is a MachineConfigPool as the Machine Config Operator leaves it.
type pool struct {
	name string
	// role is the machineconfiguration.openshift.io/role its machineConfigSelector matches;
	// the pool also carries the label pools.operator.machineconfiguration.openshift.io/<name>.
	role string
	// generation is metadata.generation (1 when 0); observed is status.observedGeneration
	// (generation when 0).
	generation, observed int64
	// target and targetSources are spec.configuration: what the pool rolls out.
	target        string
	targetSources []string
	// current and currentSources are status.configuration: what its machines run.
	current        string
	currentSources []string
	// conditions maps condition types to their status.
	conditions map[string]string
	// updated of machines machines run the current configuration.
	updated, machines int64
}

var updated = map[string]string{"Updated": "True", "Updating": "False", "Degraded": "False"}

func configuration(name string, sources []string) map[string]any {
	src := make([]any, 0, len(sources))
	for _, s := range sources {
		src = append(src, map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": s})
	}
	return map[string]any{"name": name, "source": src}
}

func (p pool) object() *unstructured.Unstructured {
	if p.generation == 0 {
		p.generation = 1
	}
	if p.observed == 0 {
		p.observed = p.generation
	}
	var conditions []any
	for t, s := range p.conditions {
		conditions = append(conditions, map[string]any{"type": t, "status": s, "reason": t + "Reason", "message": "pool is " + t + "=" + s})
	}
	o := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"machineConfigSelector": map[string]any{"matchLabels": map[string]any{roleLabel: p.role}},
			"configuration":         configuration(p.target, p.targetSources),
		},
		"status": map[string]any{
			"configuration":       configuration(p.current, p.currentSources),
			"observedGeneration":  p.observed,
			"conditions":          conditions,
			"machineCount":        p.machines,
			"updatedMachineCount": p.updated,
		},
	}}
	o.SetGroupVersionKind(targets.MachineConfigPool.GVK)
	o.SetName(p.name)
	o.SetGeneration(p.generation)
	o.SetLabels(map[string]string{poolLabel + p.name: ""})
	return o
}

// machineConfig is a MachineConfig of role.
func machineConfig(name, role string) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"kernelArguments": []any{"psi=1"}}}}
	mc.SetGroupVersionKind(targets.MachineConfig.GVK)
	mc.SetName(name)
	mc.SetLabels(map[string]string{roleLabel: role})
	return mc
}

// kubeletConfig is a KubeletConfig whose machineConfigPoolSelector matches labels, with
// the given status conditions (type: status, message).
func kubeletConfig(name string, matchLabels map[string]any, conditions ...map[string]any) *unstructured.Unstructured {
	kc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"machineConfigPoolSelector": map[string]any{"matchLabels": matchLabels},
		"kubeletConfig":             map[string]any{"maxPods": int64(500)},
	}}}
	kc.SetGroupVersionKind(targets.KubeletConfig.GVK)
	kc.SetName(name)
	if len(conditions) > 0 {
		var cs []any
		for _, c := range conditions {
			cs = append(cs, c)
		}
		kc.Object["status"] = map[string]any{"conditions": cs}
	}
	return kc
}

// clusterWith is a cluster holding the objects.
func clusterWith(objects ...*unstructured.Unstructured) *cluster {
	c := clusterOf()
	c.objects = objects
	return c
}

func check(t *testing.T, c *cluster, obj *unstructured.Unstructured, baseline string) targets.Health {
	t.Helper()
	h, err := targets.HealthCheckFor(obj.GroupVersionKind().GroupKind()).Check(context.Background(), c, obj, baseline)
	if err != nil {
		t.Fatalf("check %s: %v", targets.Describe(obj), err)
	}
	return h
}

// A MachineConfig is healthy only when its pool rolled out a configuration rendered after
// the apply that lists it; the baseline is the configuration the pool targeted before.
func TestMachineConfigHealth(t *testing.T) {
	before := "worker=" + renderedOld
	done := pool{name: "worker", role: "worker", generation: 2,
		target: renderedNew, targetSources: []string{baseMC, psiMC},
		current: renderedNew, currentSources: []string{baseMC, psiMC}, conditions: updated, updated: 3, machines: 3}
	cases := []struct {
		name     string
		pools    []pool
		baseline string
		want     targets.HealthState
		message  string
	}{
		{
			name: "when the pool still targets the baseline configuration, it should wait, even if its status lists the MachineConfig and is Updated",
			pools: []pool{{name: "worker", role: "worker", target: renderedOld, targetSources: []string{baseMC},
				current: renderedOld, currentSources: []string{baseMC, psiMC}, conditions: updated, updated: 3, machines: 3}},
			baseline: before,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker has not rendered a configuration with " + psiMC + " yet (still " + renderedOld + ")",
		},
		{
			name: "when the pool rendered and rolled out a configuration without the MachineConfig, it should wait",
			pools: []pool{{name: "worker", role: "worker", generation: 2, target: renderedNew, targetSources: []string{baseMC, "99-worker-other"},
				current: renderedNew, currentSources: []string{baseMC, "99-worker-other"}, conditions: updated, updated: 3, machines: 3}},
			baseline: before,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker has not picked up " + psiMC + " yet",
		},
		{
			name:     "when the pool has not observed its latest spec, it should wait",
			pools:    []pool{func() pool { p := done; p.observed = 1; return p }()},
			baseline: before,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker has not observed its latest spec yet",
		},
		{
			name: "when the pool rolls the new configuration out, it should wait, counting the machines updated",
			pools: []pool{func() pool {
				p := done
				p.conditions = map[string]string{"Updated": "False", "Updating": "True", "Degraded": "False"}
				p.updated = 1
				return p
			}()},
			baseline: before,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker is rolling out " + renderedNew + ": 1/3 machines updated",
		},
		{
			name: "when the pool's machines do not run its target yet, it should wait, even with Updated=True left from before",
			pools: []pool{func() pool {
				p := done
				p.current = renderedOld
				return p
			}()},
			baseline: before,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker is rolling out " + renderedNew + ": 3/3 machines updated",
		},
		{
			name:     "when the pool rendered a new configuration listing the MachineConfig, observed it and is Updated, it should be healthy",
			pools:    []pool{done},
			baseline: before,
			want:     targets.Healthy,
			message:  "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name:     "when the apply changed no spec (no baseline) and the pool runs a configuration listing the MachineConfig, it should be healthy",
			pools:    []pool{done},
			baseline: "",
			want:     targets.Healthy,
			message:  "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name: "when the pool is Degraded, it should be unhealthy, naming the pool and the condition",
			pools: []pool{func() pool {
				p := done
				p.conditions = map[string]string{"Updated": "False", "Updating": "True", "Degraded": "True"}
				return p
			}()},
			baseline: before,
			want:     targets.Unhealthy,
			message:  "MachineConfigPool worker is Degraded (DegradedReason: pool is Degraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name:     "when a node of the pool is degraded, it should be unhealthy",
			pools:    []pool{func() pool { p := done; p.conditions = map[string]string{"NodeDegraded": "True"}; return p }()},
			baseline: before,
			want:     targets.Unhealthy,
			message:  "MachineConfigPool worker is NodeDegraded (NodeDegradedReason: pool is NodeDegraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name:     "when the pool cannot render, it should be unhealthy",
			pools:    []pool{func() pool { p := done; p.conditions = map[string]string{"RenderDegraded": "True"}; return p }()},
			baseline: before,
			want:     targets.Unhealthy,
			message:  "MachineConfigPool worker is RenderDegraded (RenderDegradedReason: pool is RenderDegraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name: "when two pools roll it out and one is done, it should wait for the other",
			pools: []pool{done, {name: "worker-gpu", role: "worker", generation: 2, target: "rendered-worker-gpu-2", targetSources: []string{baseMC, psiMC},
				current: "rendered-worker-gpu-2", currentSources: []string{baseMC, psiMC},
				conditions: map[string]string{"Updated": "False", "Updating": "True"}, updated: 0, machines: 2}},
			baseline: before + ",worker-gpu=rendered-worker-gpu-1",
			want:     targets.Waiting,
			message:  "MachineConfigPool worker-gpu is rolling out rendered-worker-gpu-2: 0/2 machines updated",
		},
		{
			name:     "when no pool selects the MachineConfig, it should be unhealthy, naming its labels",
			pools:    []pool{{name: "master", role: "master", target: "rendered-master-1", current: "rendered-master-1", conditions: updated}},
			baseline: "",
			want:     targets.Unhealthy,
			message: "no MachineConfigPool selects MachineConfig " + psiMC + " (labels " + roleLabel +
				"=worker): create the pool or fix the machineconfiguration.openshift.io/role label",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterWith()
			for _, p := range tc.pools {
				c.objects = append(c.objects, p.object())
			}
			h := check(t, c, machineConfig(psiMC, "worker"), tc.baseline)
			g.Expect(h).To(Equal(targets.Health{State: tc.want, Message: tc.message}))
		})
	}
}

func TestMachineConfigHealthOnAClusterWithoutMachineConfigPools(t *testing.T) {
	g := NewWithT(t)
	c := clusterWith()
	c.notServed["MachineConfigPool"] = true
	h := check(t, c, machineConfig(psiMC, "worker"), "")
	g.Expect(h.State).To(Equal(targets.Unhealthy))
	g.Expect(h.Message).To(Equal("the cluster serves no MachineConfigPools, so nothing rolls out MachineConfig " + psiMC +
		": install the Machine Config Operator (OpenShift)"))
}

// A KubeletConfig rolls out to the pools its machineConfigPoolSelector selects; its own
// Failure condition says when the Machine Config Operator cannot render it.
func TestKubeletConfigHealth(t *testing.T) {
	worker := pool{name: "worker", role: "worker", generation: 2, target: renderedNew, current: renderedNew, conditions: updated, updated: 3, machines: 3}
	selectsWorker := map[string]any{poolLabel + "worker": ""}
	cases := []struct {
		name     string
		kc       *unstructured.Unstructured
		baseline string
		want     targets.HealthState
		message  string
	}{
		{
			name:     "when the selected pool rolled out a configuration rendered after the apply, it should be healthy",
			kc:       kubeletConfig("kc", selectsWorker),
			baseline: "worker=" + renderedOld,
			want:     targets.Healthy,
			message:  "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name:     "when the selected pool still targets the baseline configuration, it should wait, naming the KubeletConfig",
			kc:       kubeletConfig("kc", selectsWorker),
			baseline: "worker=" + renderedNew,
			want:     targets.Waiting,
			message:  "MachineConfigPool worker has not rendered a configuration with KubeletConfig kc yet (still " + renderedNew + ")",
		},
		{
			name: "when the Machine Config Operator reports a Failure on it (status False, as it writes it), it should be unhealthy with that message",
			kc: kubeletConfig("kc", selectsWorker, map[string]any{"type": "Success", "status": "True", "message": "Success"},
				map[string]any{"type": "Failure", "status": "False", "message": "Error: invalid kubelet configuration: maxPods"}),
			baseline: "worker=" + renderedOld,
			want:     targets.Unhealthy,
			message:  "the Machine Config Operator cannot render KubeletConfig kc: Error: invalid kubelet configuration: maxPods",
		},
		{
			name:     "when its selector matches no pool, it should be unhealthy, naming the selector",
			kc:       kubeletConfig("kc", map[string]any{poolLabel + "infra": ""}),
			baseline: "",
			want:     targets.Unhealthy,
			message:  "no MachineConfigPool matches the machineConfigPoolSelector map[matchLabels:map[" + poolLabel + "infra:]] of KubeletConfig kc: label the pool or fix the selector",
		},
		{
			name:     "when its selector is empty, it should select no pool",
			kc:       kubeletConfig("kc", map[string]any{}),
			baseline: "",
			want:     targets.Unhealthy,
			message:  "no MachineConfigPool matches the machineConfigPoolSelector map[matchLabels:map[]] of KubeletConfig kc: label the pool or fix the selector",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterWith(worker.object(), tc.kc)
			h := check(t, c, tc.kc, tc.baseline)
			g.Expect(h).To(Equal(targets.Health{State: tc.want, Message: tc.message}))
		})
	}
}

func TestKindsWithoutRolloutAreHealthyOnceApplied(t *testing.T) {
	for _, k := range []targets.Kind{targets.KubeDescheduler, targets.HyperConverged, targets.NodeHealthCheck, targets.MetalLB} {
		t.Run(k.GVK.Kind, func(t *testing.T) {
			g := NewWithT(t)
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(k.GVK)
			obj.SetName("x")
			if k.Namespaced {
				obj.SetNamespace("ns")
			}
			check := targets.HealthCheckFor(k.GroupKind())
			baseline, err := check.Baseline(context.Background(), clusterWith(), obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(baseline).To(BeEmpty(), "nothing rolls out")
			h, err := check.Check(context.Background(), clusterWith(), obj, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h).To(Equal(targets.Health{State: targets.Healthy, Message: targets.Describe(obj) + " applied"}))
			g.Expect(targets.RollsOut(k.GroupKind())).To(BeFalse())
		})
	}
	g := NewWithT(t)
	g.Expect(targets.RollsOut(targets.MachineConfig.GroupKind())).To(BeTrue())
	g.Expect(targets.RollsOut(targets.KubeletConfig.GroupKind())).To(BeTrue())
}

// The baseline is what each pool that rolls the object out targets just before the apply.
func TestHealthBaseline(t *testing.T) {
	worker := pool{name: "worker", role: "worker", target: renderedOld, current: renderedOld, conditions: updated}
	gpu := pool{name: "worker-gpu", role: "worker", target: "rendered-worker-gpu-1", current: "rendered-worker-gpu-1", conditions: updated}
	master := pool{name: "master", role: "master", target: "rendered-master-1", current: "rendered-master-1", conditions: updated}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"when two pools select the MachineConfig, it should name each pool's target, by pool name",
			machineConfig(psiMC, "worker"), "worker=" + renderedOld + ",worker-gpu=rendered-worker-gpu-1"},
		{"when a KubeletConfig selects a pool by its pools.operator label, it should name that pool's target",
			kubeletConfig("kc", map[string]any{poolLabel + "worker-gpu": ""}), "worker-gpu=rendered-worker-gpu-1"},
		{"when no pool selects the MachineConfig, it should be empty",
			machineConfig(psiMC, "infra"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterWith(worker.object(), gpu.object(), master.object())
			got, err := targets.HealthCheckFor(tc.obj.GroupVersionKind().GroupKind()).Baseline(context.Background(), c, tc.obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestAwaitingRender(t *testing.T) {
	descheduler := &unstructured.Unstructured{}
	descheduler.SetGroupVersionKind(targets.KubeDescheduler.GVK)
	cases := []struct {
		name     string
		obj      *unstructured.Unstructured
		baseline string
		want     string
		ok       bool
	}{
		{"when the baseline names a pool's configuration, it should say the pool has not rendered the MachineConfig yet",
			machineConfig(psiMC, "worker"), "worker=" + renderedOld,
			"MachineConfigPool worker has not rendered a configuration with " + psiMC + " yet (still " + renderedOld + ")", true},
		{"when the baseline names two pools, it should name both, sorted",
			kubeletConfig("kc", nil), "worker=b,master=a",
			"MachineConfigPool master has not rendered a configuration with KubeletConfig kc yet (still a); " +
				"MachineConfigPool worker has not rendered a configuration with KubeletConfig kc yet (still b)", true},
		{"when there is no baseline, it should say nothing", machineConfig(psiMC, "worker"), "", "", false},
		{"when a pool of the baseline had no configuration, it should say nothing", machineConfig(psiMC, "worker"), "worker=", "", false},
		{"when the kind rolls nothing out, it should say nothing", descheduler, "worker=" + renderedOld, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := targets.AwaitingRender(tc.obj, tc.baseline)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
