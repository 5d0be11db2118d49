package baseline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
)

// The node labels of Node Feature Discovery the profile decides from.
const (
	nfdPrefix = "feature.node.kubernetes.io/"
	// LabelNUMA is "true" on a node with more than one NUMA node.
	LabelNUMA = nfdPrefix + "memory-numa"
	// LabelCPUVendor is the CPU vendor: Intel or AMD.
	LabelCPUVendor = nfdPrefix + "cpu-model.vendor_id"
	// LabelIOMMU is "true" on a node that runs with the IOMMU on.
	LabelIOMMU = nfdPrefix + "iommu-enabled"
	// pciPrefix and usbPrefix start the device labels: pci-<class>_<vendor>[_<device>].present
	// and usb-<class>_<vendor>_<device>.present.
	pciPrefix     = nfdPrefix + "pci-"
	usbPrefix     = nfdPrefix + "usb-"
	presentSuffix = ".present"
)

// Worker is what the profile keeps of a worker node: its name and its labels. Nodes are
// read metadata-only, so their status never reaches the operator.
type Worker struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Facts are the hardware facts of the worker nodes, from their labels.
type Facts struct {
	Workers []Worker `json:"workers"`
}

// count is "n of m workers".
func (f Facts) count(n int) string { return fmt.Sprintf("%d of %d workers", n, len(f.Workers)) }

// withLabel counts the workers whose label key has value.
func (f Facts) withLabel(key, value string) int {
	n := 0
	for _, w := range f.Workers {
		if w.Labels[key] == value {
			n++
		}
	}
	return n
}

// MultiNUMA counts the workers that report more than one NUMA node.
func (f Facts) MultiNUMA() int { return f.withLabel(LabelNUMA, "true") }

// ReportingNUMA counts the workers that report their NUMA layout at all.
func (f Facts) ReportingNUMA() int {
	n := 0
	for _, w := range f.Workers {
		if _, ok := w.Labels[LabelNUMA]; ok {
			n++
		}
	}
	return n
}

// IOMMUEnabled counts the workers that already run with the IOMMU on.
func (f Facts) IOMMUEnabled() int { return f.withLabel(LabelIOMMU, "true") }

// CPUVendors counts the workers by CPU vendor; workers that report none are left out.
func (f Facts) CPUVendors() map[nodeconfig.CPUVendor]int {
	out := map[nodeconfig.CPUVendor]int{}
	for _, w := range f.Workers {
		switch w.Labels[LabelCPUVendor] {
		case "Intel", "GenuineIntel":
			out[nodeconfig.VendorIntel]++
		case "AMD", "AuthenticAMD":
			out[nodeconfig.VendorAMD]++
		}
	}
	return out
}

// WithPCIVendor counts the workers that report a PCI device of the vendor (4 hex digits).
func (f Facts) WithPCIVendor(vendor string) int {
	vendor = strings.ToLower(vendor)
	n := 0
	for _, w := range f.Workers {
		for k, v := range w.Labels {
			if v != "true" || !strings.HasPrefix(k, pciPrefix) || !strings.HasSuffix(k, presentSuffix) {
				continue
			}
			// <class>_<vendor> or <class>_<vendor>_<device>
			parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, pciPrefix), presentSuffix), "_")
			if len(parts) >= 2 && strings.ToLower(parts[1]) == vendor {
				n++
				break
			}
		}
	}
	return n
}

// WithUSBDevice counts the workers that report a USB device of vendor and product.
func (f Facts) WithUSBDevice(vendor, product string) int {
	want := strings.ToLower(vendor + "_" + product)
	n := 0
	for _, w := range f.Workers {
		for k, v := range w.Labels {
			if v != "true" || !strings.HasPrefix(k, usbPrefix) || !strings.HasSuffix(k, presentSuffix) {
				continue
			}
			// <class>_<vendor>_<device>
			parts := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(k, usbPrefix), presentSuffix), "_", 2)
			if len(parts) == 2 && strings.ToLower(parts[1]) == want {
				n++
				break
			}
		}
	}
	return n
}

// vendorList lists the vendors found, in a stable order, with their counts.
func (f Facts) vendorList() ([]nodeconfig.CPUVendor, string) {
	counts := f.CPUVendors()
	vendors := make([]nodeconfig.CPUVendor, 0, len(counts))
	for v := range counts {
		vendors = append(vendors, v)
	}
	sort.Slice(vendors, func(i, j int) bool { return vendors[i] < vendors[j] })
	parts := make([]string, 0, len(vendors))
	for _, v := range vendors {
		parts = append(parts, fmt.Sprintf("%s report %s CPUs", f.count(counts[v]), v))
	}
	return vendors, strings.Join(parts, ", ")
}
