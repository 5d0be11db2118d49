package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const roleLabel = "machineconfiguration.openshift.io/role"

// poolSim plays the Machine Config Operator for one MachineConfigPool, as
// hack/simulate-pool-rollout.sh does: it turns the KubeletConfigs that select the pool into
// the MachineConfig 99-<pool>-generated-kubelet, renders the MachineConfigs the pool selects
// into rendered-<pool>-<hash>, points the pool at it and reports every machine updated, i.e.
// a roll-out that finishes at once. During a run the pool is rolled out as soon as a
// MachineConfig or KubeletConfig of the plan exists, with no other write before it: the
// rendered MachineConfig itself is only created for the baseline, before the manager
// starts, so the simulator adds no delay of its own to the apply stage.
type poolSim struct {
	dyn      dynamic.Interface
	pool     string
	machines int64
	// kubeletConfigs tells whether the control plane serves KubeletConfigs.
	kubeletConfigs bool
	// fingerprint is that of the MachineConfigs of the last render.
	fingerprint string
	// kubeletSpecs are the specs of the KubeletConfigs in the generated kubelet
	// MachineConfig last written ("" when there is none).
	kubeletSpecs string
}

// render brings the pool onto the rendered configuration of its current MachineConfigs
// and reports it Updated; with createRendered it creates that rendered MachineConfig first.
// It writes nothing when those MachineConfigs (names and resourceVersions) are the ones of
// the last render.
func (s *poolSim) render(ctx context.Context, createRendered bool) (bool, error) {
	pools := s.dyn.Resource(mcpGVR)
	pool, err := pools.Get(ctx, s.pool, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get MachineConfigPool %s: %w", s.pool, err)
	}
	role, _, _ := unstructured.NestedString(pool.Object, "spec", "machineConfigSelector", "matchLabels", roleLabel)
	list, err := s.dyn.Resource(mcGVR).List(ctx, metav1.ListOptions{LabelSelector: roleLabel + "=" + role})
	if err != nil {
		return false, fmt.Errorf("list the MachineConfigs of role %s: %w", role, err)
	}
	configs := make([]unstructured.Unstructured, 0, len(list.Items))
	for _, mc := range list.Items {
		if !strings.HasPrefix(mc.GetName(), "rendered-") {
			configs = append(configs, mc)
		}
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].GetName() < configs[j].GetName() })

	h := sha256.New()
	source := make([]any, 0, len(configs))
	kernelArgs := []any{}
	for _, mc := range configs {
		_, _ = fmt.Fprintf(h, "%s %s\n", mc.GetName(), mc.GetResourceVersion())
		source = append(source, map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": mc.GetName(),
		})
		args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
		for _, a := range args {
			kernelArgs = append(kernelArgs, a)
		}
	}
	fingerprint := hex.EncodeToString(h.Sum(nil))
	if fingerprint == s.fingerprint {
		return false, nil
	}
	rendered := "rendered-" + s.pool + "-" + fingerprint[:16]

	if createRendered {
		renderedMC := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1",
			"kind":       "MachineConfig",
			"metadata":   map[string]any{"name": rendered, "labels": map[string]any{roleLabel: role}},
			"spec": map[string]any{
				"config":          map[string]any{"ignition": map[string]any{"version": "3.2.0"}},
				"kernelArguments": kernelArgs,
			},
		}}
		_, err = s.dyn.Resource(mcGVR).Create(ctx, renderedMC, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create MachineConfig %s: %w", rendered, err)
		}
	}

	configuration := map[string]any{"name": rendered, "source": source}
	patched, err := s.patch(ctx, map[string]any{"spec": map[string]any{"configuration": configuration}})
	if err != nil {
		return false, err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	condition := func(kind, status, message string) map[string]any {
		return map[string]any{"type": kind, "status": status, "reason": "", "message": message, "lastTransitionTime": now}
	}
	status := map[string]any{
		"observedGeneration":      patched.GetGeneration(),
		"configuration":           configuration,
		"machineCount":            s.machines,
		"updatedMachineCount":     s.machines,
		"readyMachineCount":       s.machines,
		"unavailableMachineCount": 0,
		"degradedMachineCount":    0,
		"conditions": []any{
			condition("Updated", "True", "All nodes are updated with "+rendered),
			condition("Updating", "False", ""),
			condition("Degraded", "False", ""),
		},
	}
	if _, err := s.patch(ctx, map[string]any{"status": status}, "status"); err != nil {
		return false, err
	}
	s.fingerprint = fingerprint
	return true, nil
}

// patch merge-patches the pool (or one of its subresources).
func (s *poolSim) patch(ctx context.Context, patch map[string]any,
	subresources ...string) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	out, err := s.dyn.Resource(mcpGVR).Patch(ctx, s.pool, types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: fieldManager}, subresources...)
	if err != nil {
		return nil, fmt.Errorf("patch MachineConfigPool %s %v: %w", s.pool, subresources, err)
	}
	return out, nil
}

// run simulates the roll-out of an approved plan until ctx ends: once spec.action of the
// VirtPlatformConfig vpcName is Apply and a MachineConfig or KubeletConfig named in its
// status.items[].targetRef exists, it rolls the pool out, and again whenever the
// KubeletConfigs or the pool's MachineConfigs change, so that each such item of the plan,
// applied in turn, sees the pool roll it out. Watches on the VirtPlatformConfig, on
// MachineConfigs and on KubeletConfigs trigger the checks, with a check every second as a
// safety net.
func (s *poolSim) run(ctx context.Context, vpcName string) {
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	go watchAll(ctx, s.dyn.Resource(vpcGVR), metav1.ListOptions{FieldSelector: "metadata.name=" + vpcName}, notify)
	go watchAll(ctx, s.dyn.Resource(mcGVR), metav1.ListOptions{}, notify)
	if s.kubeletConfigs {
		go watchAll(ctx, s.dyn.Resource(kcGVR), metav1.ListOptions{}, notify)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	approved := false
	for {
		if !approved {
			approved = s.planTargetExists(ctx, vpcName)
		}
		if approved {
			if err := s.rollOut(ctx); err != nil && ctx.Err() == nil {
				logf("pool simulator: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
		}
	}
}

// rollOut brings the generated kubelet MachineConfig up to date with the KubeletConfigs,
// then renders the pool if its MachineConfigs changed.
func (s *poolSim) rollOut(ctx context.Context) error {
	if err := s.syncKubeletConfigs(ctx); err != nil {
		return err
	}
	changed, err := s.render(ctx, false)
	if err != nil {
		return err
	}
	if changed {
		logf("pool simulator: MachineConfigPool %s Updated", s.pool)
	}
	return nil
}

// syncKubeletConfigs plays the kubelet config controller of the Machine Config Operator: the
// KubeletConfigs whose machineConfigPoolSelector selects the pool become one MachineConfig,
// 99-<pool>-generated-kubelet, whose file holds their specs (so a changed KubeletConfig
// changes it), and each is reported Success; with none, that MachineConfig is deleted. It
// writes the MachineConfig only when those specs changed since the last write.
func (s *poolSim) syncKubeletConfigs(ctx context.Context) error {
	if !s.kubeletConfigs {
		return nil
	}
	list, err := s.dyn.Resource(kcGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list KubeletConfigs: %w", err)
	}
	if len(list.Items) == 0 && s.kubeletSpecs == "" {
		return nil
	}
	pool, err := s.dyn.Resource(mcpGVR).Get(ctx, s.pool, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get MachineConfigPool %s: %w", s.pool, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
	var selected []unstructured.Unstructured
	var specs strings.Builder
	for _, kc := range list.Items {
		if !targets.KubeletConfigSelects(pool, &kc) {
			continue
		}
		spec, err := json.Marshal(kc.Object["spec"])
		if err != nil {
			return fmt.Errorf("KubeletConfig %s: %w", kc.GetName(), err)
		}
		selected = append(selected, kc)
		_, _ = fmt.Fprintf(&specs, "%s %s\n", kc.GetName(), spec)
	}

	name := "99-" + s.pool + "-generated-kubelet"
	if specs.String() != s.kubeletSpecs {
		if specs.Len() == 0 {
			err := s.dyn.Resource(mcGVR).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete MachineConfig %s: %w", name, err)
			}
		} else {
			role, _, _ := unstructured.NestedString(pool.Object, "spec", "machineConfigSelector", "matchLabels", roleLabel)
			if err := s.applyGeneratedKubelet(ctx, name, role, specs.String()); err != nil {
				return err
			}
		}
		s.kubeletSpecs = specs.String()
	}

	for _, kc := range selected {
		observed, _, _ := unstructured.NestedInt64(kc.Object, "status", "observedGeneration")
		if observed == kc.GetGeneration() {
			continue
		}
		status := map[string]any{"status": map[string]any{
			"observedGeneration": kc.GetGeneration(),
			"conditions": []any{map[string]any{
				"type": "Success", "status": "True", "reason": "", "message": "Success",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		}}
		data, err := json.Marshal(status)
		if err != nil {
			return err
		}
		if _, err := s.dyn.Resource(kcGVR).Patch(ctx, kc.GetName(), types.MergePatchType, data,
			metav1.PatchOptions{FieldManager: fieldManager}, "status"); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("report KubeletConfig %s Success: %w", kc.GetName(), err)
		}
	}
	return nil
}

// applyGeneratedKubelet server-side applies the generated kubelet MachineConfig of the pool's
// role, its kubelet.conf file holding specs.
func (s *poolSim) applyGeneratedKubelet(ctx context.Context, name, role, specs string) error {
	mc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{roleLabel: role}},
		"spec": map[string]any{
			"config": map[string]any{
				"ignition": map[string]any{"version": "3.2.0"},
				"storage": map[string]any{"files": []any{map[string]any{
					"path":      "/etc/kubernetes/kubelet.conf",
					"mode":      int64(420),
					"overwrite": true,
					"contents": map[string]any{
						"source": "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(specs)),
					},
				}}},
			},
		},
	}}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if _, err := s.dyn.Resource(mcGVR).Apply(ctx, name, mc, opts); err != nil {
		return fmt.Errorf("apply MachineConfig %s: %w", name, err)
	}
	return nil
}

// planTargetExists tells whether the VirtPlatformConfig is approved (spec.action Apply) and
// a MachineConfig or KubeletConfig its plan writes exists.
func (s *poolSim) planTargetExists(ctx context.Context, vpcName string) bool {
	vpc, err := s.dyn.Resource(vpcGVR).Get(ctx, vpcName, metav1.GetOptions{})
	if err != nil {
		return false
	}
	if action, _, _ := unstructured.NestedString(vpc.Object, "spec", "action"); action != "Apply" {
		return false
	}
	items, _, _ := unstructured.NestedSlice(vpc.Object, "status", "items")
	for _, it := range items {
		item, _ := it.(map[string]any)
		kind, _, _ := unstructured.NestedString(item, "targetRef", "kind")
		name, _, _ := unstructured.NestedString(item, "targetRef", "name")
		if name == "" {
			continue
		}
		var ri dynamic.ResourceInterface
		switch {
		case kind == "MachineConfig":
			ri = s.dyn.Resource(mcGVR)
		case kind == "KubeletConfig" && s.kubeletConfigs:
			ri = s.dyn.Resource(kcGVR)
		default:
			continue
		}
		if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err == nil {
			return true
		}
	}
	return false
}

// watchAll keeps a watch of the resource open until ctx ends and calls notify on each event.
func watchAll(ctx context.Context, ri dynamic.ResourceInterface, opts metav1.ListOptions, notify func()) {
	for ctx.Err() == nil {
		w, err := ri.Watch(ctx, opts)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		notify()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Bookmark {
				notify()
			}
		}
		w.Stop()
	}
}
