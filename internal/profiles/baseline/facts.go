package baseline

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
)

// The node labels of Node Feature Discovery the profile decides from (see
// nodeconfig.IsFactLabel, which keeps them).
const (
	LabelNUMA      = nodeconfig.LabelNUMA
	LabelCPUVendor = nodeconfig.LabelCPUVendor
	LabelIOMMU     = nodeconfig.LabelIOMMU
	pciPrefix      = nodeconfig.PCIPrefix
	usbPrefix      = nodeconfig.USBPrefix
	presentSuffix  = nodeconfig.PresentSuffix
)

// Worker is a worker node: its name and its labels.
type Worker struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Facts are the hardware facts of the worker nodes, from their labels: how many workers
// report each fact the profile decides from. Nothing else of a node is kept, so the facts
// of thousands of nodes take no more room than those of one.
type Facts struct {
	// Workers counts the worker nodes.
	Workers int `json:"workers"`
	// MultiNUMA counts the workers that report more than one NUMA node; ReportingNUMA
	// those that report their NUMA layout at all.
	MultiNUMA     int `json:"multiNUMA,omitempty"`
	ReportingNUMA int `json:"reportingNUMA,omitempty"`
	// IOMMUEnabled counts the workers that already run with the IOMMU on.
	IOMMUEnabled int `json:"iommuEnabled,omitempty"`
	// CPUVendors counts the workers by CPU vendor; workers that report none are left out.
	CPUVendors map[nodeconfig.CPUVendor]int `json:"cpuVendors,omitempty"`
	// PCIVendors counts, by vendor (4 lower-case hex digits), the workers that report a PCI
	// device of the vendor.
	PCIVendors map[string]int `json:"pciVendors,omitempty"`
	// USBDevices counts, by lower-case <vendor>_<product>, the workers that report the USB
	// device.
	USBDevices map[string]int `json:"usbDevices,omitempty"`
}

// FactsOf are the facts of the workers.
func FactsOf(workers ...Worker) Facts {
	var f Facts
	for _, w := range workers {
		f.Add(w.Labels)
	}
	return f
}

// Add counts the facts of one more worker, from its labels.
func (f *Facts) Add(labels map[string]string) {
	f.Workers++
	if numa, ok := labels[LabelNUMA]; ok {
		f.ReportingNUMA++
		if numa == "true" {
			f.MultiNUMA++
		}
	}
	if labels[LabelIOMMU] == "true" {
		f.IOMMUEnabled++
	}
	switch labels[LabelCPUVendor] {
	case "Intel", "GenuineIntel":
		addOne(&f.CPUVendors, nodeconfig.VendorIntel)
	case "AMD", "AuthenticAMD":
		addOne(&f.CPUVendors, nodeconfig.VendorAMD)
	}
	// A worker counts once for each vendor and device it reports, however many labels
	// report it.
	var pci, usb []string
	for k, v := range labels {
		if v != "true" || !strings.HasSuffix(k, presentSuffix) {
			continue
		}
		switch {
		case strings.HasPrefix(k, pciPrefix):
			// <class>_<vendor> or <class>_<vendor>_<device>
			parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, pciPrefix), presentSuffix), "_")
			if len(parts) >= 2 && !slices.Contains(pci, strings.ToLower(parts[1])) {
				pci = append(pci, strings.ToLower(parts[1]))
			}
		case strings.HasPrefix(k, usbPrefix):
			// <class>_<vendor>_<device>
			parts := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(k, usbPrefix), presentSuffix), "_", 2)
			if len(parts) == 2 && !slices.Contains(usb, strings.ToLower(parts[1])) {
				usb = append(usb, strings.ToLower(parts[1]))
			}
		}
	}
	for _, vendor := range pci {
		addOne(&f.PCIVendors, vendor)
	}
	for _, device := range usb {
		addOne(&f.USBDevices, device)
	}
}

// addOne adds one to (*counts)[key], making the map when there is none.
func addOne[K comparable](counts *map[K]int, key K) {
	if *counts == nil {
		*counts = map[K]int{}
	}
	(*counts)[key]++
}

// count is "n of m workers".
func (f Facts) count(n int) string { return fmt.Sprintf("%d of %d workers", n, f.Workers) }

// WithPCIVendor counts the workers that report a PCI device of the vendor (4 hex digits).
func (f Facts) WithPCIVendor(vendor string) int { return f.PCIVendors[strings.ToLower(vendor)] }

// WithUSBDevice counts the workers that report a USB device of vendor and product.
func (f Facts) WithUSBDevice(vendor, product string) int {
	return f.USBDevices[strings.ToLower(vendor+"_"+product)]
}

// vendorList lists the vendors found, in a stable order, with their counts.
func (f Facts) vendorList() ([]nodeconfig.CPUVendor, string) {
	counts := f.CPUVendors
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
