package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileOptions tunes the selected profile. Only the block named after spec.profile may be
// set (loadAware for load-aware-rebalancing, virtHigherDensity for virt-higher-density,
// platformBaseline for platform-baseline).
type ProfileOptions struct {
	// loadAware tunes the load-aware-rebalancing profile.
	// +optional
	LoadAware *LoadAwareOptions `json:"loadAware,omitempty"`
	// virtHigherDensity tunes the virt-higher-density profile.
	// +optional
	VirtHigherDensity *VirtHigherDensityOptions `json:"virtHigherDensity,omitempty"`
	// platformBaseline tunes the platform-baseline profile.
	// +optional
	PlatformBaseline *PlatformBaselineOptions `json:"platformBaseline,omitempty"`
}

// DeschedulerMode is the KubeDescheduler mode: Automatic evicts, Predictive only
// simulates evictions and reports them as metrics.
// +kubebuilder:validation:Enum=Automatic;Predictive
type DeschedulerMode string

// The descheduler modes.
const (
	DeschedulerModeAutomatic  DeschedulerMode = "Automatic"
	DeschedulerModePredictive DeschedulerMode = "Predictive"
)

// DeviationThresholds is how far a node's load may deviate from the cluster average before
// the KubeVirt descheduler profile relieves it; the Asymmetric variants only relieve nodes
// above the average.
// +kubebuilder:validation:Enum=Low;Medium;High;AsymmetricLow;AsymmetricMedium;AsymmetricHigh
type DeviationThresholds string

// LoadAwareOptions tunes the load-aware-rebalancing profile: the KubeDescheduler
// configuration and the PSI kernel argument on worker nodes.
// +kubebuilder:validation:XValidation:rule="!has(self.evictionLimitNode) || !has(self.evictionLimitTotal) || self.evictionLimitNode <= self.evictionLimitTotal",message="options.loadAware.evictionLimitNode must not exceed evictionLimitTotal"
type LoadAwareOptions struct {
	// deschedulingIntervalSeconds is how often the descheduler runs, 60 to 86400 seconds.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=60
	DeschedulingIntervalSeconds *int32 `json:"deschedulingIntervalSeconds,omitempty"`

	// mode is the KubeDescheduler mode: Automatic evicts (live-migrates VMs), Predictive
	// only simulates. The KubeDescheduler itself defaults to Predictive, which would leave
	// the cluster unbalanced, so this profile sets Automatic unless told otherwise.
	// +optional
	// +kubebuilder:default=Automatic
	Mode DeschedulerMode `json:"mode,omitempty"`

	// enablePSIMetrics adds the psi=1 kernel argument to worker nodes (MachineConfig
	// 99-worker-psi-karg) so the descheduler can see CPU, memory and IO pressure.
	// Applying it reboots the worker nodes one by one.
	// +optional
	// +kubebuilder:default=true
	EnablePSIMetrics *bool `json:"enablePSIMetrics,omitempty"`

	// devDeviationThresholds sets profileCustomizations.devDeviationThresholds of the
	// KubeVirt descheduler profile. Ignored when the installed descheduler has no such field.
	// +optional
	// +kubebuilder:default=AsymmetricLow
	DevDeviationThresholds DeviationThresholds `json:"devDeviationThresholds,omitempty"`

	// evictionLimitTotal caps evictions (live migrations) per descheduling run across the
	// cluster, 1 to 1000. Unset: the HyperConverged parallelMigrationsPerCluster (else 5).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	EvictionLimitTotal *int32 `json:"evictionLimitTotal,omitempty"`

	// evictionLimitNode caps evictions per node per descheduling run, 1 to 100. Unset: the
	// HyperConverged parallelOutboundMigrationsPerNode (else 2). Used only where the
	// installed descheduler has evictionLimits.node.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	EvictionLimitNode *int32 `json:"evictionLimitNode,omitempty"`
}

// KSMConfiguration says whether, and on which nodes, the profile turns on Kernel Samepage
// Merging in the HyperConverged (its ksmConfiguration.nodeLabelSelector).
type KSMConfiguration struct {
	// enabled turns KSM on, on the nodes nodeLabelSelector selects (the default). false
	// opts out: the profile sets no ksmConfiguration in the HyperConverged, so one it set
	// before is removed and one someone else set stays as it is.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// nodeLabelSelector selects the nodes that run KSM; unset or {} selects every node.
	// Ignored when enabled is false.
	// +optional
	NodeLabelSelector *metav1.LabelSelector `json:"nodeLabelSelector,omitempty"`
}

// VirtHigherDensityOptions tunes the virt-higher-density profile: memory overcommit, KSM
// and kubelet swap on worker nodes. The defaults are swap on, KSM on every node and 150%
// memory overcommit.
// +kubebuilder:validation:XValidation:rule="!has(self.memoryToRequestRatio) || self.memoryToRequestRatio <= 120 || (has(self.enableSwap) && self.enableSwap)",message="options.virtHigherDensity.memoryToRequestRatio above 120 requires enableSwap: true"
type VirtHigherDensityOptions struct {
	// enableSwap provisions swap on worker nodes from the partition labelled
	// swapPartitionLabel and lets the kubelet use it (LimitedSwap). Reboots workers.
	// +optional
	// +kubebuilder:default=true
	EnableSwap *bool `json:"enableSwap,omitempty"`

	// memoryToRequestRatio is the memory overcommit percentage: the memory a VM sees
	// relative to what its pod requests, 100 to 300. Above 120 requires enableSwap.
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=150
	MemoryToRequestRatio *int32 `json:"memoryToRequestRatio,omitempty"`

	// ksmConfiguration runs Kernel Samepage Merging, which merges identical memory pages of
	// running VMs in the background at some CPU cost: by default on every node. Set
	// enabled: false to opt out, nodeLabelSelector to run it on some nodes only.
	// +optional
	// +kubebuilder:default={}
	KSMConfiguration *KSMConfiguration `json:"ksmConfiguration,omitempty"`

	// swapPartitionLabel is the GPT label of the partition that holds swap on each worker,
	// found at /dev/disk/by-partlabel/<label>: 1 to 36 of A-Z a-z 0-9 _ . -, and not . or ..
	// (which name directories there). A node without it boots with swap off.
	// +optional
	// +kubebuilder:default=CNV_SWAP
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,36}$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="swapPartitionLabel must name a partition, not . or .. (directories of /dev/disk/by-partlabel)"
	SwapPartitionLabel string `json:"swapPartitionLabel,omitempty"`
}

// PlatformBaselineOptions tunes the platform-baseline profile: one block per component,
// each with an enabled switch. A component whose operator is not installed is skipped.
type PlatformBaselineOptions struct {
	// swap provisions kubelet swap on worker nodes (MachineConfig; reboots workers).
	// +optional
	// +kubebuilder:default={}
	Swap *BaselineSwapOptions `json:"swap,omitempty"`
	// numa enables NUMA-aware placement, only where nodes report several NUMA nodes.
	// +optional
	// +kubebuilder:default={}
	NUMA *BaselineNUMAOptions `json:"numa,omitempty"`
	// pciPassthrough turns on the IOMMU (intel_iommu=on iommu=pt) so PCI devices can be
	// passed to VMs (MachineConfig; reboots workers).
	// +optional
	// +kubebuilder:default={}
	PCIPassthrough *BaselinePCIPassthroughOptions `json:"pciPassthrough,omitempty"`
	// vfio binds the listed PCI devices to vfio-pci and permits them in the HyperConverged.
	// +optional
	// +kubebuilder:default={}
	VFIO *BaselineVFIOOptions `json:"vfio,omitempty"`
	// usbPassthrough permits the listed USB host devices in the HyperConverged.
	// +optional
	// +kubebuilder:default={}
	USBPassthrough *BaselineUSBPassthroughOptions `json:"usbPassthrough,omitempty"`
	// kubeletPerformance tunes the worker kubelets (KubeletConfig).
	// +optional
	// +kubebuilder:default={}
	KubeletPerformance *BaselineKubeletPerformanceOptions `json:"kubeletPerformance,omitempty"`
	// nodeHealthCheck remediates unhealthy workers with Self Node Remediation.
	// +optional
	// +kubebuilder:default={}
	NodeHealthCheck *BaselineNodeHealthCheckOptions `json:"nodeHealthCheck,omitempty"`
	// mtv configures the Migration Toolkit for Virtualization (ForkliftController).
	// +optional
	// +kubebuilder:default={}
	MTV *BaselineMTVOptions `json:"mtv,omitempty"`
	// metalLB deploys MetalLB so VMs can be exposed with LoadBalancer services.
	// +optional
	// +kubebuilder:default={}
	MetalLB *BaselineMetalLBOptions `json:"metalLB,omitempty"`
	// aaq turns on the Application Aware Quota through the HyperConverged.
	// +optional
	// +kubebuilder:default={}
	AAQ *BaselineAAQOptions `json:"aaq,omitempty"`
}

// BaselineSwapOptions configures the swap component of platform-baseline.
type BaselineSwapOptions struct {
	// enabled plans the swap MachineConfig.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// partitionLabel is the GPT label of the partition that holds swap on each worker, found
	// at /dev/disk/by-partlabel/<label>: 1 to 36 of A-Z a-z 0-9 _ . -, and not . or ..
	// (which name directories there). A node without it boots with swap off.
	// +optional
	// +kubebuilder:default=CNV_SWAP
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,36}$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="partitionLabel must name a partition, not . or .. (directories of /dev/disk/by-partlabel)"
	PartitionLabel string `json:"partitionLabel,omitempty"`
}

// BaselineNUMAOptions configures the NUMA component of platform-baseline.
type BaselineNUMAOptions struct {
	// enabled plans NUMA-aware placement where nodes report several NUMA nodes.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// BaselinePCIPassthroughOptions configures the PCI passthrough component of platform-baseline.
type BaselinePCIPassthroughOptions struct {
	// enabled plans the IOMMU kernel arguments MachineConfig.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// PCIDevice is a PCI device model to pass through to VMs.
type PCIDevice struct {
	// vendorDevice is the PCI vendor and device ID, e.g. 10de:1eb8.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$`
	VendorDevice string `json:"vendorDevice"`
	// resourceName is the extended resource VMs request, e.g. nvidia.com/TU104GL_Tesla_T4.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	ResourceName string `json:"resourceName"`
}

// BaselineVFIOOptions configures the VFIO component of platform-baseline.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || (has(self.devices) && size(self.devices) > 0)",message="options.platformBaseline.vfio.enabled requires at least one device"
type BaselineVFIOOptions struct {
	// enabled plans the vfio-pci MachineConfig and the HyperConverged permitted devices.
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`
	// devices are the PCI device models bound to vfio-pci.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=vendorDevice
	Devices []PCIDevice `json:"devices,omitempty"`
}

// USBDevice is a USB device model to pass through to VMs.
type USBDevice struct {
	// vendor is the USB vendor ID, e.g. 046d.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}$`
	Vendor string `json:"vendor"`
	// product is the USB product ID, e.g. c52b.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}$`
	Product string `json:"product"`
	// resourceName is the extended resource VMs request, e.g. kubevirt.io/usb-receiver.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	ResourceName string `json:"resourceName"`
}

// BaselineUSBPassthroughOptions configures the USB passthrough component of platform-baseline.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || (has(self.devices) && size(self.devices) > 0)",message="options.platformBaseline.usbPassthrough.enabled requires at least one device"
type BaselineUSBPassthroughOptions struct {
	// enabled plans the HyperConverged permitted USB host devices.
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`
	// devices are the USB device models VMs may use.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=resourceName
	Devices []USBDevice `json:"devices,omitempty"`
}

// BaselineKubeletPerformanceOptions configures the kubelet component of platform-baseline.
type BaselineKubeletPerformanceOptions struct {
	// enabled plans the KubeletConfig (nodeStatusMaxImages -1, maxPods, autoSizingReserved).
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// maxPods is the number of pods a worker may run, 10 to 2500.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=2500
	// +kubebuilder:default=500
	MaxPods *int32 `json:"maxPods,omitempty"`
	// autoSizingReserved lets the kubelet size its system reservation from the node's capacity.
	// +optional
	// +kubebuilder:default=true
	AutoSizingReserved *bool `json:"autoSizingReserved,omitempty"`
	// cpuManager turns on the static CPU manager policy for dedicated VM CPUs (opt-in).
	// +optional
	// +kubebuilder:default=false
	CPUManager *bool `json:"cpuManager,omitempty"`
}

// BaselineNodeHealthCheckOptions configures the node health check component of platform-baseline.
type BaselineNodeHealthCheckOptions struct {
	// enabled plans a NodeHealthCheck for workers (Ready False/Unknown for 300s, minHealthy
	// 51%) remediated by Self Node Remediation.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// BaselineMTVOptions configures the migration toolkit component of platform-baseline.
type BaselineMTVOptions struct {
	// enabled plans the ForkliftController.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// BaselineMetalLBOptions configures the MetalLB component of platform-baseline.
type BaselineMetalLBOptions struct {
	// enabled plans the MetalLB instance.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
}

// BaselineAAQOptions configures the Application Aware Quota component of platform-baseline.
type BaselineAAQOptions struct {
	// enabled turns on AAQ in the HyperConverged (opt-in).
	// +optional
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled,omitempty"`
}
