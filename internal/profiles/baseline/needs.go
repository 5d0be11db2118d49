package baseline

import (
	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Needs says what the enabled components need to read.
type Needs struct {
	// Nodes: the worker nodes' hardware facts.
	Nodes bool
	// HyperConverged: the cluster's HyperConverged.
	HyperConverged bool
	// CRDs of the kinds the enabled components write (or, for the Self Node Remediation
	// template, refer to).
	CRDs map[string]bool
}

func (n Needs) kind(k targets.Kind) bool { return n.CRDs[k.CRD] }

// NeedsOf is what the defaulted options o need.
func NeedsOf(o *advisorv1alpha1.PlatformBaselineOptions) Needs {
	n := Needs{CRDs: map[string]bool{}}
	add := func(kinds ...targets.Kind) {
		for _, k := range kinds {
			n.CRDs[k.CRD] = true
		}
	}
	if on(o.Swap.Enabled) || on(o.PCIPassthrough.Enabled) || on(o.VFIO.Enabled) {
		add(targets.MachineConfig)
	}
	if on(o.NUMA.Enabled) || on(o.KubeletPerformance.Enabled) {
		add(targets.KubeletConfig)
	}
	if on(o.NUMA.Enabled) || on(o.PCIPassthrough.Enabled) || on(o.VFIO.Enabled) || on(o.USBPassthrough.Enabled) {
		n.Nodes = true
	}
	if on(o.VFIO.Enabled) || on(o.USBPassthrough.Enabled) || on(o.AAQ.Enabled) {
		add(targets.HyperConverged)
		n.HyperConverged = true
	}
	if on(o.NodeHealthCheck.Enabled) {
		add(targets.NodeHealthCheck, targets.SelfNodeRemediationTemplate)
	}
	if on(o.MTV.Enabled) {
		add(targets.ForkliftController)
	}
	if on(o.MetalLB.Enabled) {
		add(targets.MetalLB)
	}
	return n
}

func on(b *bool) bool { return b != nil && *b }
