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

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const roleLabel = "machineconfiguration.openshift.io/role"

// poolSim plays the Machine Config Operator for one MachineConfigPool, as
// hack/simulate-pool-rollout.sh does: it turns each KubeletConfig that selects the pool into
// a MachineConfig 99-<pool>-generated-kubelet[-<n>] controlled by it, renders the
// MachineConfigs the pool selects into rendered-<pool>-<hash> holding their merged content,
// points the pool at it and reports every machine updated, i.e. a roll-out that finishes at
// once. During a run the pool is rolled out as soon as a MachineConfig or KubeletConfig of
// the plan exists: the rendered MachineConfig is created then, as the operator creates it,
// since the operator's health check reads what it holds. Like the Machine Config Operator,
// it reads what it judges from informers (started by start, before the manager), so its
// only requests during a stage are its writes: the API server's time in a stage goes to the
// manager and to the roll-out itself.
type poolSim struct {
	dyn      dynamic.Interface
	pool     string
	machines int64
	// kubeletConfigs tells whether the control plane serves KubeletConfigs.
	kubeletConfigs bool
	// fingerprint is that of the MachineConfigs of the last render.
	fingerprint string
	// kubeletSpecs are the names, UIDs and specs of the KubeletConfigs of the generated
	// kubelet MachineConfigs last written ("" when there are none).
	kubeletSpecs string
	// reported is the generation of each KubeletConfig last reported Success, so that a
	// report the informer has not delivered yet is not sent twice.
	reported map[string]int64

	// The informers' caches, and kick, which each of their events notifies.
	vpcs, machineConfigs, pools, kubeletConfigList cache.GenericLister
	kick                                           chan struct{}
}

// start starts informers on the VirtPlatformConfig vpcName, the MachineConfigs, the pool and
// (when served) the KubeletConfigs, and waits until their caches hold what the API server
// holds now. They run until ctx ends.
func (s *poolSim) start(ctx context.Context, vpcName string) error {
	s.kick = make(chan struct{}, 1)
	s.reported = map[string]int64{}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.notify() },
		UpdateFunc: func(any, any) { s.notify() },
		DeleteFunc: func(any) { s.notify() },
	}
	byName := func(name string) dynamicinformer.TweakListOptionsFunc {
		return func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }
	}
	var synced []cache.InformerSynced
	informer := func(gvr schema.GroupVersionResource,
		tweak dynamicinformer.TweakListOptionsFunc) (cache.GenericLister, error) {
		inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, gvr, "", 0, cache.Indexers{}, tweak)
		if _, err := inf.Informer().AddEventHandler(notify); err != nil {
			return nil, err
		}
		go inf.Informer().RunWithContext(ctx)
		synced = append(synced, inf.Informer().HasSynced)
		return inf.Lister(), nil
	}
	var err error
	if s.vpcs, err = informer(vpcGVR, byName(vpcName)); err != nil {
		return err
	}
	if s.machineConfigs, err = informer(mcGVR, nil); err != nil {
		return err
	}
	if s.pools, err = informer(mcpGVR, byName(s.pool)); err != nil {
		return err
	}
	if s.kubeletConfigs {
		if s.kubeletConfigList, err = informer(kcGVR, nil); err != nil {
			return err
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("pool simulator: the informers did not sync: %w", ctx.Err())
	}
	return nil
}

func (s *poolSim) notify() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// cached returns the object of the informer's cache, as a copy the caller may change.
func cached(l cache.GenericLister, name string) (*unstructured.Unstructured, error) {
	obj, err := l.Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected %T in the informer's cache", name, obj)
	}
	return u.DeepCopy(), nil
}

// cachedList returns the objects of the informer's cache that match the selector.
func cachedList(l cache.GenericLister, selector labels.Selector) ([]unstructured.Unstructured, error) {
	objs, err := l.List(selector)
	if err != nil {
		return nil, err
	}
	out := make([]unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("unexpected %T in the informer's cache", obj)
		}
		out = append(out, *u.DeepCopy())
	}
	return out, nil
}

// render brings the pool onto the rendered configuration of its current MachineConfigs
// (as the informers last reported them) and reports it Updated, creating that rendered
// MachineConfig first, holding their merged content as the Machine Config Operator's does
// (the operator's health check reads it). It writes nothing when those MachineConfigs (names
// and resourceVersions) are the ones of the last render.
func (s *poolSim) render(ctx context.Context) (bool, error) {
	pool, err := cached(s.pools, s.pool)
	if err != nil {
		return false, fmt.Errorf("MachineConfigPool %s: %w", s.pool, err)
	}
	role, _, _ := unstructured.NestedString(pool.Object, "spec", "machineConfigSelector", "matchLabels", roleLabel)
	list, err := cachedList(s.machineConfigs, labels.SelectorFromSet(labels.Set{roleLabel: role}))
	if err != nil {
		return false, fmt.Errorf("the MachineConfigs of role %s: %w", role, err)
	}
	configs := make([]unstructured.Unstructured, 0, len(list))
	for _, mc := range list {
		if !strings.HasPrefix(mc.GetName(), "rendered-") {
			configs = append(configs, mc)
		}
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].GetName() < configs[j].GetName() })

	h := sha256.New()
	source := make([]any, 0, len(configs))
	for _, mc := range configs {
		_, _ = fmt.Fprintf(h, "%s %s\n", mc.GetName(), mc.GetResourceVersion())
		source = append(source, map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": mc.GetName(),
		})
	}
	fingerprint := hex.EncodeToString(h.Sum(nil))
	if fingerprint == s.fingerprint {
		return false, nil
	}
	rendered := "rendered-" + s.pool + "-" + fingerprint[:16]
	spec, err := mergedSpec(configs)
	if err != nil {
		return false, err
	}
	renderedMC := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata":   map[string]any{"name": rendered, "labels": map[string]any{roleLabel: role}},
		"spec":       spec,
	}}
	_, err = s.dyn.Resource(mcGVR).Create(ctx, renderedMC, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create MachineConfig %s: %w", rendered, err)
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

// mergedSpec merges the MachineConfigs, sorted by name, as MergeMachineConfigs of the
// Machine Config Operator does: their Ignition configs in order (Ignition's merge), kernel
// arguments without repeats, extensions, FIPS if any asks, the realtime kernel if any asks.
func mergedSpec(configs []unstructured.Unstructured) (map[string]any, error) {
	merged := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
	kernelArgs, extensions := []any{}, []any{}
	seen := map[string]bool{}
	fips, kernelType := false, "default"
	for _, mc := range configs {
		if config, ok, _ := unstructured.NestedMap(mc.Object, "spec", "config"); ok && len(config) > 0 {
			raw, err := json.Marshal(config)
			if err != nil {
				return nil, err
			}
			cfg, _, err := ign.ParseCompatibleVersion(raw)
			if err != nil {
				return nil, fmt.Errorf("the Ignition config of MachineConfig %s: %w", mc.GetName(), err)
			}
			merged = ign.Merge(merged, cfg)
		}
		args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
		for _, a := range args {
			if !seen[a] {
				seen[a] = true
				kernelArgs = append(kernelArgs, a)
			}
		}
		exts, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "extensions")
		for _, e := range exts {
			extensions = append(extensions, e)
		}
		if f, _, _ := unstructured.NestedBool(mc.Object, "spec", "fips"); f {
			fips = true
		}
		if t, _, _ := unstructured.NestedString(mc.Object, "spec", "kernelType"); t == "realtime" {
			kernelType = t
		}
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	config := map[string]any{}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, err
	}
	return map[string]any{
		"config": config, "kernelArguments": kernelArgs, "extensions": extensions,
		"fips": fips, "kernelType": kernelType,
	}, nil
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
// VirtPlatformConfig is Apply and a MachineConfig or KubeletConfig named in its
// status.items[].targetRef exists, it rolls the pool out, and again whenever the
// KubeletConfigs or the pool's MachineConfigs change, so that each such item of the plan,
// applied in turn, sees the pool roll it out. Every event of the informers triggers the
// checks, with a check every second as a safety net.
func (s *poolSim) run(ctx context.Context, vpcName string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	approved := false
	for {
		if !approved {
			approved = s.planTargetExists(vpcName)
		}
		if approved {
			if err := s.rollOut(ctx); err != nil && ctx.Err() == nil {
				logf("pool simulator: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
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
	changed, err := s.render(ctx)
	if err != nil {
		return err
	}
	if changed {
		logf("pool simulator: MachineConfigPool %s Updated", s.pool)
	}
	return nil
}

// syncKubeletConfigs plays the kubelet config controller of the Machine Config Operator: each
// KubeletConfig whose machineConfigPoolSelector selects the pool becomes a MachineConfig
// controlled by it, 99-<pool>-generated-kubelet for the first by name and
// 99-<pool>-generated-kubelet-<n> for the next ones, whose file holds its spec (so a changed
// KubeletConfig changes it), and each is reported Success; generated MachineConfigs no
// KubeletConfig selects any more are deleted. It writes the MachineConfigs only when those
// specs changed since the last write.
func (s *poolSim) syncKubeletConfigs(ctx context.Context) error {
	if !s.kubeletConfigs {
		return nil
	}
	list, err := cachedList(s.kubeletConfigList, labels.Everything())
	if err != nil {
		return fmt.Errorf("KubeletConfigs: %w", err)
	}
	if len(list) == 0 && s.kubeletSpecs == "" {
		return nil
	}
	pool, err := cached(s.pools, s.pool)
	if err != nil {
		return fmt.Errorf("MachineConfigPool %s: %w", s.pool, err)
	}
	role, _, _ := unstructured.NestedString(pool.Object, "spec", "machineConfigSelector", "matchLabels", roleLabel)
	sort.Slice(list, func(i, j int) bool { return list[i].GetName() < list[j].GetName() })
	var selected []unstructured.Unstructured
	var specs strings.Builder
	generated := map[string]string{}
	prefix := "99-" + s.pool + "-generated-kubelet"
	for _, kc := range list {
		if !targets.KubeletConfigSelects(pool, &kc) {
			continue
		}
		spec, err := json.Marshal(kc.Object["spec"])
		if err != nil {
			return fmt.Errorf("KubeletConfig %s: %w", kc.GetName(), err)
		}
		name := prefix
		if len(selected) > 0 {
			name = fmt.Sprintf("%s-%d", prefix, len(selected))
		}
		selected = append(selected, kc)
		generated[name] = kc.GetName()
		_, _ = fmt.Fprintf(&specs, "%s %s %s %s\n", name, kc.GetName(), kc.GetUID(), spec)
	}

	if specs.String() != s.kubeletSpecs {
		for i, kc := range selected {
			name := prefix
			if i > 0 {
				name = fmt.Sprintf("%s-%d", prefix, i)
			}
			spec, _ := json.Marshal(kc.Object["spec"])
			if err := s.applyGeneratedKubelet(ctx, name, role, &kc, fmt.Sprintf("%s %s\n", kc.GetName(), spec)); err != nil {
				return err
			}
		}
		mcs, err := cachedList(s.machineConfigs, labels.Everything())
		if err != nil {
			return err
		}
		for _, mc := range mcs {
			name := mc.GetName()
			if _, kept := generated[name]; kept || (name != prefix && !strings.HasPrefix(name, prefix+"-")) {
				continue
			}
			if err := s.dyn.Resource(mcGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete MachineConfig %s: %w", name, err)
			}
		}
		s.kubeletSpecs = specs.String()
	}

	for _, kc := range selected {
		observed, _, _ := unstructured.NestedInt64(kc.Object, "status", "observedGeneration")
		if observed == kc.GetGeneration() || s.reported[kc.GetName()] == kc.GetGeneration() {
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
		s.reported[kc.GetName()] = kc.GetGeneration()
	}
	return nil
}

// applyGeneratedKubelet server-side applies the MachineConfig generated from the
// KubeletConfig kc for the pool's role, controlled by kc, its kubelet.conf file holding
// contents.
func (s *poolSim) applyGeneratedKubelet(ctx context.Context, name, role string,
	kc *unstructured.Unstructured, contents string) error {
	mc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]any{roleLabel: role},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
				"name": kc.GetName(), "uid": string(kc.GetUID()), "controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"config": map[string]any{
				"ignition": map[string]any{"version": "3.2.0"},
				"storage": map[string]any{"files": []any{map[string]any{
					"path":      "/etc/kubernetes/kubelet.conf",
					"mode":      int64(420),
					"overwrite": true,
					"contents": map[string]any{
						"source": "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(contents)),
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
func (s *poolSim) planTargetExists(vpcName string) bool {
	vpc, err := cached(s.vpcs, vpcName)
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
		var l cache.GenericLister
		switch {
		case kind == "MachineConfig":
			l = s.machineConfigs
		case kind == "KubeletConfig" && s.kubeletConfigs:
			l = s.kubeletConfigList
		default:
			continue
		}
		if _, err := l.Get(name); err == nil {
			return true
		}
	}
	return false
}
