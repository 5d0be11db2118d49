// Package baseline is the platform-baseline profile: the always-on substrate of a
// virtualization cluster, one component per block of options.platformBaseline. A
// component whose operator is not installed, or whose hardware the worker nodes do not
// report, is a Skipped item that says why; the others are planned and applied, so the
// profile degrades gracefully instead of failing. Installing the missing operator later
// redrafts the plan (the CRDs are inputs of the plan) and the new item needs review.
//
// Hardware facts come from the worker nodes' labels, as Node Feature Discovery sets them,
// read metadata-only. Components that write one object are fragments of one item: NUMA and
// kubelet performance share the worker KubeletConfig, and VFIO, USB passthrough and AAQ the
// HyperConverged (see docs/design-decisions.md).
package baseline

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

// The plan's items, in execution order: node changes first (each rolls out to the worker
// pool before the next starts), then the operators' objects, then the HyperConverged, which
// permits devices the node changes made available.
const (
	ItemSwap           = "enable-kubelet-swap"
	ItemKubelet        = "tune-worker-kubelet"
	ItemIOMMU          = "enable-iommu"
	ItemVFIO           = "bind-vfio-devices"
	ItemNodeHealth     = "remediate-unhealthy-workers"
	ItemMTV            = "configure-mtv"
	ItemMetalLB        = "deploy-metallb"
	ItemHyperConverged = "configure-hyperconverged"
)

// The components, named as their blocks in options.platformBaseline.
const (
	ComponentSwap       = "swap"
	ComponentNUMA       = "numa"
	ComponentPCI        = "pciPassthrough"
	ComponentVFIO       = "vfio"
	ComponentUSB        = "usbPassthrough"
	ComponentKubelet    = "kubeletPerformance"
	ComponentNodeHealth = "nodeHealthCheck"
	ComponentMTV        = "mtv"
	ComponentMetalLB    = "metalLB"
	ComponentAAQ        = "aaq"
)

// Names of the objects the profile creates.
const (
	KubeletConfigName   = "virt-advisor-kubelet"
	NodeHealthCheckName = "virt-advisor-worker-health"
)

// Defaults of the options; the CRD declares the same ones.
const (
	defaultSwapLabel = "CNV_SWAP"
	defaultMaxPods   = 500
)

// Reads and server-side applies of the targets; list and watch for the metadata-only
// drift and input watches. Nodes are listed and watched metadata-only, for their labels.
// The HyperConverged is never created: it must exist.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=create;patch;delete,resourceNames=90-worker-kubelet-swap;90-worker-iommu;90-worker-vfio-pci
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs,verbs=create;patch;delete,resourceNames=virt-advisor-kubelet
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=get;list;watch
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=patch,resourceNames=kubevirt-hyperconverged
// +kubebuilder:rbac:groups=remediation.medik8s.io,resources=nodehealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=remediation.medik8s.io,resources=nodehealthchecks,verbs=create;patch;delete,resourceNames=virt-advisor-worker-health
// +kubebuilder:rbac:groups=self-node-remediation.medik8s.io,resources=selfnoderemediationtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=forklift.konveyor.io,resources=forkliftcontrollers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=forklift.konveyor.io,resources=forkliftcontrollers,verbs=create;delete,resourceNames=forklift-controller
// +kubebuilder:rbac:groups=metallb.io,resources=metallbs,verbs=get;list;watch
// +kubebuilder:rbac:groups=metallb.io,resources=metallbs,verbs=create;patch;delete,resourceNames=metallb

// Profile is the platform-baseline profile.
type Profile struct{}

// New returns the platform-baseline profile.
func New() *Profile { return &Profile{} }

var _ profiles.Profile = (*Profile)(nil)

// Name implements profiles.Profile.
func (*Profile) Name() advisorv1alpha1.ProfileName { return advisorv1alpha1.ProfilePlatformBaseline }

// Description implements profiles.Profile.
func (*Profile) Description() string {
	return "The always-on substrate of a virtualization cluster, one item per component: worker swap, NUMA-aware " +
		"placement, PCI passthrough (IOMMU), VFIO and USB host devices, kubelet performance settings, node health " +
		"checks with Self Node Remediation, MTV, MetalLB and the Application Aware Quota. A component whose operator " +
		"is not installed, or whose hardware no worker reports, is skipped with the reason."
}

// ImpactSummary implements profiles.Profile.
func (*Profile) ImpactSummary() string {
	return "High: the swap, IOMMU and VFIO MachineConfigs and the worker KubeletConfig each reboot worker nodes one by one. " +
		"Low for the node health check, MTV and MetalLB; Medium for AAQ in the HyperConverged."
}

// Prerequisites implements profiles.Profile: none, every component is optional.
func (*Profile) Prerequisites(*advisorv1alpha1.ProfileOptions) []profiles.Prerequisite { return nil }

// WatchedCRDs implements profiles.Profile.
func (*Profile) WatchedCRDs() []string {
	out := make([]string, 0, len(componentKinds)+1)
	for _, k := range componentKinds {
		out = append(out, k.CRD)
	}
	return append(out, targets.MachineConfigPool.CRD)
}

// Defaults implements profiles.Profile.
func (*Profile) Defaults(opts *advisorv1alpha1.ProfileOptions) *advisorv1alpha1.ProfileOptions {
	o := &advisorv1alpha1.PlatformBaselineOptions{}
	if opts != nil && opts.PlatformBaseline != nil {
		o = opts.PlatformBaseline.DeepCopy()
	}
	orDefault := func(b **bool, def bool) {
		if *b == nil {
			*b = ptr.To(def)
		}
	}
	if o.Swap == nil {
		o.Swap = &advisorv1alpha1.BaselineSwapOptions{}
	}
	orDefault(&o.Swap.Enabled, true)
	if o.Swap.PartitionLabel == "" {
		o.Swap.PartitionLabel = defaultSwapLabel
	}
	if o.NUMA == nil {
		o.NUMA = &advisorv1alpha1.BaselineNUMAOptions{}
	}
	orDefault(&o.NUMA.Enabled, true)
	if o.PCIPassthrough == nil {
		o.PCIPassthrough = &advisorv1alpha1.BaselinePCIPassthroughOptions{}
	}
	orDefault(&o.PCIPassthrough.Enabled, true)
	if o.VFIO == nil {
		o.VFIO = &advisorv1alpha1.BaselineVFIOOptions{}
	}
	orDefault(&o.VFIO.Enabled, false)
	if o.USBPassthrough == nil {
		o.USBPassthrough = &advisorv1alpha1.BaselineUSBPassthroughOptions{}
	}
	orDefault(&o.USBPassthrough.Enabled, false)
	if o.KubeletPerformance == nil {
		o.KubeletPerformance = &advisorv1alpha1.BaselineKubeletPerformanceOptions{}
	}
	k := o.KubeletPerformance
	orDefault(&k.Enabled, true)
	if k.MaxPods == nil {
		k.MaxPods = ptr.To[int32](defaultMaxPods)
	}
	orDefault(&k.AutoSizingReserved, true)
	orDefault(&k.CPUManager, false)
	if o.NodeHealthCheck == nil {
		o.NodeHealthCheck = &advisorv1alpha1.BaselineNodeHealthCheckOptions{}
	}
	orDefault(&o.NodeHealthCheck.Enabled, true)
	if o.MTV == nil {
		o.MTV = &advisorv1alpha1.BaselineMTVOptions{}
	}
	orDefault(&o.MTV.Enabled, true)
	if o.MetalLB == nil {
		o.MetalLB = &advisorv1alpha1.BaselineMetalLBOptions{}
	}
	orDefault(&o.MetalLB.Enabled, true)
	if o.AAQ == nil {
		o.AAQ = &advisorv1alpha1.BaselineAAQOptions{}
	}
	orDefault(&o.AAQ.Enabled, false)
	return &advisorv1alpha1.ProfileOptions{PlatformBaseline: o}
}

// Validate implements profiles.Profile. Every rule of these options is enforced at
// admission (patterns, bounds, and devices for enabled VFIO and USB passthrough).
func (*Profile) Validate(*advisorv1alpha1.ProfileOptions) error { return nil }

// Render implements profiles.Profile: it reads the inputs, then renders them.
func (p *Profile) Render(ctx context.Context, reader client.Reader, opts *advisorv1alpha1.ProfileOptions) ([]plan.Item, error) {
	return profiles.ReadAndRender(ctx, reader, p.Defaults(opts).PlatformBaseline, ReadInputs, RenderItems)
}

// SwapMachineConfigName is the swap MachineConfig, the same object virt-higher-density
// renders: the two profiles co-own it.
const SwapMachineConfigName = nodeconfig.SwapMachineConfigName
