package baseline

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// RenderItems is the plan for the defaulted options o on a cluster that reads as in: a
// pure function, so every combination is tested without a cluster. Every enabled component
// renders its item, or the item Skipped with the reason; components that write one object
// (the KubeletConfig, the HyperConverged) are fragments of one item. No options or inputs
// make it fail: a component that cannot be planned is a Skipped item.
func RenderItems(o *advisorv1alpha1.PlatformBaselineOptions, in Inputs) ([]plan.Item, error) {
	var items []plan.Item
	if on(o.Swap.Enabled) {
		items = append(items, swapItem(o.Swap, in))
	}
	if on(o.NUMA.Enabled) {
		items = append(items, numaFragment(in))
	}
	if on(o.KubeletPerformance.Enabled) {
		items = append(items, kubeletFragment(o.KubeletPerformance, in))
	}
	if on(o.PCIPassthrough.Enabled) {
		items = append(items, iommuItem(in))
	}
	if on(o.VFIO.Enabled) {
		items = append(items, vfioItem(o.VFIO, in))
	}
	if on(o.NodeHealthCheck.Enabled) {
		items = append(items, nodeHealthItem(in))
	}
	if on(o.MTV.Enabled) {
		items = append(items, mtvItem(in))
	}
	if on(o.MetalLB.Enabled) {
		items = append(items, metalLBItem(in))
	}
	if on(o.VFIO.Enabled) {
		items = append(items, hcoFragment(in, ComponentVFIO, advisorv1alpha1.ImpactLow, pciHostDevices(o.VFIO, in)))
	}
	if on(o.USBPassthrough.Enabled) {
		items = append(items, hcoFragment(in, ComponentUSB, advisorv1alpha1.ImpactLow, usbHostDevices(o.USBPassthrough, in)))
	}
	if on(o.AAQ.Enabled) {
		items = append(items, hcoFragment(in, ComponentAAQ, advisorv1alpha1.ImpactMedium, aaq(in)))
	}
	return items, nil
}

// missingCRD is the skip reason of a component whose kind the cluster lacks, or "".
func missingCRD(in Inputs, kinds ...targets.Kind) string {
	for _, k := range kinds {
		if !in.served(k) {
			return fmt.Sprintf("CRD %s is missing: install %s", k.CRD, k.Operator)
		}
	}
	return ""
}

func swapItem(o *advisorv1alpha1.BaselineSwapOptions, in Inputs) plan.Item {
	return plan.Item{
		Name:       ItemSwap,
		Component:  ComponentSwap,
		Desired:    nodeconfig.SwapMachineConfig(o.PartitionLabel),
		Impact:     advisorv1alpha1.ImpactHigh,
		Message:    nodeconfig.SwapMessage(o.PartitionLabel),
		SkipReason: missingCRD(in, targets.MachineConfig),
	}
}

// kubeletConfig is the worker pool's KubeletConfig with the given spec.kubeletConfig and
// other spec fields.
func kubeletConfig(kubelet map[string]any, spec map[string]any) *unstructured.Unstructured {
	s := map[string]any{
		"machineConfigPoolSelector": map[string]any{"matchLabels": map[string]any{nodeconfig.WorkerPoolLabel: ""}},
	}
	if len(kubelet) > 0 {
		s["kubeletConfig"] = kubelet
	}
	for k, v := range spec {
		s[k] = v
	}
	kc := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	kc.SetGroupVersionKind(targets.KubeletConfig.GVK)
	kc.SetName(KubeletConfigName)
	return kc
}

func numaFragment(in Inputs) plan.Item {
	it := plan.Item{
		Name:      ItemKubelet,
		Component: ComponentNUMA,
		Desired:   kubeletConfig(map[string]any{"topologyManagerPolicy": "best-effort"}, nil),
		Impact:    advisorv1alpha1.ImpactHigh,
	}
	f := in.Facts
	multi := f.MultiNUMA
	facts := fmt.Sprintf("%s report several NUMA nodes (%s=true)", f.count(multi), LabelNUMA)
	switch {
	case missingCRD(in, targets.KubeletConfig) != "":
		it.SkipReason = missingCRD(in, targets.KubeletConfig)
	case f.Workers == 0:
		it.SkipReason = "the cluster has no worker nodes (label " + nodeconfig.WorkerNodeLabel + "), so no NUMA facts"
	case f.ReportingNUMA == 0:
		it.SkipReason = fmt.Sprintf("no worker reports its NUMA layout (label %s, set by Node Feature Discovery): "+
			"install Node Feature Discovery to plan NUMA-aware placement", LabelNUMA)
	case multi == 0:
		it.SkipReason = facts + ": every worker has one NUMA node, so NUMA-aware placement would change nothing"
	default:
		it.Message = facts + ": KubeletConfig " + KubeletConfigName + " sets the kubelet's topology manager to best-effort, " +
			"which puts a VM's dedicated CPUs, memory and devices on one NUMA node where it can (with the static CPU manager, " +
			"options.platformBaseline.kubeletPerformance.cpuManager) and still admits the VM where it cannot"
	}
	return it
}

func kubeletFragment(o *advisorv1alpha1.BaselineKubeletPerformanceOptions, in Inputs) plan.Item {
	kubelet := map[string]any{"nodeStatusMaxImages": int64(-1), "maxPods": int64(*o.MaxPods)}
	parts := []string{
		"nodeStatusMaxImages -1 (a node reports every image it has, so the scheduler's image locality does not pile VMs onto a few nodes)",
		fmt.Sprintf("maxPods %d (each VM is a pod, plus its helpers)", *o.MaxPods),
	}
	if *o.CPUManager {
		kubelet["cpuManagerPolicy"] = "static"
		kubelet["cpuManagerReconcilePeriod"] = "5s"
		parts = append(parts, "cpuManagerPolicy static (VMs with dedicated CPUs get whole cores)")
	}
	parts = append(parts, fmt.Sprintf("autoSizingReserved %t (the system reservation %s)", *o.AutoSizingReserved,
		map[bool]string{true: "grows with the node's capacity", false: "is set by hand"}[*o.AutoSizingReserved]))
	return plan.Item{
		Name:      ItemKubelet,
		Component: ComponentKubelet,
		Desired:   kubeletConfig(kubelet, map[string]any{"autoSizingReserved": *o.AutoSizingReserved}),
		Impact:    advisorv1alpha1.ImpactHigh,
		Message: "KubeletConfig " + KubeletConfigName + " for the worker pool: " + strings.Join(parts, "; ") +
			"; the Machine Config Operator drains and reboots worker nodes one by one",
		SkipReason: missingCRD(in, targets.KubeletConfig),
	}
}

func iommuItem(in Inputs) plan.Item {
	f := in.Facts
	vendors, found := f.vendorList()
	it := plan.Item{
		Name:      ItemIOMMU,
		Component: ComponentPCI,
		Desired:   nodeconfig.IOMMUMachineConfig(vendors),
		Impact:    advisorv1alpha1.ImpactHigh,
	}
	switch {
	case missingCRD(in, targets.MachineConfig) != "":
		it.SkipReason = missingCRD(in, targets.MachineConfig)
	case len(vendors) == 0:
		it.SkipReason = fmt.Sprintf("no worker reports its CPU vendor (label %s, set by Node Feature Discovery), so the IOMMU "+
			"kernel arguments cannot be chosen: install Node Feature Discovery", LabelCPUVendor)
	default:
		it.Message = fmt.Sprintf("%s; %s already run with the IOMMU on (%s=true): MachineConfig %s adds the kernel arguments %s "+
			"to worker nodes, so PCI devices can be passed through to VMs; the Machine Config Operator reboots worker nodes one by one",
			found, f.count(f.IOMMUEnabled), LabelIOMMU, nodeconfig.IOMMUMachineConfigName,
			strings.Join(nodeconfig.IOMMUArguments(vendors), " "))
	}
	return it
}

// pciFacts says which workers report the devices' vendors, and whether any does.
func pciFacts(o *advisorv1alpha1.BaselineVFIOOptions, f Facts) (string, bool) {
	parts := make([]string, 0, len(o.Devices))
	anyFound := false
	for _, d := range o.Devices {
		vendor, _, _ := strings.Cut(d.VendorDevice, ":")
		n := f.WithPCIVendor(vendor)
		anyFound = anyFound || n > 0
		parts = append(parts, fmt.Sprintf("%s report a PCI device of vendor %s (for %s)", f.count(n), strings.ToLower(vendor), d.VendorDevice))
	}
	return strings.Join(parts, ", "), anyFound
}

// noPCIDevice is the skip reason of VFIO when no worker reports a listed device.
func noPCIDevice(facts string) string {
	return facts + ": no worker reports a listed device (labels " + pciPrefix + "<class>_<vendor>.present, set by Node Feature Discovery)"
}

func vfioIDs(o *advisorv1alpha1.BaselineVFIOOptions) []string {
	ids := make([]string, 0, len(o.Devices))
	for _, d := range o.Devices {
		ids = append(ids, strings.ToLower(d.VendorDevice))
	}
	return ids
}

func vfioItem(o *advisorv1alpha1.BaselineVFIOOptions, in Inputs) plan.Item {
	facts, found := pciFacts(o, in.Facts)
	it := plan.Item{
		Name:      ItemVFIO,
		Component: ComponentVFIO,
		Desired:   nodeconfig.VFIOMachineConfig(vfioIDs(o)),
		Impact:    advisorv1alpha1.ImpactHigh,
		Message: fmt.Sprintf("%s: MachineConfig %s binds the PCI devices %s to vfio-pci at boot (%s), so their host drivers "+
			"leave them to VMs; the Machine Config Operator reboots worker nodes one by one",
			facts, nodeconfig.VFIOMachineConfigName, strings.Join(vfioIDs(o), ", "), nodeconfig.VFIOModprobePath),
	}
	switch {
	case missingCRD(in, targets.MachineConfig) != "":
		it.SkipReason = missingCRD(in, targets.MachineConfig)
	case !found:
		it.SkipReason = noPCIDevice(facts)
	}
	return it
}

func nodeHealthItem(in Inputs) plan.Item {
	tmpl := Instance{Name: SelfNodeRemediationDefault}
	if in.RemediationTemplate != nil {
		tmpl = *in.RemediationTemplate
	}
	nhc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"minHealthy": "51%",
		"selector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": nodeconfig.WorkerNodeLabel, "operator": "Exists"},
			map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
			map[string]any{"key": "node-role.kubernetes.io/master", "operator": "DoesNotExist"},
		}},
		"unhealthyConditions": []any{
			map[string]any{"type": "Ready", "status": "False", "duration": "300s"},
			map[string]any{"type": "Ready", "status": "Unknown", "duration": "300s"},
		},
		"remediationTemplate": map[string]any{
			"apiVersion": targets.SelfNodeRemediationTemplate.GVK.GroupVersion().String(),
			"kind":       targets.SelfNodeRemediationTemplate.GVK.Kind,
			"namespace":  tmpl.Namespace,
			"name":       tmpl.Name,
		},
	}}}
	nhc.SetGroupVersionKind(targets.NodeHealthCheck.GVK)
	nhc.SetName(NodeHealthCheckName)
	it := plan.Item{
		Name:      ItemNodeHealth,
		Component: ComponentNodeHealth,
		Desired:   nhc,
		Impact:    advisorv1alpha1.ImpactLow,
		Message: fmt.Sprintf("NodeHealthCheck %s watches worker nodes that are not control-plane nodes: one whose Ready condition "+
			"is False or Unknown for 300s is remediated by Self Node Remediation (template %s/%s: the node reboots itself and its VMs "+
			"restart elsewhere), only while at least 51%% of the selected nodes are healthy", NodeHealthCheckName, tmpl.Namespace, tmpl.Name),
	}
	switch {
	case missingCRD(in, targets.NodeHealthCheck, targets.SelfNodeRemediationTemplate) != "":
		it.SkipReason = missingCRD(in, targets.NodeHealthCheck, targets.SelfNodeRemediationTemplate)
	case in.RemediationTemplate == nil:
		it.SkipReason = fmt.Sprintf("no SelfNodeRemediationTemplate exists yet: %s creates %s in its namespace once it runs",
			targets.SelfNodeRemediationTemplate.Operator, SelfNodeRemediationDefault)
	}
	return it
}

// placed is an object of kind k where p says, with spec.
func placed(k targets.Kind, p Placement, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if len(spec) > 0 {
		obj.Object["spec"] = spec
	}
	obj.SetGroupVersionKind(k.GVK)
	obj.SetNamespace(p.Namespace)
	obj.SetName(p.Name)
	return obj
}

// placementSkip is the skip reason of a component whose object cannot be placed, or "".
func placementSkip(in Inputs, k targets.Kind, p Placement) string {
	if reason := missingCRD(in, k); reason != "" {
		return reason
	}
	return p.Problem
}

func existing(p Placement) string {
	if p.Exists {
		return "the existing "
	}
	return "a new "
}

func mtvItem(in Inputs) plan.Item {
	p := in.MTV
	if p.Name == "" {
		p.Instance = Instance{Namespace: MTVNamespace, Name: ForkliftControllerName}
	}
	// The CRD declares every feature_* field a string: "true", not true.
	return plan.Item{
		Name:      ItemMTV,
		Component: ComponentMTV,
		Desired: placed(targets.ForkliftController, p, map[string]any{
			"feature_ui_plugin":        "true",
			"feature_validation":       "true",
			"feature_volume_populator": "true",
		}),
		Impact: advisorv1alpha1.ImpactLow,
		Message: fmt.Sprintf("%sForkliftController %s/%s turns on the Migration Toolkit for Virtualization's console plugin, "+
			"the validation of VMs before migration, and volume populators (disks copied straight into their PVCs); "+
			"running migrations are not interrupted", existing(p), p.Namespace, p.Name),
		SkipReason: placementSkip(in, targets.ForkliftController, in.MTV),
	}
}

func metalLBItem(in Inputs) plan.Item {
	p := in.MetalLB
	if p.Name == "" {
		p.Instance = Instance{Namespace: MetalLBNamespace, Name: MetalLBName}
	}
	return plan.Item{
		Name:      ItemMetalLB,
		Component: ComponentMetalLB,
		Desired:   placed(targets.MetalLB, p, nil),
		Impact:    advisorv1alpha1.ImpactLow,
		Message: fmt.Sprintf("%sMetalLB %s/%s makes the MetalLB operator run its controller and speakers, so services of type "+
			"LoadBalancer (VMs exposed outside the cluster) get addresses from the IPAddressPools the administrator defines",
			existing(p), p.Namespace, p.Name),
		SkipReason: placementSkip(in, targets.MetalLB, in.MetalLB),
	}
}

// hcoPart is one component's part of the HyperConverged: its fields at the served
// version's paths, what it does, and why it is skipped.
type hcoPart struct {
	set     func(obj map[string]any, f targets.HyperConvergedFields) error
	message string
	skip    string
}

func hcoFragment(in Inputs, component string, impact advisorv1alpha1.ImpactSeverity, part hcoPart) plan.Item {
	hco := HyperConverged{Instance: Instance{Namespace: targets.OpenShiftHyperConvergedNamespace, Name: "kubevirt-hyperconverged"}, Version: "v1"}
	if in.HyperConverged != nil {
		hco = *in.HyperConverged
	}
	desired := &unstructured.Unstructured{Object: map[string]any{}}
	desired.SetAPIVersion(targets.HyperConverged.GVK.Group + "/" + hco.Version)
	desired.SetKind(targets.HyperConverged.GVK.Kind)
	desired.SetNamespace(hco.Namespace)
	desired.SetName(hco.Name)
	it := plan.Item{
		Name:      ItemHyperConverged,
		Component: component,
		Desired:   desired,
		Impact:    impact,
		Message:   fmt.Sprintf("HyperConverged %s/%s (%s): %s", hco.Namespace, hco.Name, hco.Version, part.message),
	}
	switch {
	case missingCRD(in, targets.HyperConverged) != "":
		it.SkipReason = missingCRD(in, targets.HyperConverged)
	case in.HyperConverged == nil:
		it.SkipReason = in.HyperConvergedProblem
	case part.skip != "":
		it.SkipReason = part.skip
	default:
		if err := part.set(desired.Object, targets.HyperConvergedFields{Version: hco.Version}); err != nil {
			it.SkipReason = "cannot render: " + err.Error()
		}
	}
	return it
}

func pciHostDevices(o *advisorv1alpha1.BaselineVFIOOptions, in Inputs) hcoPart {
	facts, found := pciFacts(o, in.Facts)
	entries := make([]any, 0, len(o.Devices))
	names := make([]string, 0, len(o.Devices))
	for _, d := range o.Devices {
		entries = append(entries, map[string]any{"pciDeviceSelector": strings.ToUpper(d.VendorDevice), "resourceName": d.ResourceName})
		names = append(names, strings.ToUpper(d.VendorDevice)+" as "+d.ResourceName)
	}
	part := hcoPart{
		message: "permits the PCI host devices " + strings.Join(names, ", ") + " (bound to vfio-pci by item " + ItemVFIO +
			"), so VMs can request them by resource name",
		set: func(obj map[string]any, f targets.HyperConvergedFields) error {
			return unstructured.SetNestedSlice(obj, entries, append(f.PermittedHostDevices(), "pciHostDevices")...)
		},
	}
	if !found {
		part.skip = noPCIDevice(facts)
	}
	return part
}

func usbHostDevices(o *advisorv1alpha1.BaselineUSBPassthroughOptions, in Inputs) hcoPart {
	f := in.Facts
	entries := make([]any, 0, len(o.Devices))
	facts := make([]string, 0, len(o.Devices))
	anyFound := false
	for _, d := range o.Devices {
		entries = append(entries, map[string]any{
			"resourceName": d.ResourceName,
			"selectors":    []any{map[string]any{"vendor": strings.ToLower(d.Vendor), "product": strings.ToLower(d.Product)}},
		})
		n := f.WithUSBDevice(d.Vendor, d.Product)
		anyFound = anyFound || n > 0
		facts = append(facts, fmt.Sprintf("%s report USB device %s:%s (%s)", f.count(n), strings.ToLower(d.Vendor), strings.ToLower(d.Product), d.ResourceName))
	}
	part := hcoPart{
		message: strings.Join(facts, ", ") + ": permits these USB host devices, so VMs can request them by resource name",
		set: func(obj map[string]any, f targets.HyperConvergedFields) error {
			return unstructured.SetNestedSlice(obj, entries, append(f.PermittedHostDevices(), "usbHostDevices")...)
		},
	}
	if !anyFound {
		part.skip = strings.Join(facts, ", ") + ": no worker reports a listed device (labels " + usbPrefix +
			"<class>_<vendor>_<device>.present, set by Node Feature Discovery)"
	}
	return part
}

func aaq(Inputs) hcoPart {
	return hcoPart{
		message: "turns on the Application Aware Quota, so resource quotas count what a VM needs rather than what its " +
			"virt-launcher pod's overhead adds; pods in quota-limited namespaces are gated until AAQ admits them",
		set: func(obj map[string]any, f targets.HyperConvergedFields) error {
			return unstructured.SetNestedField(obj, true, f.ApplicationAwareQuotaEnabled()...)
		},
	}
}
