package targets_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// withSources sets the MachineConfigs a pool's target and current configurations were
// rendered from.
func withSources(pool *unstructured.Unstructured, spec, status []string) *unstructured.Unstructured {
	list := func(names []string) []any {
		out := make([]any, 0, len(names))
		for _, n := range names {
			out = append(out, map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": n})
		}
		return out
	}
	_ = unstructured.SetNestedSlice(pool.Object, list(spec), "spec", "configuration", "source")
	_ = unstructured.SetNestedSlice(pool.Object, list(status), "status", "configuration", "source")
	return pool
}

// A deleted MachineConfig has taken effect once every pool that selected it runs, on all its
// machines, a configuration rendered without it; until then the check waits, and a degraded
// pool fails it.
func TestRemovalOfAMachineConfig(t *testing.T) {
	deleted := machineConfig(psiMC, "worker", psi())
	cases := []struct {
		name  string
		pool  *unstructured.Unstructured
		state targets.HealthState
	}{
		{"still rendered from it", withSources(pool{name: "worker", role: "worker", target: renderedNew, current: renderedNew,
			conditions: updated, updated: 3, machines: 3}.object(), []string{"00-worker", psiMC}, []string{"00-worker", psiMC}),
			targets.Waiting},
		{"rendered without it, rolling out", withSources(pool{name: "worker", role: "worker", target: renderedOld, current: renderedNew,
			conditions: map[string]string{"Updated": "False", "Updating": "True"}, updated: 1, machines: 3}.object(),
			[]string{"00-worker"}, []string{"00-worker", psiMC}), targets.Waiting},
		{"rolled out without it", withSources(pool{name: "worker", role: "worker", target: renderedOld, current: renderedOld,
			conditions: updated, updated: 3, machines: 3}.object(), []string{"00-worker"}, []string{"00-worker"}), targets.Healthy},
		{"degraded", withSources(pool{name: "worker", role: "worker", target: renderedOld, current: renderedNew,
			conditions: map[string]string{"Degraded": "True"}, updated: 1, machines: 3}.object(), []string{"00-worker"}, nil),
			targets.Unhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apiServer(t)
			create(t, c, tc.pool)
			h, err := targets.RemovalCheck(context.Background(), c, deleted)
			if err != nil {
				t.Fatal(err)
			}
			if h.State != tc.state {
				t.Fatalf("state %s (%s), want %s", h.State, h.Message, tc.state)
			}
		})
	}
}

// An object that still exists is being deleted: the check waits for it to go.
func TestRemovalWaitsForTheObjectToGo(t *testing.T) {
	c := apiServer(t)
	mc := machineConfig(psiMC, "worker", psi())
	create(t, c, mc)
	h, err := targets.RemovalCheck(context.Background(), c, mc)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != targets.Waiting {
		t.Fatalf("state %s (%s), want Waiting", h.State, h.Message)
	}
}
