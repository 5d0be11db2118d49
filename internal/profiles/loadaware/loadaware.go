// Package loadaware is the load-aware-rebalancing profile: the KubeDescheduler runs the
// best KubeVirt-aware descheduler profile the installed operator offers, and worker nodes
// get the psi=1 kernel argument so the descheduler can see node pressure.
package loadaware

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

const (
	// DeschedulerCRD is the KubeDescheduler CRD of the Kube Descheduler Operator.
	DeschedulerCRD = "kubedeschedulers.operator.openshift.io"
	// MachineConfigCRD is the MachineConfig CRD of the Machine Config Operator.
	MachineConfigCRD = "machineconfigs.machineconfiguration.openshift.io"
	// MachineConfigPoolCRD is the MachineConfigPool CRD of the Machine Config Operator.
	MachineConfigPoolCRD = "machineconfigpools.machineconfiguration.openshift.io"
	// HyperConvergedCRD is the HyperConverged CRD of OpenShift Virtualization.
	HyperConvergedCRD = "hyperconvergeds.hco.kubevirt.io"

	// DeschedulerNamespace and DeschedulerName locate the KubeDescheduler singleton.
	DeschedulerNamespace = "openshift-kube-descheduler-operator"
	DeschedulerName      = "cluster"
	// PSIMachineConfigName is the MachineConfig that adds psi=1 to worker nodes.
	PSIMachineConfigName = "99-worker-psi-karg"

	// ItemDescheduler and ItemPSI name the plan items.
	ItemDescheduler = "enable-load-aware-descheduling"
	ItemPSI         = "enable-psi-metrics"

	// Defaults of the options; the CRD declares the same ones.
	defaultIntervalSeconds = 60
	defaultMode            = advisorv1alpha1.DeschedulerModeAutomatic
	defaultDeviation       = advisorv1alpha1.DeviationThresholds("AsymmetricLow")
	// Eviction limits when neither the options nor a HyperConverged give them.
	defaultEvictionLimitTotal = 5
	defaultEvictionLimitNode  = 2
)

var (
	deschedulerGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	mcGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	mcpGVK         = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
)

// Reads and server-side applies (create or patch) of the targets, reads of what the plan
// depends on; list and watch for the metadata-only drift watches.
// +kubebuilder:rbac:groups=operator.openshift.io,resources=kubedeschedulers,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=get;list;watch

// Profile is the load-aware-rebalancing profile.
type Profile struct{}

// New returns the load-aware-rebalancing profile.
func New() *Profile { return &Profile{} }

var _ profiles.Profile = (*Profile)(nil)

// Name implements profiles.Profile.
func (*Profile) Name() advisorv1alpha1.ProfileName {
	return advisorv1alpha1.ProfileLoadAwareRebalancing
}

// Description implements profiles.Profile.
func (*Profile) Description() string {
	return "Rebalances running VMs by node load: the descheduler live-migrates VMs away from nodes " +
		"under CPU, memory or IO pressure, measured with the kernel's pressure stall information (PSI)."
}

// ImpactSummary implements profiles.Profile.
func (*Profile) ImpactSummary() string {
	return "Medium: the descheduler starts live-migrating VMs. High with enablePSIMetrics (the default): " +
		"the psi=1 kernel argument reboots worker nodes one by one."
}

// Prerequisites implements profiles.Profile.
func (p *Profile) Prerequisites(opts *advisorv1alpha1.ProfileOptions) []profiles.Prerequisite {
	out := []profiles.Prerequisite{{CRD: DeschedulerCRD, Operator: "the Kube Descheduler Operator"}}
	if o := p.Defaults(opts).LoadAware; *o.EnablePSIMetrics {
		out = append(out, profiles.Prerequisite{
			CRD:      MachineConfigCRD,
			Operator: "the Machine Config Operator (OpenShift), or set options.loadAware.enablePSIMetrics to false",
		})
	}
	return out
}

// ManagedKinds implements profiles.Profile.
func (*Profile) ManagedKinds() []schema.GroupKind {
	return []schema.GroupKind{deschedulerGVK.GroupKind(), mcGVK.GroupKind()}
}

// WatchedCRDs implements profiles.Profile.
func (*Profile) WatchedCRDs() []string {
	return []string{DeschedulerCRD, MachineConfigCRD, MachineConfigPoolCRD, HyperConvergedCRD}
}

// Defaults implements profiles.Profile.
func (*Profile) Defaults(opts *advisorv1alpha1.ProfileOptions) *advisorv1alpha1.ProfileOptions {
	o := &advisorv1alpha1.LoadAwareOptions{}
	if opts != nil && opts.LoadAware != nil {
		o = opts.LoadAware.DeepCopy()
	}
	if o.DeschedulingIntervalSeconds == nil {
		o.DeschedulingIntervalSeconds = ptr.To[int32](defaultIntervalSeconds)
	}
	if o.Mode == "" {
		o.Mode = defaultMode
	}
	if o.EnablePSIMetrics == nil {
		o.EnablePSIMetrics = ptr.To(true)
	}
	if o.DevDeviationThresholds == "" {
		o.DevDeviationThresholds = defaultDeviation
	}
	return &advisorv1alpha1.ProfileOptions{LoadAware: o}
}

// Validate implements profiles.Profile. Every rule of these options is enforced at
// admission.
func (*Profile) Validate(*advisorv1alpha1.ProfileOptions) error { return nil }

// Render implements profiles.Profile.
func (p *Profile) Render(ctx context.Context, reader client.Reader, opts *advisorv1alpha1.ProfileOptions) ([]plan.Item, error) {
	o := p.Defaults(opts).LoadAware
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := reader.Get(ctx, types.NamespacedName{Name: DeschedulerCRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &profiles.PrerequisiteError{Message: "the KubeDescheduler CRD is missing: install the Kube Descheduler Operator"}
		}
		return nil, fmt.Errorf("read CRD %s: %w", DeschedulerCRD, err)
	}
	caps, err := capabilitiesOf(crd)
	if err != nil {
		return nil, err
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(deschedulerGVK)
	if err := reader.Get(ctx, types.NamespacedName{Namespace: DeschedulerNamespace, Name: DeschedulerName}, live); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read KubeDescheduler %s/%s: %w", DeschedulerNamespace, DeschedulerName, err)
		}
		live = nil
	}
	var limits limits
	if caps.evictionLimitTotal {
		if limits, err = evictionLimits(ctx, reader, o); err != nil {
			return nil, err
		}
	}
	items := []plan.Item{deschedulerItem(o, caps, live, limits)}
	if *o.EnablePSIMetrics {
		psi, err := psiItem(ctx, reader)
		if err != nil {
			return nil, err
		}
		items = append(items, psi)
	}
	return items, nil
}

func deschedulerItem(o *advisorv1alpha1.LoadAwareOptions, caps capabilities, live *unstructured.Unstructured, limits limits) plan.Item {
	var liveProfiles []string
	if live != nil {
		liveProfiles, _, _ = unstructured.NestedStringSlice(live.Object, "spec", "profiles")
	}
	chosen := caps.kubeVirtProfile
	spec := map[string]any{
		"managementState":             "Managed",
		"mode":                        string(o.Mode),
		"deschedulingIntervalSeconds": int64(*o.DeschedulingIntervalSeconds),
		"profiles":                    toAny(mergeProfiles(liveProfiles, chosen, caps.profiles)),
	}
	var details []string
	if isRelieveAndMigrate(chosen) {
		custom := map[string]any{}
		if caps.customizations["devEnableEvictionsInBackground"] {
			custom["devEnableEvictionsInBackground"] = true
		}
		if caps.customizations["devEnableSoftTainter"] {
			custom["devEnableSoftTainter"] = true
		}
		if caps.customizations["devDeviationThresholds"] {
			custom["devDeviationThresholds"] = string(o.DevDeviationThresholds)
			details = append(details, "deviation thresholds "+string(o.DevDeviationThresholds))
		}
		if len(custom) > 0 {
			spec["profileCustomizations"] = custom
		}
	}
	if caps.evictionLimitTotal {
		el := map[string]any{"total": int64(limits.total)}
		detail := fmt.Sprintf("at most %d evictions per run (%s)", limits.total, limits.totalSource)
		if caps.evictionLimitNode {
			el["node"] = int64(limits.node)
			detail += fmt.Sprintf(" and %d per node (%s)", limits.node, limits.nodeSource)
		}
		spec["evictionLimits"] = el
		details = append(details, detail)
	}
	desired := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	desired.SetGroupVersionKind(deschedulerGVK)
	desired.SetNamespace(DeschedulerNamespace)
	desired.SetName(DeschedulerName)

	verb := "will be configured"
	if live == nil {
		verb = "will be created"
	}
	msg := fmt.Sprintf("KubeDescheduler %s %s with profile %s (%s), mode %s, every %ds",
		DeschedulerName, verb, chosen, caps.choiceReason, o.Mode, *o.DeschedulingIntervalSeconds)
	if len(details) > 0 {
		msg += "; " + strings.Join(details, "; ")
	}
	return plan.Item{
		Name:    ItemDescheduler,
		Desired: desired,
		Impact:  advisorv1alpha1.ImpactMedium,
		Message: msg,
	}
}

func psiItem(ctx context.Context, reader client.Reader) (plan.Item, error) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"config":          map[string]any{"ignition": map[string]any{"version": "3.2.0"}},
			"kernelArguments": []any{"psi=1"},
		},
	}}
	desired.SetGroupVersionKind(mcGVK)
	desired.SetName(PSIMachineConfigName)
	desired.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})

	effective, err := psiAlreadyEffective(ctx, reader)
	if err != nil {
		return plan.Item{}, err
	}
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
	return item, nil
}

// psiAlreadyEffective tells whether the worker pool's current rendered configuration
// already carries psi=1, in which case adding it again reboots nothing.
func psiAlreadyEffective(ctx context.Context, reader client.Reader) (bool, error) {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(mcpGVK)
	if err := reader.Get(ctx, types.NamespacedName{Name: "worker"}, pool); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return false, nil
		}
		return false, fmt.Errorf("read MachineConfigPool worker: %w", err)
	}
	rendered, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	if rendered == "" {
		return false, nil
	}
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(mcGVK)
	if err := reader.Get(ctx, types.NamespacedName{Name: rendered}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read rendered MachineConfig %s: %w", rendered, err)
	}
	args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	for _, a := range args {
		if a == "psi=1" {
			return true, nil
		}
	}
	return false, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
