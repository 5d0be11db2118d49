package poolsim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// kubeletConfigFile is the file of a generated kubelet MachineConfig.
const kubeletConfigFile = "/etc/kubernetes/kubelet.conf"

// noPoolMessage is the Failure the operator reports on a KubeletConfig that selects no
// pool (errCouldNotFindMCPSet, wrapped by wrapErrorWithCondition).
const noPoolMessage = "Error: could not find any MachineConfigPool set for KubeletConfig"

// maxNameSuffix is the highest mc-name-suffix the kubelet config controller gives: with the
// MachineConfig without a suffix, ten KubeletConfigs per pool.
const maxNameSuffix = 9

// errTooManyKubeletConfigs is the operator's error when a pool would need an mc-name-suffix
// above maxNameSuffix.
var errTooManyKubeletConfigs = errors.New("max number of supported kubelet config (10) has been reached. Please delete old kubelet configs before retrying")

// generatedKubeletConfigName is the MachineConfig the kubelet config controller generates
// for the pool from a KubeletConfig whose mc-name-suffix annotation is suffix.
func generatedKubeletConfigName(pool, suffix string) string {
	name := "99-" + pool + "-generated-kubelet"
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// selectsPool tells whether the KubeletConfig's machineConfigPoolSelector selects the pool;
// an empty or missing selector selects none.
func (kc *kubeletConfig) selectsPool(pl *pool) bool {
	sel, err := metav1.LabelSelectorAsSelector(kc.Spec.MachineConfigPoolSelector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(pl.Labels))
}

// syncKubeletConfigs plays the kubelet config controller: a KubeletConfig being deleted
// gives up its generated MachineConfigs, one finalizer at a time; one with a generation not
// reported yet (the operator syncs a KubeletConfig when it is created or its spec changes)
// is synced, oldest first, so that the mc-name-suffixes follow the order of creation.
func (s *Simulator) syncKubeletConfigs(ctx context.Context, p *pass) {
	if !s.kubeletConfigs {
		return
	}
	kcs := make([]*kubeletConfig, 0, len(p.snap.kubeletConfigs))
	for i := range p.snap.kubeletConfigs {
		kcs = append(kcs, &p.snap.kubeletConfigs[i])
	}
	slices.SortStableFunc(kcs, func(a, b *kubeletConfig) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	for _, kc := range kcs {
		if kc.DeletionTimestamp != nil {
			if len(kc.Finalizers) > 0 {
				s.report(p, s.cascadeDelete(ctx, p, kc))
			}
			continue
		}
		if kc.Status.ObservedGeneration < kc.Generation {
			s.syncKubeletConfig(ctx, p, kc)
		}
	}
}

// syncKubeletConfig follows syncKubeletConfig of the operator for one KubeletConfig: Failure
// when it selects no pool; otherwise, once its pools have rendered a configuration, the
// mc-name-suffix annotation in place of all its annotations when it has none, its
// MachineConfig for each pool, the names of those as its finalizers, then Success. A write
// that fails leaves the generation unreported, so that a later pass syncs it again.
func (s *Simulator) syncKubeletConfig(ctx context.Context, p *pass, kc *kubeletConfig) {
	var pools []*pool
	for i := range p.snap.pools {
		if kc.selectsPool(&p.snap.pools[i]) {
			pools = append(pools, &p.snap.pools[i])
		}
	}
	if len(pools) == 0 {
		s.report(p, s.reportKubeletConfig(ctx, p, kc, failure(noPoolMessage)))
		return
	}
	for _, pl := range pools {
		if pl.Spec.Configuration.Name == "" {
			// "Pool is unconfigured": the operator retries once the pool has rendered.
			return
		}
	}
	suffix, named := kc.Annotations[MCNameSuffixAnnotation]
	if !named {
		var err error
		if suffix, err = nameSuffix(p.snap, pools[0], kc); err != nil {
			s.report(p, s.reportKubeletConfig(ctx, p, kc, failure("could not get kubelet config key: "+err.Error())))
			return
		}
		// addAnnotation: SetAnnotations with this one annotation, then Update.
		body := map[string]any{"metadata": map[string]any{"annotations": replaceAll(kc.Annotations, MCNameSuffixAnnotation, suffix)}}
		if err := s.patch(ctx, p, kubeletConfigGVK, kc.Name, kc.ResourceVersion, body, false); err != nil {
			s.report(p, err)
			return
		}
		// The KubeletConfigs synced after this one in the pass see its suffix, as the
		// operator's next list does.
		kc.Annotations = map[string]string{MCNameSuffixAnnotation: suffix}
		s.logf("KubeletConfig %s: annotations replaced with %s=%q", kc.Name, MCNameSuffixAnnotation, suffix)
	}
	names := make([]string, 0, len(pools))
	for _, pl := range pools {
		name := generatedKubeletConfigName(pl.Name, suffix)
		written, err := s.writeGeneratedKubeletConfig(ctx, p, kc, pl, name)
		if err != nil || !written {
			s.report(p, err)
			return
		}
		names = append(names, name)
	}
	if err := s.addFinalizers(ctx, p, kc, names); err != nil {
		s.report(p, err)
		return
	}
	if err := s.reportKubeletConfig(ctx, p, kc, condition{Type: conditionSuccess, Status: corev1.ConditionTrue, Message: "Success"}); err != nil {
		s.report(p, err)
		return
	}
	s.logf("KubeletConfig %s: Success (generation %d)", kc.Name, kc.Generation)
}

// nameSuffix is the mc-name-suffix of a KubeletConfig that has none yet, as
// getManagedKubeletConfigKey chooses it for the pool: none for the only KubeletConfig that
// selects the pool; for one a later KubeletConfig followed, the suffix of the pool's
// generated MachineConfig its finalizers name, the highest if several; otherwise one more
// than the highest suffix of the KubeletConfigs that select the pool.
func nameSuffix(snap *snapshot, pl *pool, kc *kubeletConfig) (string, error) {
	var selecting []*kubeletConfig
	for i := range snap.kubeletConfigs {
		if snap.kubeletConfigs[i].selectsPool(pl) {
			selecting = append(selecting, &snap.kubeletConfigs[i])
		}
	}
	if len(selecting) == 1 {
		return "", nil
	}
	followed := slices.ContainsFunc(selecting, func(other *kubeletConfig) bool {
		return other.CreationTimestamp.After(kc.CreationTimestamp.Time)
	})
	if followed {
		if suffix, ok := suffixFromFinalizers(snap, pl, kc); ok {
			return suffix, nil
		}
	}
	highest := 0
	for _, other := range selecting {
		value := other.Annotations[MCNameSuffixAnnotation]
		if value == "" {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return "", fmt.Errorf("error converting %s to int: %w", value, err)
		}
		highest = max(highest, n)
	}
	if highest+1 > maxNameSuffix {
		return "", errTooManyKubeletConfigs
	}
	return strconv.Itoa(highest + 1), nil
}

// suffixFromFinalizers is the suffix of the highest-numbered MachineConfig of the pool's
// generated kubelet ones that the KubeletConfig's finalizers name and that exists; ok is
// false when they name none.
func suffixFromFinalizers(snap *snapshot, pl *pool, kc *kubeletConfig) (string, bool) {
	prefix := generatedKubeletConfigName(pl.Name, "")
	best, suffix := -1, ""
	for _, f := range kc.Finalizers {
		if snap.configs[f] == nil || !strings.HasPrefix(f, prefix) {
			continue
		}
		last := f[strings.LastIndex(f, "-")+1:]
		n, err := strconv.Atoi(last)
		if err != nil {
			if f != prefix {
				continue
			}
			n, last = 0, ""
		}
		if n > best {
			best, suffix = n, last
		}
	}
	return suffix, best >= 0
}

// writeGeneratedKubeletConfig creates the MachineConfig name for the pool from the
// KubeletConfig, or brings it in line: labelled with the pool's role (on creation), the
// generated-by annotation alone, the KubeletConfig as its only owner and controller, and
// /etc/kubernetes/kubelet.conf from the KubeletConfig's spec. written is false while a
// MachineConfig of that name is being deleted.
func (s *Simulator) writeGeneratedKubeletConfig(ctx context.Context, p *pass, kc *kubeletConfig, pl *pool, name string) (bool, error) {
	want, err := generatedKubeletSpec(kc.spec)
	if err != nil {
		return false, err
	}
	owners := []metav1.OwnerReference{*metav1.NewControllerRef(&kc.ObjectMeta, kubeletConfigGVK)}
	annotations := map[string]string{generatedByAnnotation: generatedBy}
	existing := p.snap.configs[name]
	switch {
	case existing == nil:
		var mc *unstructured.Unstructured
		mc, err = encode(machineConfigGVK, machineConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Labels:          map[string]string{roleLabel: pl.Name},
				Annotations:     annotations,
				OwnerReferences: owners,
			},
			Spec: want,
		})
		if err == nil {
			err = s.create(ctx, mc)
		}
	case existing.DeletionTimestamp != nil:
		return false, nil
	case !reflect.DeepEqual(existing.Spec.Config, want.Config) || !reflect.DeepEqual(existing.Annotations, annotations) ||
		!reflect.DeepEqual(existing.OwnerReferences, owners):
		// The operator updates the MachineConfig it read with these annotations, owner and
		// Ignition config; the rest (labels, other spec fields) is kept.
		err = s.patch(ctx, p, machineConfigGVK, name, existing.ResourceVersion, map[string]any{
			"metadata": map[string]any{
				"annotations":     replaceAll(existing.Annotations, generatedByAnnotation, generatedBy),
				"ownerReferences": owners,
			},
			"spec": map[string]any{"config": want.Config},
		}, false)
	default:
		return true, nil
	}
	if err != nil {
		return false, err
	}
	s.logf("MachineConfig %s: written from KubeletConfig %s", name, kc.Name)
	return true, nil
}

// generatedKubeletSpec is the spec of the MachineConfig generated from a KubeletConfig: one
// file that holds the KubeletConfig's spec (without its pool selector), so that a changed
// KubeletConfig changes it.
func generatedKubeletSpec(spec map[string]any) (machineConfigSpec, error) {
	settings := map[string]any{}
	for k, v := range spec {
		if k != "machineConfigPoolSelector" {
			settings[k] = v
		}
	}
	content, err := json.Marshal(settings)
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

// addFinalizers gives the KubeletConfig the names of its generated MachineConfigs as
// finalizers, as addFinalizerToKubeletConfig does: a finalizer without "kubelet" in its
// name (one of the operator's older UID finalizers, or anyone else's) clears the list first.
func (s *Simulator) addFinalizers(ctx context.Context, p *pass, kc *kubeletConfig, names []string) error {
	var finalizers []string
	if !slices.ContainsFunc(kc.Finalizers, func(f string) bool { return !strings.Contains(f, "kubelet") }) {
		finalizers = append(finalizers, kc.Finalizers...)
	}
	for _, name := range names {
		if !slices.Contains(finalizers, name) {
			finalizers = append(finalizers, name)
		}
	}
	if slices.Equal(finalizers, kc.Finalizers) {
		return nil
	}
	body := map[string]any{"metadata": map[string]any{"finalizers": finalizers}}
	if err := s.patch(ctx, p, kubeletConfigGVK, kc.Name, kc.ResourceVersion, body, false); err != nil {
		return err
	}
	kc.Finalizers = finalizers
	s.logf("KubeletConfig %s: finalizers %s", kc.Name, strings.Join(finalizers, ", "))
	return nil
}

// cascadeDelete follows the operator's cascadeDelete for a KubeletConfig being deleted: it
// deletes the MachineConfig its first finalizer names (by name or UID) and removes that
// finalizer; the write brings the next pass, which handles the next one.
func (s *Simulator) cascadeDelete(ctx context.Context, p *pass, kc *kubeletConfig) error {
	first := kc.Finalizers[0]
	for _, mc := range p.snap.configList {
		if mc.Name != first && string(mc.UID) != first {
			continue
		}
		if mc.DeletionTimestamp == nil {
			if err := s.remove(ctx, machineConfigGVK, mc.Name); err != nil {
				return err
			}
			s.logf("MachineConfig %s: deleted with KubeletConfig %s", mc.Name, kc.Name)
		}
		break
	}
	rest := append([]string{}, kc.Finalizers[1:]...)
	body := map[string]any{"metadata": map[string]any{"finalizers": rest}}
	if err := s.patch(ctx, p, kubeletConfigGVK, kc.Name, kc.ResourceVersion, body, false); err != nil {
		return err
	}
	if len(rest) == 0 {
		// The API server deleted it instead of writing it, and answered with the
		// resourceVersion it had: what the cache must show is that it is gone.
		s.expect(kubeletConfigGVK, kc.Name, "", false)
	}
	s.logf("KubeletConfig %s: finalizer %s removed", kc.Name, first)
	return nil
}

// failure is the Failure condition (status False) with the message.
func failure(message string) condition {
	return condition{Type: conditionFailure, Status: corev1.ConditionFalse, Message: message}
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
