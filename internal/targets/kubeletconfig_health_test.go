package targets_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	renderedKubelet  = "rendered-worker-5555"
	generatedKubelet = "99-worker-generated-kubelet"
	suffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"
	kubeletConfFile  = "/etc/kubernetes/kubelet.conf"
	kubeletConf      = "maxPods: 500"
)

// kubeletConfig is a KubeletConfig whose machineConfigPoolSelector matches labels.
func kubeletConfig(name string, matchLabels map[string]any) *unstructured.Unstructured {
	kc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"machineConfigPoolSelector": map[string]any{"matchLabels": matchLabels},
		"kubeletConfig":             map[string]any{"maxPods": int64(500)},
	}}}
	kc.SetGroupVersionKind(targets.KubeletConfig.GVK)
	kc.SetName(name)
	return kc
}

// handled is the status the Machine Config Operator's kubelet-config controller writes:
// observedGeneration and the conditions of its passes, the last one last.
func handled(observedGeneration int64, conditions ...string) map[string]any {
	var cs []any
	for _, c := range conditions {
		status, message := "True", "Success"
		if c == "Failure" {
			status, message = "False", "Error: KubeletConfiguration: cgroupDriver is not allowed to be set"
		}
		cs = append(cs, map[string]any{"type": c, "status": status, "message": message, "lastTransitionTime": "2025-01-15T10:00:00Z"})
	}
	return map[string]any{"observedGeneration": observedGeneration, "conditions": cs}
}

// generated is the MachineConfig the Machine Config Operator generates from a KubeletConfig
// (owner, nil for none) for the worker pool, holding kubelet.conf.
func generated(name string, owner *unstructured.Unstructured, kubeletConf string) *unstructured.Unstructured {
	mc := rendered(name, nil, kubeletConfFile, kubeletConf)
	mc.SetLabels(map[string]string{roleLabel: "worker"})
	if owner != nil {
		mc.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: owner.GetName(),
			UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}})
	}
	return mc
}

// A KubeletConfig rolls out to the pools its machineConfigPoolSelector selects as the
// MachineConfig the Machine Config Operator generates from it for each pool: it is healthy
// once the operator handled its latest generation and every pool runs a rendered
// configuration holding that MachineConfig's content.
func TestKubeletConfigHealth(t *testing.T) {
	c := apiServer(t)
	selectsWorker := map[string]any{poolLabel + "worker": ""}
	updatedOn := func(rendered string) pool {
		return pool{name: "worker", role: "worker", target: rendered, current: rendered, conditions: updated, updated: 3, machines: 3}
	}
	withSuffix := func(suffix string) func(*unstructured.Unstructured) {
		return func(kc *unstructured.Unstructured) { kc.SetAnnotations(map[string]string{suffixAnnotation: suffix}) }
	}
	other := kubeletConfig("other", selectsWorker)
	other.SetUID(types.UID("3b1f6d8e-0000-4000-8000-000000000000"))
	cases := []struct {
		name string
		// annotate sets the KubeletConfig's annotations before it is created.
		annotate func(*unstructured.Unstructured)
		selector map[string]any
		status   map[string]any
		// generate creates what the operator generated from the KubeletConfig kc.
		generate func(t *testing.T, kc *unstructured.Unstructured)
		pool     pool
		want     targets.Health
	}{
		{
			name:     "when the operator handled it and the pool runs a configuration holding its generated MachineConfig, it should be healthy",
			annotate: withSuffix(""),
			status:   handled(1, "Success"),
			generate: func(t *testing.T, kc *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, kc, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, kubeletConf))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Healthy, Message: "MachineConfigPool worker updated to " + renderedKubelet + " (3/3 machines)"},
		},
		{
			name:     "when the pool runs a configuration with another kubelet configuration, it should wait, naming the file and both objects",
			annotate: withSuffix(""),
			status:   handled(1, "Success"),
			generate: func(t *testing.T, kc *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, kc, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, "maxPods: 250"))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Waiting, Message: "MachineConfigPool worker runs " + renderedKubelet + ", which lacks file " + kubeletConfFile +
				" (different contents) of MachineConfig " + generatedKubelet + " (KubeletConfig kc)"},
		},
		{
			name:     "when its mc-name-suffix annotation is a number, it should judge the MachineConfig named with that suffix",
			annotate: withSuffix("2"),
			status:   handled(1, "Success"),
			generate: func(t *testing.T, kc *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, other, "maxPods: 250"))
				create(t, c, generated(generatedKubelet+"-2", kc, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, kubeletConf))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Healthy, Message: "MachineConfigPool worker updated to " + renderedKubelet + " (3/3 machines)"},
		},
		{
			name:   "when it has no mc-name-suffix annotation, it should find the pool's generated MachineConfig it controls",
			status: handled(1, "Success"),
			generate: func(t *testing.T, kc *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, other, "maxPods: 250"))
				create(t, c, generated(generatedKubelet+"-1", kc, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, kubeletConf))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Healthy, Message: "MachineConfigPool worker updated to " + renderedKubelet + " (3/3 machines)"},
		},
		{
			name:     "when the MachineConfig its annotation names is controlled by another KubeletConfig, it should wait for its own",
			annotate: withSuffix(""),
			status:   handled(1, "Success"),
			generate: func(t *testing.T, _ *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, other, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, kubeletConf))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Waiting, Message: "the Machine Config Operator has not generated the MachineConfig of KubeletConfig kc for MachineConfigPool worker yet"},
		},
		{
			name:   "when no generated MachineConfig is controlled by it, it should wait",
			status: handled(1, "Success"),
			pool:   updatedOn(renderedOld),
			want:   targets.Health{State: targets.Waiting, Message: "the Machine Config Operator has not generated the MachineConfig of KubeletConfig kc for MachineConfigPool worker yet"},
		},
		{
			name:     "when the operator has not handled its generation yet, it should wait, even if a pool already runs the content",
			annotate: withSuffix(""),
			status:   handled(0, "Success"),
			generate: func(t *testing.T, kc *unstructured.Unstructured) {
				create(t, c, generated(generatedKubelet, kc, kubeletConf))
				create(t, c, rendered(renderedKubelet, nil, kubeletConfFile, kubeletConf))
			},
			pool: updatedOn(renderedKubelet),
			want: targets.Health{State: targets.Waiting, Message: "the Machine Config Operator has not processed KubeletConfig kc's generation 1 yet"},
		},
		{
			name: "when it has no status at all, it should wait",
			pool: updatedOn(renderedOld),
			want: targets.Health{State: targets.Waiting, Message: "the Machine Config Operator has not processed KubeletConfig kc's generation 1 yet"},
		},
		{
			name:   "when the Machine Config Operator reports a Failure on it (status False, as it writes it), it should be unhealthy with that message",
			status: handled(1, "Success", "Failure"),
			pool:   updatedOn(renderedOld),
			want: targets.Health{State: targets.Unhealthy,
				Message: "the Machine Config Operator cannot render KubeletConfig kc: Error: KubeletConfiguration: cgroupDriver is not allowed to be set"},
		},
		{
			name:     "when the pool is Degraded, it should be unhealthy",
			annotate: withSuffix(""),
			status:   handled(1, "Success"),
			pool: func() pool {
				p := updatedOn(renderedOld)
				p.conditions = map[string]string{"Degraded": "True"}
				return p
			}(),
			want: targets.Health{State: targets.Unhealthy,
				Message: "MachineConfigPool worker is Degraded (DegradedReason: pool is Degraded=True): repair the pool's nodes, then approve the plan again"},
		},
		{
			name: "when the pool is Degraded before the operator handled it, it should be unhealthy: nothing rolls out until the pool is repaired",
			pool: func() pool {
				p := updatedOn(renderedOld)
				p.conditions = map[string]string{"Degraded": "True", "NodeDegraded": "True"}
				return p
			}(),
			want: targets.Health{State: targets.Unhealthy,
				Message: "MachineConfigPool worker is Degraded (DegradedReason: pool is Degraded=True): repair the pool's nodes, then approve the plan again"},
		},
		{
			name:     "when its selector matches no pool, it should be unhealthy, naming the selector",
			selector: map[string]any{poolLabel + "infra": ""},
			pool:     updatedOn(renderedOld),
			want: targets.Health{State: targets.Unhealthy,
				Message: "no MachineConfigPool matches the machineConfigPoolSelector map[matchLabels:map[" + poolLabel + "infra:]] of KubeletConfig kc: label the pool or fix the selector"},
		},
		{
			name:     "when its selector is empty, it should select no pool",
			selector: map[string]any{},
			pool:     updatedOn(renderedOld),
			want: targets.Health{State: targets.Unhealthy,
				Message: "no MachineConfigPool matches the machineConfigPoolSelector map[matchLabels:map[]] of KubeletConfig kc: label the pool or fix the selector"},
		},
	}
	create(t, c, rendered(renderedOld, nil))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			selector := selectsWorker
			if tc.selector != nil {
				selector = tc.selector
			}
			kc := kubeletConfig("kc", selector)
			if tc.annotate != nil {
				tc.annotate(kc)
			}
			if tc.status != nil {
				kc.Object["status"] = tc.status
			}
			kc = create(t, c, kc)
			if tc.generate != nil {
				tc.generate(t, kc)
			}
			create(t, c, tc.pool.object())
			g.Expect(check(t, c, kubeletConfig("kc", selector))).To(Equal(tc.want))
		})
	}
}

func TestKubeletConfigHealthWhenItWasDeleted(t *testing.T) {
	g := NewWithT(t)
	c := apiServer(t)
	create(t, c, pool{name: "worker", role: "worker", target: renderedOld, current: renderedOld, conditions: updated, updated: 3, machines: 3}.object())
	g.Expect(check(t, c, kubeletConfig("kc", map[string]any{poolLabel + "worker": ""}))).To(Equal(targets.Health{
		State: targets.Unhealthy, Message: "KubeletConfig kc does not exist any more: nothing rolls it out"}))
}
