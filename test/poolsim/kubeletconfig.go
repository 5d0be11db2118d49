package poolsim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// kubeletConfigFile is the file of the generated kubelet MachineConfig.
const kubeletConfigFile = "/etc/kubernetes/kubelet.conf"

// noPoolMessage is the Failure the operator reports on a KubeletConfig that selects no
// pool (errCouldNotFindMCPSet, wrapped by wrapErrorWithCondition).
const noPoolMessage = "Error: could not find any MachineConfigPool set for KubeletConfig"

// generatedKubeletConfigName is the MachineConfig the KubeletConfigs of a pool become.
func generatedKubeletConfigName(pool string) string { return "99-" + pool + "-generated-kubelet" }

// selectsPool tells whether the KubeletConfig's machineConfigPoolSelector selects the pool;
// an empty or missing selector selects none.
func (kc *kubeletConfig) selectsPool(pl *pool) bool {
	sel, err := metav1.LabelSelectorAsSelector(kc.Spec.MachineConfigPoolSelector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(pl.Labels))
}

// syncKubeletConfigs plays the kubelet config controller: it keeps each pool's generated
// kubelet MachineConfig in line with the KubeletConfigs that select the pool, and reports
// each KubeletConfig of a generation it has not reported yet.
func (s *Simulator) syncKubeletConfigs(ctx context.Context, p *pass) {
	if !s.kubeletConfigs {
		return
	}
	for i := range p.snap.pools {
		s.syncGeneratedKubeletConfig(ctx, p, &p.snap.pools[i])
	}
	for i := range p.snap.kubeletConfigs {
		kc := &p.snap.kubeletConfigs[i]
		if kc.DeletionTimestamp != nil || kc.Status.ObservedGeneration >= kc.Generation {
			continue
		}
		s.handleKubeletConfig(ctx, p, kc)
	}
}

// syncGeneratedKubeletConfig writes the pool's 99-<pool>-generated-kubelet from the
// KubeletConfigs that select it, or deletes it when none does. As the operator, it writes
// nothing for a pool that has not rendered a configuration yet.
func (s *Simulator) syncGeneratedKubeletConfig(ctx context.Context, p *pass, pl *pool) {
	name := generatedKubeletConfigName(pl.Name)
	existing := p.snap.configs[name]
	var specs []map[string]any
	var names []string
	for i := range p.snap.kubeletConfigs {
		kc := &p.snap.kubeletConfigs[i]
		if kc.DeletionTimestamp != nil || !kc.selectsPool(pl) {
			continue
		}
		spec := map[string]any{}
		for k, v := range kc.spec {
			if k != "machineConfigPoolSelector" {
				spec[k] = v
			}
		}
		specs = append(specs, spec)
		names = append(names, kc.Name)
	}
	if len(specs) == 0 {
		if existing != nil && existing.DeletionTimestamp == nil {
			s.report(p, s.remove(ctx, machineConfigGVK, name))
			s.logf("MachineConfig %s: deleted, no KubeletConfig selects MachineConfigPool %s", name, pl.Name)
		}
		return
	}
	if pl.Spec.Configuration.Name == "" {
		return
	}
	want, err := generatedKubeletSpec(specs)
	if err != nil {
		s.report(p, err)
		return
	}
	switch {
	case existing == nil:
		var mc *unstructured.Unstructured
		mc, err = encode(machineConfigGVK, machineConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      map[string]string{roleLabel: pl.Name},
				Annotations: map[string]string{generatedByAnnotation: generatedBy},
			},
			Spec: want,
		})
		if err == nil {
			err = s.create(ctx, mc)
		}
	case !reflect.DeepEqual(existing.Spec, want):
		err = s.patch(ctx, p, machineConfigGVK, name, existing.ResourceVersion,
			map[string]any{"spec": map[string]any{"config": want.Config}}, false)
	default:
		return
	}
	if err != nil {
		s.report(p, err)
		return
	}
	s.logf("MachineConfig %s: written from KubeletConfig %s", name, strings.Join(names, ", "))
}

// generatedKubeletSpec is the spec of a generated kubelet MachineConfig: one file that
// holds the KubeletConfigs' specs, so that a changed KubeletConfig changes it.
func generatedKubeletSpec(specs []map[string]any) (machineConfigSpec, error) {
	content, err := json.Marshal(specs)
	if err != nil {
		return machineConfigSpec{}, err
	}
	source := "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(content)
	cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
	cfg.Storage.Files = []igntypes.File{{
		Node:          igntypes.Node{Path: kubeletConfigFile, Overwrite: ptr.To(true)},
		FileEmbedded1: igntypes.FileEmbedded1{Mode: ptr.To(0o644), Contents: igntypes.Resource{Source: ptr.To(source)}},
	}}
	config, err := ignitionMap(cfg)
	if err != nil {
		return machineConfigSpec{}, err
	}
	return machineConfigSpec{Config: config}, nil
}

// handleKubeletConfig reports a KubeletConfig: Failure when it selects no pool; otherwise,
// once its pools have rendered a configuration, the mc-name-suffix annotation in place of
// all its annotations when it has none, then Success.
func (s *Simulator) handleKubeletConfig(ctx context.Context, p *pass, kc *kubeletConfig) {
	var pools []*pool
	for i := range p.snap.pools {
		if kc.selectsPool(&p.snap.pools[i]) {
			pools = append(pools, &p.snap.pools[i])
		}
	}
	if len(pools) == 0 {
		s.report(p, s.reportKubeletConfig(ctx, p, kc, condition{Type: conditionFailure, Status: corev1.ConditionFalse, Message: noPoolMessage}))
		return
	}
	for _, pl := range pools {
		if pl.Spec.Configuration.Name == "" {
			// "Pool is unconfigured": the operator retries once the pool has rendered.
			return
		}
	}
	if _, ok := kc.Annotations[MCNameSuffixAnnotation]; !ok {
		// addAnnotation: SetAnnotations with this one annotation, then Update.
		body := map[string]any{"metadata": map[string]any{"annotations": replaceAll(kc.Annotations, MCNameSuffixAnnotation, "")}}
		if err := s.patch(ctx, p, kubeletConfigGVK, kc.Name, kc.ResourceVersion, body, false); err != nil {
			s.report(p, err)
			return
		}
		s.logf("KubeletConfig %s: annotations replaced with %s", kc.Name, MCNameSuffixAnnotation)
	}
	if err := s.reportKubeletConfig(ctx, p, kc, condition{Type: conditionSuccess, Status: corev1.ConditionTrue, Message: "Success"}); err != nil {
		s.report(p, err)
		return
	}
	s.logf("KubeletConfig %s: Success (generation %d)", kc.Name, kc.Generation)
}

// replaceAll is a merge patch of annotations that removes every one but key, set to value.
func replaceAll(annotations map[string]string, key, value string) map[string]any {
	out := map[string]any{key: value}
	for k := range annotations {
		if k != key {
			out[k] = nil
		}
	}
	return out
}

// reportKubeletConfig writes the KubeletConfig's observedGeneration and condition as
// syncStatusOnly does: the condition is appended unless the last one has the same message
// (which only gets a new time), and the last three are kept.
func (s *Simulator) reportKubeletConfig(ctx context.Context, p *pass, kc *kubeletConfig, c condition) error {
	c.LastTransitionTime = metav1.Now().Rfc3339Copy()
	conditions := append([]condition(nil), kc.Status.Conditions...)
	if n := len(conditions); n > 0 && conditions[n-1].Message == c.Message {
		conditions[n-1].LastTransitionTime = c.LastTransitionTime
	} else {
		conditions = append(conditions, c)
	}
	if len(conditions) > 3 {
		conditions = conditions[len(conditions)-3:]
	}
	body := map[string]any{"status": map[string]any{"observedGeneration": kc.Generation, "conditions": conditions}}
	return s.patch(ctx, p, kubeletConfigGVK, kc.Name, kc.ResourceVersion, body, true)
}
