package targets_test

import (
	"context"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	psiMC       = "99-worker-psi"
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
	// target is spec.configuration.name: what the pool rolls out; current is
	// status.configuration.name: what its machines run.
	target, current string
	// paused is spec.paused.
	paused bool
	// behind leaves status.observedGeneration one short of the pool's generation.
	behind bool
	// conditions maps condition types to their status.
	conditions map[string]string
	// reasonless leaves the conditions' reasons empty, as the Machine Config Operator
	// leaves that of Degraded.
	reasonless bool
	// updated of machines machines run the current configuration.
	updated, machines int64
}

var updated = map[string]string{"Updated": "True", "Updating": "False", "Degraded": "False"}

func (p pool) object() *unstructured.Unstructured {
	var conditions []any
	for t, s := range p.conditions {
		reason := t + "Reason"
		if p.reasonless {
			reason = ""
		}
		conditions = append(conditions, map[string]any{"type": t, "status": s, "reason": reason, "message": "pool is " + t + "=" + s,
			"lastTransitionTime": "2025-01-15T10:00:00Z"})
	}
	observed := int64(1) // a pool's generation when it was just created
	if p.behind {
		observed = 0
	}
	o := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"machineConfigSelector": map[string]any{"matchLabels": map[string]any{roleLabel: p.role}},
			"configuration":         map[string]any{"name": p.target},
			"paused":                p.paused,
		},
		"status": map[string]any{
			"configuration":       map[string]any{"name": p.current},
			"observedGeneration":  observed,
			"conditions":          conditions,
			"machineCount":        p.machines,
			"updatedMachineCount": p.updated,
		},
	}}
	o.SetGroupVersionKind(targets.MachineConfigPool.GVK)
	o.SetName(p.name)
	o.SetLabels(map[string]string{poolLabel + p.name: ""})
	return o
}

// machineConfig is a MachineConfig of role with the given spec.
func machineConfig(name, role string, spec map[string]any) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	mc.SetGroupVersionKind(targets.MachineConfig.GVK)
	mc.SetName(name)
	if role != "" {
		mc.SetLabels(map[string]string{roleLabel: role})
	}
	return mc
}

// psi is the spec of the MachineConfig that turns PSI on.
func psi() map[string]any {
	return map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}, "kernelArguments": []any{"psi=1"}}
}

// rendered is a rendered MachineConfig with the kernel arguments and files (path, contents)
// given, as the Machine Config Operator renders it: Ignition 3.5, kernel type default, the
// files' contents in percent-encoded data URLs.
func rendered(name string, kernelArguments []string, files ...string) *unstructured.Unstructured {
	var fileList []any
	for i := 0; i+1 < len(files); i += 2 {
		fileList = append(fileList, map[string]any{"path": files[i], "mode": int64(420), "overwrite": true,
			"contents": map[string]any{"source": "data:," + url.PathEscape(files[i+1])}})
	}
	args := make([]any, 0, len(kernelArguments))
	for _, a := range kernelArguments {
		args = append(args, a)
	}
	return machineConfig(name, "", map[string]any{
		"config": map[string]any{
			"ignition": map[string]any{"version": "3.5.0"},
			"storage":  map[string]any{"files": fileList},
		},
		"kernelArguments": args,
		"kernelType":      "default",
		"osImageURL":      "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111",
	})
}

func check(t *testing.T, c client.Client, obj *unstructured.Unstructured) targets.Health {
	t.Helper()
	h, err := targets.HealthCheckFor(obj.GroupVersionKind().GroupKind()).Check(context.Background(), c, obj)
	if err != nil {
		t.Fatalf("check %s: %v", targets.Describe(obj), err)
	}
	return h
}

// A MachineConfig is healthy only when every pool that selects it runs, on all its machines,
// a rendered configuration that holds its content; what the pool ran before the apply does
// not matter.
func TestMachineConfigHealth(t *testing.T) {
	c := apiServer(t)
	create(t, c, rendered(renderedOld, nil))
	create(t, c, rendered(renderedNew, []string{"psi=1"}))
	create(t, c, rendered("rendered-worker-gpu-2", []string{"psi=1"}))
	done := pool{name: "worker", role: "worker", target: renderedNew, current: renderedNew, conditions: updated, updated: 3, machines: 3}
	lacksPSI := "MachineConfigPool worker runs " + renderedOld + ", which lacks kernel argument psi=1 of MachineConfig " + psiMC
	cases := []struct {
		name    string
		pools   []pool
		want    targets.HealthState
		message string
	}{
		{
			name:    "when the pool still runs a configuration without the MachineConfig's content, it should wait, saying what it lacks",
			pools:   []pool{{name: "worker", role: "worker", target: renderedOld, current: renderedOld, conditions: updated, updated: 3, machines: 3}},
			want:    targets.Waiting,
			message: lacksPSI,
		},
		{
			name:    "when nothing was read before the apply and the pool runs a configuration without the content, it should wait just the same",
			pools:   []pool{{name: "worker", role: "worker", target: renderedOld, current: renderedOld, conditions: updated, updated: 3, machines: 3}},
			want:    targets.Waiting,
			message: lacksPSI,
		},
		{
			name:    "when the pool has not observed its latest spec, it should wait",
			pools:   []pool{func() pool { p := done; p.behind = true; return p }()},
			want:    targets.Waiting,
			message: "MachineConfigPool worker has not observed its latest spec yet",
		},
		{
			name: "when the pool rolls the new configuration out, it should wait, counting the machines updated",
			pools: []pool{func() pool {
				p := done
				p.current = renderedOld
				p.conditions = map[string]string{"Updated": "False", "Updating": "True", "Degraded": "False"}
				p.updated = 1
				return p
			}()},
			want:    targets.Waiting,
			message: "MachineConfigPool worker is rolling out " + renderedNew + ": 1/3 machines updated",
		},
		{
			name:    "when the pool's machines do not run its target yet, it should wait, even with Updated=True left from before",
			pools:   []pool{func() pool { p := done; p.current = renderedOld; return p }()},
			want:    targets.Waiting,
			message: "MachineConfigPool worker is rolling out " + renderedNew + ": 3/3 machines updated",
		},
		{
			name:    "when fewer machines are updated than the pool counts, it should wait",
			pools:   []pool{func() pool { p := done; p.updated = 2; return p }()},
			want:    targets.Waiting,
			message: "MachineConfigPool worker is rolling out " + renderedNew + ": 2/3 machines updated",
		},
		{
			name:    "when the pool runs a configuration holding the content on every machine and is Updated, it should be healthy",
			pools:   []pool{done},
			want:    targets.Healthy,
			message: "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name:    "when the pool runs, under the name it ran before, a configuration that holds the content (a correction restored it), it should be healthy",
			pools:   []pool{done},
			want:    targets.Healthy,
			message: "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name:    "when the pool runs a rendered configuration that does not exist, it should wait",
			pools:   []pool{{name: "worker", role: "worker", target: "rendered-worker-gone", current: "rendered-worker-gone", conditions: updated, updated: 3, machines: 3}},
			want:    targets.Waiting,
			message: "MachineConfigPool worker runs rendered-worker-gone, a MachineConfig that does not exist",
		},
		{
			name: "when the pool is paused on a configuration without the content, it should wait, saying the pool is paused",
			pools: []pool{{name: "worker", role: "worker", paused: true, target: renderedNew, current: renderedOld,
				conditions: map[string]string{"Updated": "False", "Updating": "False"}, updated: 0, machines: 3}},
			want: targets.Waiting,
			message: "MachineConfigPool worker is paused and runs " + renderedOld + ", which lacks kernel argument psi=1 of MachineConfig " + psiMC +
				": nothing rolls out until the pool is unpaused",
		},
		{
			name:    "when the pool is paused but runs a configuration holding the content on every machine, it should be healthy",
			pools:   []pool{func() pool { p := done; p.paused = true; return p }()},
			want:    targets.Healthy,
			message: "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines)",
		},
		{
			name: "when the pool is Degraded, it should be unhealthy, naming the pool and the condition",
			pools: []pool{func() pool {
				p := done
				p.conditions = map[string]string{"Updated": "False", "Updating": "True", "Degraded": "True"}
				return p
			}()},
			want:    targets.Unhealthy,
			message: "MachineConfigPool worker is Degraded (DegradedReason: pool is Degraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name: "when the pool is Degraded without a reason, as the Machine Config Operator sets it, it should be unhealthy, giving the condition's message alone",
			pools: []pool{func() pool {
				p := done
				p.conditions = map[string]string{"Updated": "False", "Updating": "True", "Degraded": "True"}
				p.reasonless = true
				return p
			}()},
			want:    targets.Unhealthy,
			message: "MachineConfigPool worker is Degraded: pool is Degraded=True: repair the pool's nodes, then approve the plan again",
		},
		{
			name:    "when a node of the pool is degraded, it should be unhealthy",
			pools:   []pool{func() pool { p := done; p.conditions = map[string]string{"NodeDegraded": "True"}; return p }()},
			want:    targets.Unhealthy,
			message: "MachineConfigPool worker is NodeDegraded (NodeDegradedReason: pool is NodeDegraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name:    "when the pool cannot render, it should be unhealthy",
			pools:   []pool{func() pool { p := done; p.conditions = map[string]string{"RenderDegraded": "True"}; return p }()},
			want:    targets.Unhealthy,
			message: "MachineConfigPool worker is RenderDegraded (RenderDegradedReason: pool is RenderDegraded=True): repair the pool's nodes, then approve the plan again",
		},
		{
			name: "when two pools roll it out and one is done, it should wait for the other",
			pools: []pool{done, {name: "worker-gpu", role: "worker", target: "rendered-worker-gpu-2", current: "rendered-worker-gpu-1",
				conditions: map[string]string{"Updated": "False", "Updating": "True"}, updated: 0, machines: 2}},
			want:    targets.Waiting,
			message: "MachineConfigPool worker-gpu is rolling out rendered-worker-gpu-2: 0/2 machines updated",
		},
		{
			name:    "when two pools roll it out and both are done, it should be healthy, naming both",
			pools:   []pool{done, {name: "worker-gpu", role: "worker", target: "rendered-worker-gpu-2", current: "rendered-worker-gpu-2", conditions: updated, updated: 2, machines: 2}},
			want:    targets.Healthy,
			message: "MachineConfigPool worker updated to " + renderedNew + " (3/3 machines); MachineConfigPool worker-gpu updated to rendered-worker-gpu-2 (2/2 machines)",
		},
		{
			name:  "when no pool selects the MachineConfig, it should be unhealthy, naming its labels",
			pools: []pool{{name: "master", role: "master", target: "rendered-master-1", current: "rendered-master-1", conditions: updated}},
			want:  targets.Unhealthy,
			message: "no MachineConfigPool selects MachineConfig " + psiMC + " (labels " + roleLabel +
				"=worker): create the pool or fix the machineconfiguration.openshift.io/role label",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, p := range tc.pools {
				create(t, c, p.object())
			}
			h := check(t, c, machineConfig(psiMC, "worker", psi()))
			g.Expect(h).To(Equal(targets.Health{State: tc.want, Message: tc.message}))
		})
	}
}

// The content is compared as a node sees it: a file is the same whatever data URL encodes
// it, and a file of the MachineConfig that another MachineConfig overrides in the rendered
// configuration is not there.
func TestMachineConfigHealthComparesFileContents(t *testing.T) {
	c := apiServer(t)
	swap := machineConfig("90-worker-swap", "worker", map[string]any{"config": map[string]any{
		"ignition": map[string]any{"version": "3.2.0"},
		"storage": map[string]any{"files": []any{map[string]any{"path": "/etc/swap.conf", "mode": int64(420),
			"contents": map[string]any{"source": "data:text/plain;charset=utf-8;base64,c3dhcD1vbgo="}}}},
	}})
	cases := []struct {
		name     string
		rendered *unstructured.Unstructured
		want     targets.Health
	}{
		{"when the rendered configuration holds the file's contents encoded otherwise, it should be healthy",
			rendered("rendered-worker-3333", nil, "/etc/swap.conf", "swap=on\n"),
			targets.Health{State: targets.Healthy, Message: "MachineConfigPool worker updated to rendered-worker-3333 (3/3 machines)"}},
		{"when the rendered configuration holds other contents at the file's path, it should wait, naming the file",
			rendered("rendered-worker-3333", nil, "/etc/swap.conf", "swap=off\n"),
			targets.Health{State: targets.Waiting, Message: "MachineConfigPool worker runs rendered-worker-3333, which lacks file /etc/swap.conf (different contents) of MachineConfig 90-worker-swap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			create(t, c, tc.rendered)
			create(t, c, pool{name: "worker", role: "worker", target: "rendered-worker-3333", current: "rendered-worker-3333", conditions: updated, updated: 3, machines: 3}.object())
			g.Expect(check(t, c, swap)).To(Equal(tc.want))
		})
	}
}

func TestMachineConfigHealthOnAClusterWithoutMachineConfigPools(t *testing.T) {
	g := NewWithT(t)
	c := clusterOf()
	c.notServed["MachineConfigPool"] = true
	h, err := targets.HealthCheckFor(targets.MachineConfig.GroupKind()).Check(context.Background(), c, machineConfig(psiMC, "worker", psi()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.State).To(Equal(targets.Unhealthy))
	g.Expect(h.Message).To(Equal("the cluster serves no MachineConfigPools, so nothing rolls out MachineConfig " + psiMC +
		": install the Machine Config Operator (OpenShift)"))
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
			h, err := check.Check(context.Background(), clusterOf(), obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h).To(Equal(targets.Health{State: targets.Healthy, Message: targets.Describe(obj) + " applied"}))
			g.Expect(targets.RollsOut(k.GroupKind())).To(BeFalse())
		})
	}
	g := NewWithT(t)
	g.Expect(targets.RollsOut(targets.MachineConfig.GroupKind())).To(BeTrue())
	g.Expect(targets.RollsOut(targets.KubeletConfig.GroupKind())).To(BeTrue())
}
