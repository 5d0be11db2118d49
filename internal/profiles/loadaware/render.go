package loadaware

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// preferredProfiles are the descheduler profiles that relieve loaded nodes, best first:
// the GA KubeVirt profile, its dev-preview predecessor, then the long-lifecycle profiles
// (LongLifecycle, called DevPreviewLongLifecycle before the 4.17 operator).
var preferredProfiles = []string{
	"KubeVirtRelieveAndMigrate",
	"DevKubeVirtRelieveAndMigrate",
	"LongLifecycle",
	"DevPreviewLongLifecycle",
}

// conflictsWith lists, per chosen profile, the profiles that cannot run beside it. The
// pairs are the mutually exclusive ones the 4.21+ KubeDescheduler CRD rejects (older
// operators reject them at run time), plus the other preferred profiles, which do the
// same job.
var conflictsWith = map[string][]string{
	"KubeVirtRelieveAndMigrate":    {"DevKubeVirtRelieveAndMigrate", "LongLifecycle", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"DevKubeVirtRelieveAndMigrate": {"KubeVirtRelieveAndMigrate", "LongLifecycle", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"LongLifecycle":                {"KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"DevPreviewLongLifecycle":      {"KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate", "LongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
}

func isRelieveAndMigrate(profile string) bool {
	return strings.HasSuffix(profile, "KubeVirtRelieveAndMigrate")
}

// RenderItems is the plan for the options o on a cluster that reads as in: a pure
// function, so every combination is tested without a cluster.
func RenderItems(o *advisorv1alpha1.LoadAwareOptions, in Inputs) ([]plan.Item, error) {
	chosen, why, err := chooseProfile(in.Schema)
	if err != nil {
		return nil, err
	}
	items := []plan.Item{deschedulerItem(o, in, chosen, why)}
	if *o.EnablePSIMetrics {
		items = append(items, psiItem(in.PSIEffective))
		if in.MastersSchedulable {
			items = append(items, psiMasterItem())
		}
	}
	return items, nil
}

// chooseProfile picks the best preferred profile the schema's enum offers, and says why.
func chooseProfile(s targets.DeschedulerSchema) (string, string, error) {
	for i, candidate := range preferredProfiles {
		if slices.Contains(s.Profiles, candidate) {
			if i == 0 {
				return candidate, "the best the installed descheduler offers", nil
			}
			return candidate, fmt.Sprintf("the installed descheduler does not offer %s", strings.Join(preferredProfiles[:i], " or ")), nil
		}
	}
	return "", "", &profiles.PrerequisiteError{Message: fmt.Sprintf(
		"the installed Kube Descheduler Operator offers none of the profiles load-aware rebalancing needs (%s): upgrade the Kube Descheduler Operator",
		strings.Join(preferredProfiles, ", "))}
}

// mergeProfiles keeps the live profiles that the schema still offers and that can run
// beside chosen (so AffinityAndTaints and SoftTopologyAndDuplicates stay), in their
// order, and adds chosen at the end.
func mergeProfiles(live []string, chosen string, offered []string) []string {
	out := make([]string, 0, len(live)+1)
	for _, p := range live {
		if p == chosen || slices.Contains(conflictsWith[chosen], p) || !slices.Contains(offered, p) || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return append(out, chosen)
}

// limits are the eviction limits to set, and where each comes from.
type limits struct {
	total, node             int32
	totalSource, nodeSource string
}

// evictionLimits takes each limit from the options, else from the HyperConverged's
// live-migration limits (so the descheduler never asks for more migrations than KubeVirt
// runs at once), else from the defaults.
func evictionLimits(o *advisorv1alpha1.LoadAwareOptions, hco *MigrationLimits) limits {
	l := limits{total: defaultEvictionLimitTotal, node: defaultEvictionLimitNode, totalSource: "default", nodeSource: "default"}
	if hco != nil {
		if v := hco.PerCluster; v != nil && *v > 0 {
			l.total, l.totalSource = clampInt32(*v), hco.Source+" parallelMigrationsPerCluster"
		}
		if v := hco.PerNode; v != nil && *v > 0 {
			l.node, l.nodeSource = clampInt32(*v), hco.Source+" parallelOutboundMigrationsPerNode"
		}
	}
	if o.EvictionLimitTotal != nil {
		l.total, l.totalSource = *o.EvictionLimitTotal, "options"
	}
	if o.EvictionLimitNode != nil {
		l.node, l.nodeSource = *o.EvictionLimitNode, "options"
	}
	if l.node > l.total {
		// A node cannot evict more than the whole cluster may.
		l.node, l.nodeSource = l.total, l.nodeSource+", capped at the total"
	}
	return l
}

// defaultLimitsWhy says why the defaults stand in for limits the options leave to the
// HyperConverged, when the cluster has none or several, and which options to set instead;
// "" otherwise.
func defaultLimitsWhy(o *advisorv1alpha1.LoadAwareOptions, in Inputs) string {
	hco := in.MigrationLimits
	if hco == nil || hco.HyperConvergeds == 1 {
		return ""
	}
	var unset []string
	if o.EvictionLimitTotal == nil {
		unset = append(unset, "options.loadAware.evictionLimitTotal")
	}
	if o.EvictionLimitNode == nil && in.Schema.EvictionLimitNode {
		unset = append(unset, "options.loadAware.evictionLimitNode")
	}
	if len(unset) == 0 {
		return ""
	}
	found := "no HyperConverged was found to read live-migration limits from"
	if hco.HyperConvergeds > 1 {
		found = fmt.Sprintf("%d HyperConverged objects were found, and live-migration limits are read only from exactly one",
			hco.HyperConvergeds)
	}
	what := "the limit"
	if len(unset) > 1 {
		what = "the limits"
	}
	return fmt.Sprintf("the defaults apply: %s; set %s to choose %s", found, strings.Join(unset, " and "), what)
}

// clampInt32 keeps a HyperConverged limit (an unsigned 32-bit field) within the int32 the
// KubeDescheduler's evictionLimits take, instead of letting it wrap around.
func clampInt32(v int64) int32 {
	return int32(min(v, math.MaxInt32))
}

func deschedulerItem(o *advisorv1alpha1.LoadAwareOptions, in Inputs, chosen, why string) plan.Item {
	var liveProfiles []string
	if in.Descheduler != nil {
		liveProfiles = in.Descheduler.Profiles
	}
	spec := map[string]any{
		"managementState":             "Managed",
		"mode":                        string(o.Mode),
		"deschedulingIntervalSeconds": int64(*o.DeschedulingIntervalSeconds),
		"profiles":                    toAny(mergeProfiles(liveProfiles, chosen, in.Schema.Profiles)),
	}
	var details []string
	if isRelieveAndMigrate(chosen) {
		custom := map[string]any{}
		if in.Schema.HasCustomization("devEnableEvictionsInBackground") {
			custom["devEnableEvictionsInBackground"] = true
		}
		if in.Schema.HasCustomization("devEnableSoftTainter") {
			custom["devEnableSoftTainter"] = true
		}
		if in.Schema.HasCustomization("devDeviationThresholds") {
			custom["devDeviationThresholds"] = string(o.DevDeviationThresholds)
			details = append(details, "deviation thresholds "+string(o.DevDeviationThresholds))
		}
		if len(custom) > 0 {
			spec["profileCustomizations"] = custom
		}
	}
	if in.Schema.EvictionLimitTotal {
		l := evictionLimits(o, in.MigrationLimits)
		el := map[string]any{"total": int64(l.total)}
		detail := fmt.Sprintf("at most %d evictions per run (%s)", l.total, l.totalSource)
		if in.Schema.EvictionLimitNode {
			el["node"] = int64(l.node)
			detail += fmt.Sprintf(" and %d per node (%s)", l.node, l.nodeSource)
		}
		spec["evictionLimits"] = el
		details = append(details, detail)
		if why := defaultLimitsWhy(o, in); why != "" {
			details = append(details, why)
		}
	}
	desired := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	desired.SetGroupVersionKind(targets.KubeDescheduler.GVK)
	desired.SetNamespace(DeschedulerNamespace)
	desired.SetName(DeschedulerName)

	verb := "will be configured"
	if in.Descheduler == nil {
		verb = "will be created"
	}
	msg := fmt.Sprintf("KubeDescheduler %s %s with profile %s (%s), mode %s, every %ds",
		DeschedulerName, verb, chosen, why, o.Mode, *o.DeschedulingIntervalSeconds)
	if len(details) > 0 {
		msg += "; " + strings.Join(details, "; ")
	}
	return plan.Item{Name: ItemDescheduler, Desired: desired, Impact: advisorv1alpha1.ImpactMedium, Message: msg}
}

func psiItem(effective bool) plan.Item {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"config":          map[string]any{"ignition": map[string]any{"version": "3.2.0"}},
			"kernelArguments": []any{"psi=1"},
		},
	}}
	desired.SetGroupVersionKind(targets.MachineConfig.GVK)
	desired.SetName(PSIMachineConfigName)
	desired.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
	item := plan.Item{
		Name:    ItemPSI,
		Desired: desired,
		Impact:  advisorv1alpha1.ImpactHigh,
		Message: fmt.Sprintf("MachineConfig %s adds the kernel argument psi=1 to worker nodes; "+
			"the Machine Config Operator reboots them one by one", PSIMachineConfigName),
	}
	if effective {
		item.Impact = advisorv1alpha1.ImpactLow
		item.Message = fmt.Sprintf("MachineConfig %s records the kernel argument psi=1, which the worker pool's "+
			"rendered configuration already has: no reboot is expected", PSIMachineConfigName)
	}
	return item
}

// psiMasterItem adds psi=1 to the control plane nodes of a cluster that runs workloads on
// them (a compact cluster): the descheduler relieves them too.
func psiMasterItem() plan.Item {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"config":          map[string]any{"ignition": map[string]any{"version": "3.2.0"}},
			"kernelArguments": []any{"psi=1"},
		},
	}}
	desired.SetGroupVersionKind(targets.MachineConfig.GVK)
	desired.SetName(PSIMasterMachineConfigName)
	desired.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "master"})
	return plan.Item{
		Name:    ItemPSIMasters,
		Desired: desired,
		Impact:  advisorv1alpha1.ImpactHigh,
		Message: fmt.Sprintf("the control plane nodes run workloads (Scheduler cluster spec.mastersSchedulable): MachineConfig %s "+
			"adds the kernel argument psi=1 to them; the Machine Config Operator reboots them one by one", PSIMasterMachineConfigName),
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
