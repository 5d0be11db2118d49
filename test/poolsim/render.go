package poolsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// kernelTypeRealtime is the kernel type that wins over any other in a merge.
const kernelTypeRealtime = "realtime"

// renderedConfig is what the render controller makes of a pool's MachineConfigs.
type renderedConfig struct {
	name   string
	spec   machineConfigSpec
	source []corev1.ObjectReference
}

// renderPool merges the MachineConfigs (sorted by name) into the pool's rendered
// configuration, named rendered-<pool>-<hash of the merged spec>.
func renderPool(poolName string, configs []*machineConfig) (renderedConfig, error) {
	spec, err := mergeMachineConfigs(configs)
	if err != nil {
		return renderedConfig{}, err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return renderedConfig{}, err
	}
	sum := sha256.Sum256(data)
	out := renderedConfig{name: "rendered-" + poolName + "-" + hex.EncodeToString(sum[:16]), spec: spec}
	for _, mc := range configs {
		out.source = append(out.source, corev1.ObjectReference{
			APIVersion: machineConfigGVK.GroupVersion().String(), Kind: machineConfigGVK.Kind, Name: mc.Name,
		})
	}
	return out, nil
}

// mergeMachineConfigs merges MachineConfigs sorted by name as MergeMachineConfigs
// (pkg/controller/common/helpers.go) does: Ignition configs merged in order, kernel
// arguments and extensions concatenated, FIPS when any asks for it, a realtime kernel type
// over any other, the last OS image and extensions image given.
func mergeMachineConfigs(configs []*machineConfig) (machineConfigSpec, error) {
	merged := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
	var out machineConfigSpec
	for _, mc := range configs {
		cfg, ok, err := ignitionOf(mc.Spec.Config)
		if err != nil {
			return machineConfigSpec{}, fmt.Errorf("machine config %s contains an invalid Ignition config: %w", mc.Name, err)
		}
		if ok {
			merged = ign.Merge(merged, cfg)
		}
		out.KernelArguments = append(out.KernelArguments, mc.Spec.KernelArguments...)
		out.Extensions = append(out.Extensions, mc.Spec.Extensions...)
		out.FIPS = out.FIPS || mc.Spec.FIPS
		if out.KernelType != kernelTypeRealtime && mc.Spec.KernelType != "" {
			out.KernelType = mc.Spec.KernelType
		}
		if mc.Spec.OSImageURL != "" {
			out.OSImageURL = mc.Spec.OSImageURL
		}
		if mc.Spec.BaseOSExtensionsContainerImage != "" {
			out.BaseOSExtensionsContainerImage = mc.Spec.BaseOSExtensionsContainerImage
		}
	}
	if out.KernelType == "" {
		out.KernelType = "default"
	}
	config, err := ignitionMap(merged)
	if err != nil {
		return machineConfigSpec{}, err
	}
	out.Config = config
	return out, nil
}

// ignitionOf parses a MachineConfig's Ignition config of any 3.x version; ok is false for
// a MachineConfig without one.
func ignitionOf(config map[string]any) (igntypes.Config, bool, error) {
	if len(config) == 0 {
		return igntypes.Config{}, false, nil
	}
	data, err := json.Marshal(config)
	if err != nil {
		return igntypes.Config{}, false, err
	}
	cfg, report, err := ign.ParseCompatibleVersion(data)
	if err != nil {
		return igntypes.Config{}, false, fmt.Errorf("%w: %s", err, strings.TrimSpace(report.String()))
	}
	return cfg, true, nil
}

// ignitionMap is an Ignition config as a MachineConfig stores it.
func ignitionMap(cfg igntypes.Config) (map[string]any, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// render plays the render controller for one pool: once its MachineConfigs render to
// something other than its spec.configuration, and RenderDelay has passed since that was
// first seen, it creates the rendered MachineConfig and points spec.configuration at it;
// a failure to render sets RenderDegraded instead. A paused pool renders as any other.
func (s *Simulator) render(ctx context.Context, p *pass, pl *pool) {
	sel := pl.Spec.MachineConfigSelector
	if sel != nil && len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		// Selecting every MachineConfig: the operator refuses (event SelectingAll).
		return
	}
	want, failure := s.wantedRender(p.snap, pl)
	current := findCondition(pl.Status.Conditions, conditionRenderDegraded)
	var done bool
	if failure != "" {
		done = current != nil && current.Status == corev1.ConditionTrue && current.Message == failure
	} else {
		_, exists := p.snap.configs[want.name]
		done = exists && pl.Spec.Configuration.Name == want.name && sameSources(pl.Spec.Configuration.Source, want.source) &&
			current != nil && current.Status == corev1.ConditionFalse
	}
	if done {
		delete(s.renderDue, pl.Name)
		return
	}
	due, waiting := s.renderDue[pl.Name]
	if !waiting {
		due = p.now.Add(s.opts.RenderDelay)
		s.renderDue[pl.Name] = due
	}
	if p.now.Before(due) {
		s.wakeAt(due)
		return
	}
	delete(s.renderDue, pl.Name)
	if failure != "" {
		p.renderConditions[pl.Name] = condition{Type: conditionRenderDegraded, Status: corev1.ConditionTrue, Message: failure}
		s.logf("MachineConfigPool %s: RenderDegraded: %s", pl.Name, failure)
		return
	}
	if err := s.writeRender(ctx, p, pl, want); err != nil {
		s.report(p, err)
		return
	}
	p.renderConditions[pl.Name] = condition{Type: conditionRenderDegraded, Status: corev1.ConditionFalse}
}

// wantedRender is the pool's rendered configuration, or the RenderDegraded message that
// says why there is none.
func (s *Simulator) wantedRender(snap *snapshot, pl *pool) (renderedConfig, string) {
	fail := func(err string) string {
		return fmt.Sprintf("Failed to render configuration for pool %s: %s", pl.Name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(pl.Spec.MachineConfigSelector)
	if err != nil {
		return renderedConfig{}, fail(err.Error())
	}
	var configs []*machineConfig
	for _, mc := range snap.configList {
		if mc.DeletionTimestamp == nil && selector.Matches(labels.Set(mc.Labels)) {
			configs = append(configs, mc)
		}
	}
	if len(configs) == 0 {
		return renderedConfig{}, fail(fmt.Sprintf("no MachineConfigs found matching selector %v", selector))
	}
	want, err := renderPool(pl.Name, configs)
	if err != nil {
		return renderedConfig{}, fail(err.Error())
	}
	return want, ""
}

// writeRender creates the rendered MachineConfig (owned by the pool, as the operator's)
// unless it exists, and points the pool's spec.configuration at it.
func (s *Simulator) writeRender(ctx context.Context, p *pass, pl *pool, want renderedConfig) error {
	if _, exists := p.snap.configs[want.name]; !exists {
		mc, err := encode(machineConfigGVK, machineConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:        want.name,
				Annotations: map[string]string{generatedByAnnotation: generatedBy},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: poolGVK.GroupVersion().String(), Kind: poolGVK.Kind, Name: pl.Name, UID: pl.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: want.spec,
		})
		if err != nil {
			return err
		}
		if err := s.create(ctx, mc); err != nil {
			return err
		}
	}
	if pl.Spec.Configuration.Name == want.name && sameSources(pl.Spec.Configuration.Source, want.source) {
		return nil
	}
	body := map[string]any{"spec": map[string]any{"configuration": configuration{Name: want.name, Source: want.source}}}
	if err := s.patch(ctx, p, poolGVK, pl.Name, pl.ResourceVersion, body, false); err != nil {
		return err
	}
	names := make([]string, 0, len(want.source))
	for _, ref := range want.source {
		names = append(names, ref.Name)
	}
	s.logf("MachineConfigPool %s: rendered %s from %s", pl.Name, want.name, strings.Join(names, ", "))
	return nil
}

func sameSources(a, b []corev1.ObjectReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Name != b[i].Name || a[i].APIVersion != b[i].APIVersion {
			return false
		}
	}
	return true
}
