package nodeconfig

import "strings"

// The labels of a Node that the profiles decide from: whether it is a worker, and the
// hardware facts Node Feature Discovery reports. The operator keeps nothing else of a
// Node (see watches.CacheOptions): a profile that reads another label of a Node must add
// it here.
const (
	// NFDPrefix starts every label Node Feature Discovery sets.
	NFDPrefix = "feature.node.kubernetes.io/"
	// LabelNUMA is "true" on a node with more than one NUMA node.
	LabelNUMA = NFDPrefix + "memory-numa"
	// LabelCPUVendor is the CPU vendor: Intel or AMD.
	LabelCPUVendor = NFDPrefix + "cpu-model.vendor_id"
	// LabelIOMMU is "true" on a node that runs with the IOMMU on.
	LabelIOMMU = NFDPrefix + "iommu-enabled"
	// PCIPrefix and USBPrefix start the device labels, which end in PresentSuffix:
	// pci-<class>_<vendor>[_<device>].present and usb-<class>_<vendor>_<device>.present.
	PCIPrefix     = NFDPrefix + "pci-"
	USBPrefix     = NFDPrefix + "usb-"
	PresentSuffix = ".present"
)

// IsFactLabel tells whether a profile decides from the Node label key.
func IsFactLabel(key string) bool {
	switch key {
	case WorkerNodeLabel, LabelNUMA, LabelCPUVendor, LabelIOMMU:
		return true
	}
	return strings.HasSuffix(key, PresentSuffix) && (strings.HasPrefix(key, PCIPrefix) || strings.HasPrefix(key, USBPrefix))
}
