// Package loadaware is the load-aware-rebalancing profile: the KubeDescheduler runs the
// best KubeVirt-aware descheduler profile the installed operator offers, and worker nodes
// get the psi=1 kernel argument so the descheduler can see node pressure.
//
// Reading and rendering are separate, as in every profile (see package profiles):
// ReadInputs reads the cluster once, through the recording reader the engine passes;
// RenderItems is a pure function of the options and those typed inputs, tested by tables
// against golden files.
package loadaware

import (
	"context"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// DeschedulerCRD is the KubeDescheduler CRD of the Kube Descheduler Operator.
var DeschedulerCRD = targets.KubeDescheduler.CRD

const (
	// DeschedulerNamespace and DeschedulerName locate the KubeDescheduler singleton.
	DeschedulerNamespace = targets.KubeDeschedulerNamespace
	DeschedulerName      = targets.KubeDeschedulerName
	// PSIMachineConfigName is the MachineConfig that adds psi=1 to worker nodes.
	PSIMachineConfigName = "99-worker-psi-karg"
	// PSIMasterMachineConfigName adds psi=1 to the control plane nodes of a compact
	// cluster, whose control plane nodes run VMs.
	PSIMasterMachineConfigName = "99-master-psi-karg"

	// ItemDescheduler and ItemPSI name the plan items.
	ItemDescheduler = "enable-load-aware-descheduling"
	ItemPSI         = "enable-psi-metrics"
	ItemPSIMasters  = "enable-psi-metrics-masters"

	// Defaults of the options; the CRD declares the same ones.
	defaultIntervalSeconds = 60
	defaultMode            = advisorv1alpha1.DeschedulerModeAutomatic
	defaultDeviation       = advisorv1alpha1.DeviationThresholds("AsymmetricLow")
	// Eviction limits when neither the options nor a HyperConverged give them.
	defaultEvictionLimitTotal = 5
	defaultEvictionLimitNode  = 2
)

// Reads and server-side applies (create or patch) of the targets, reads of what the plan
// depends on; list and watch for the metadata-only drift and input watches.
// +kubebuilder:rbac:groups=operator.openshift.io,resources=kubedeschedulers,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=kubedeschedulers,verbs=create;patch;delete,resourceNames=cluster
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=create;patch;delete,resourceNames=99-worker-psi-karg;99-master-psi-karg
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
	out := []profiles.Prerequisite{{CRD: targets.KubeDescheduler.CRD, Operator: targets.KubeDescheduler.Operator}}
	if o := p.Defaults(opts).LoadAware; *o.EnablePSIMetrics {
		out = append(out, profiles.Prerequisite{
			CRD:      targets.MachineConfig.CRD,
			Operator: targets.MachineConfig.Operator + ", or set options.loadAware.enablePSIMetrics to false",
		})
	}
	return out
}

// WatchedCRDs implements profiles.Profile.
func (*Profile) WatchedCRDs() []string {
	return []string{targets.KubeDescheduler.CRD, targets.MachineConfig.CRD, targets.MachineConfigPool.CRD, targets.HyperConverged.CRD}
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

// Render implements profiles.Profile: it reads the inputs, then renders them.
func (p *Profile) Render(ctx context.Context, reader client.Reader, opts *advisorv1alpha1.ProfileOptions) ([]plan.Item, error) {
	return profiles.ReadAndRender(ctx, reader, p.Defaults(opts).LoadAware, ReadInputs, RenderItems)
}
