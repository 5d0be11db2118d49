// Package higherdensity is the virt-higher-density profile: more VMs per worker node. The
// cluster's HyperConverged overcommits VM memory (memoryOvercommitPercentage) and runs
// Kernel Samepage Merging (on every node unless the options opt out); worker nodes get swap from a labelled partition, which
// the kubelet lets pods use (LimitedSwap), so an overcommitted node pages out instead of
// killing VMs.
//
// Reading and rendering are separate, as in every profile (see package profiles):
// ReadInputs reads the cluster through the recording reader, RenderItems is a pure function
// of the options and those inputs.
package higherdensity

import (
	"context"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

const (
	// SwapMachineConfigName is the MachineConfig that turns swap on for worker nodes; the
	// platform-baseline profile renders the same one, and the two co-own it.
	SwapMachineConfigName = nodeconfig.SwapMachineConfigName

	// ItemSwap and ItemHyperConverged name the plan items, in execution order: swap
	// exists on the nodes before VM memory is overcommitted.
	ItemSwap           = "enable-kubelet-swap"
	ItemHyperConverged = "increase-vm-density"

	// Defaults of the options; the CRD declares the same ones.
	defaultRatio     = 150
	defaultSwapLabel = "CNV_SWAP"
)

// Reads and server-side applies of the targets; list and watch for the metadata-only
// drift and input watches. The HyperConverged is never created: it must exist.
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=get;list;watch
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=patch,resourceNames=kubevirt-hyperconverged
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=create;patch;delete,resourceNames=90-worker-kubelet-swap
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch

// Profile is the virt-higher-density profile.
type Profile struct{}

// New returns the virt-higher-density profile.
func New() *Profile { return &Profile{} }

var _ profiles.Profile = (*Profile)(nil)

// Name implements profiles.Profile.
func (*Profile) Name() advisorv1alpha1.ProfileName {
	return advisorv1alpha1.ProfileVirtHigherDensity
}

// Description implements profiles.Profile.
func (*Profile) Description() string {
	return "Runs more VMs per worker node: VM memory is overcommitted in the HyperConverged (150% by default) with " +
		"Kernel Samepage Merging (on every node by default), and worker nodes get swap from a labelled partition so " +
		"an overcommitted node pages memory out instead of killing VMs."
}

// ImpactSummary implements profiles.Profile.
func (*Profile) ImpactSummary() string {
	return "High with enableSwap (the default): the swap MachineConfig reboots worker nodes one by one. " +
		"Medium for the HyperConverged: VMs started or migrated afterwards get overcommitted memory."
}

// Prerequisites implements profiles.Profile.
func (p *Profile) Prerequisites(opts *advisorv1alpha1.ProfileOptions) []profiles.Prerequisite {
	out := []profiles.Prerequisite{{CRD: targets.HyperConverged.CRD, Operator: targets.HyperConverged.Operator}}
	if o := p.Defaults(opts).VirtHigherDensity; *o.EnableSwap {
		out = append(out, profiles.Prerequisite{
			CRD: targets.MachineConfig.CRD,
			Operator: targets.MachineConfig.Operator +
				", or set options.virtHigherDensity.enableSwap to false (with memoryToRequestRatio at most 120)",
		})
	}
	return out
}

// WatchedCRDs implements profiles.Profile.
func (*Profile) WatchedCRDs() []string {
	return []string{targets.HyperConverged.CRD, targets.MachineConfig.CRD, targets.MachineConfigPool.CRD}
}

// Defaults implements profiles.Profile.
func (*Profile) Defaults(opts *advisorv1alpha1.ProfileOptions) *advisorv1alpha1.ProfileOptions {
	o := &advisorv1alpha1.VirtHigherDensityOptions{}
	if opts != nil && opts.VirtHigherDensity != nil {
		o = opts.VirtHigherDensity.DeepCopy()
	}
	if o.EnableSwap == nil {
		o.EnableSwap = ptr.To(true)
	}
	if o.MemoryToRequestRatio == nil {
		o.MemoryToRequestRatio = ptr.To[int32](defaultRatio)
	}
	if o.SwapPartitionLabel == "" {
		o.SwapPartitionLabel = defaultSwapLabel
	}
	// KSM on every node unless the options opt out or narrow it.
	if o.KSMConfiguration == nil {
		o.KSMConfiguration = &advisorv1alpha1.KSMConfiguration{}
	}
	if o.KSMConfiguration.Enabled == nil {
		o.KSMConfiguration.Enabled = ptr.To(true)
	}
	return &advisorv1alpha1.ProfileOptions{VirtHigherDensity: o}
}

// Validate implements profiles.Profile. Every rule of these options is enforced at
// admission (the ratio's bounds, and above 120 only with swap).
func (*Profile) Validate(*advisorv1alpha1.ProfileOptions) error { return nil }

// Render implements profiles.Profile: it reads the inputs, then renders them.
func (p *Profile) Render(ctx context.Context, reader client.Reader, opts *advisorv1alpha1.ProfileOptions) ([]plan.Item, error) {
	return profiles.ReadAndRender(ctx, reader, p.Defaults(opts).VirtHigherDensity, ReadInputs, RenderItems)
}
