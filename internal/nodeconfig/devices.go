package nodeconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// IOMMUMachineConfigName is the MachineConfig that turns the IOMMU on for PCI passthrough.
	IOMMUMachineConfigName = "90-worker-iommu"
	// VFIOMachineConfigName is the MachineConfig that binds PCI devices to vfio-pci.
	VFIOMachineConfigName = "90-worker-vfio-pci"

	// VFIOModprobePath gives vfio-pci the device IDs to claim; VFIOModulesLoadPath loads the
	// module early, before the devices' own drivers can claim them.
	VFIOModprobePath    = "/etc/modprobe.d/virt-advisor-vfio.conf"
	VFIOModulesLoadPath = "/etc/modules-load.d/virt-advisor-vfio-pci.conf"
)

// CPUVendor is the CPU vendor of a worker, as Node Feature Discovery reports it.
type CPUVendor string

// The CPU vendors whose IOMMU kernel arguments differ.
const (
	VendorIntel CPUVendor = "Intel"
	VendorAMD   CPUVendor = "AMD"
)

// IOMMUArguments are the kernel arguments that turn the IOMMU on for the given CPU vendors,
// in a stable order: intel_iommu=on for Intel, amd_iommu=on for AMD, and iommu=pt (pass-through
// for host devices, so only devices given to VMs pay for translation).
func IOMMUArguments(vendors []CPUVendor) []string {
	has := map[CPUVendor]bool{}
	for _, v := range vendors {
		has[v] = true
	}
	var args []string
	if has[VendorAMD] {
		args = append(args, "amd_iommu=on")
	}
	if has[VendorIntel] {
		args = append(args, "intel_iommu=on")
	}
	return append(args, "iommu=pt")
}

// IOMMUMachineConfig adds the IOMMU kernel arguments to worker nodes.
func IOMMUMachineConfig(vendors []CPUVendor) *unstructured.Unstructured {
	args := IOMMUArguments(vendors)
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return workerMachineConfig(IOMMUMachineConfigName, map[string]any{
		"config":          map[string]any{"ignition": map[string]any{"version": IgnitionVersion}},
		"kernelArguments": out,
	})
}

// VFIOIgnition is the Ignition config that binds the PCI devices with the given
// vendor:device IDs to vfio-pci at boot.
func VFIOIgnition(ids []string) map[string]any {
	lower := make([]string, len(ids))
	for i, id := range ids {
		lower[i] = strings.ToLower(id)
	}
	return map[string]any{
		"ignition": map[string]any{"version": IgnitionVersion},
		"storage": map[string]any{"files": []any{
			map[string]any{
				"path":      VFIOModprobePath,
				"mode":      int64(0o644),
				"overwrite": true,
				"contents":  map[string]any{"source": dataURL(fmt.Sprintf("options vfio-pci ids=%s\n", strings.Join(lower, ",")))},
			},
			map[string]any{
				"path":      VFIOModulesLoadPath,
				"mode":      int64(0o644),
				"overwrite": true,
				"contents":  map[string]any{"source": dataURL("vfio-pci\n")},
			},
		}},
	}
}

// VFIOMachineConfig binds the PCI devices with the given vendor:device IDs to vfio-pci on
// worker nodes.
func VFIOMachineConfig(ids []string) *unstructured.Unstructured {
	return workerMachineConfig(VFIOMachineConfigName, map[string]any{"config": VFIOIgnition(ids)})
}
