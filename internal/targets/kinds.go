// Package targets is the one home of every third-party kind the operator reads or writes:
// its GroupVersionKind, its CRD and the operator that provides it, version-aware typed
// field paths, and how to tell that an applied object took effect. It is a leaf package:
// profiles and the plan engine ask it, it asks nobody in this project but the pure
// internal/vmforecast, which decides from the KubeVirt objects it reads.
package targets

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one third-party kind.
type Kind struct {
	// GVK at the version the operator reads and writes (for a kind with Versions, the
	// best one: the served version is chosen at run time).
	GVK schema.GroupVersionKind
	// CRD is the name of its CustomResourceDefinition.
	CRD string
	// Operator is what an administrator installs to get the CRD, in words that fit
	// "install ...".
	Operator string
	// Namespaced tells whether its objects live in a namespace.
	Namespaced bool
	// Versions are the API versions the operator can read and write the kind at, best
	// first, when it knows more than the one of GVK (the HyperConverged); nil otherwise.
	Versions []string
}

// GroupKind of the kind.
func (k Kind) GroupKind() schema.GroupKind { return k.GVK.GroupKind() }

// ListGVK is the GroupVersionKind of a list of the kind, at version.
func (k Kind) ListGVK(version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.GVK.Group, Version: version, Kind: k.GVK.Kind + "List"}
}

// usableVersions are the API versions the operator can use for the kind, best first.
func (k Kind) usableVersions() []string {
	if len(k.Versions) > 0 {
		return k.Versions
	}
	return []string{k.GVK.Version}
}

// The third-party kinds.
var (
	MachineConfig = Kind{
		GVK:      schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"},
		CRD:      "machineconfigs.machineconfiguration.openshift.io",
		Operator: "the Machine Config Operator (OpenShift)",
	}
	MachineConfigPool = Kind{
		GVK:      schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"},
		CRD:      "machineconfigpools.machineconfiguration.openshift.io",
		Operator: "the Machine Config Operator (OpenShift)",
	}
	KubeletConfig = Kind{
		GVK:      schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"},
		CRD:      "kubeletconfigs.machineconfiguration.openshift.io",
		Operator: "the Machine Config Operator (OpenShift)",
	}
	KubeDescheduler = Kind{
		GVK:        schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"},
		CRD:        "kubedeschedulers.operator.openshift.io",
		Operator:   "the Kube Descheduler Operator",
		Namespaced: true,
	}
	HyperConverged = Kind{
		GVK:        schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1", Kind: "HyperConverged"},
		CRD:        "hyperconvergeds.hco.kubevirt.io",
		Operator:   "OpenShift Virtualization (the HyperConverged Cluster Operator)",
		Namespaced: true,
		// v1 moved most fields under spec.virtualization and spec.deployment; a cluster
		// that serves only v1beta1 has them at spec.
		Versions: []string{"v1", "v1beta1"},
	}
	// MachineConfiguration is the Machine Config Operator's own configuration; its object
	// cluster carries the node disruption policy.
	MachineConfiguration = Kind{
		GVK:      schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "MachineConfiguration"},
		CRD:      "machineconfigurations.operator.openshift.io",
		Operator: "the Machine Config Operator (OpenShift)",
	}
	// Scheduler is the cluster's scheduler configuration; its object cluster says whether
	// control plane nodes run workloads.
	Scheduler = Kind{
		GVK:      schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"},
		CRD:      "schedulers.config.openshift.io",
		Operator: "OpenShift",
	}
	// ClusterVersion is the cluster's version; its object version says whether a cluster
	// upgrade is in flight.
	ClusterVersion = Kind{
		GVK:      schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterVersion"},
		CRD:      "clusterversions.config.openshift.io",
		Operator: "OpenShift",
	}
	NodeHealthCheck = Kind{
		GVK:      schema.GroupVersionKind{Group: "remediation.medik8s.io", Version: "v1alpha1", Kind: "NodeHealthCheck"},
		CRD:      "nodehealthchecks.remediation.medik8s.io",
		Operator: "the Node Health Check Operator",
	}
	SelfNodeRemediationTemplate = Kind{
		GVK:        schema.GroupVersionKind{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Kind: "SelfNodeRemediationTemplate"},
		CRD:        "selfnoderemediationtemplates.self-node-remediation.medik8s.io",
		Operator:   "the Self Node Remediation Operator",
		Namespaced: true,
	}
	ForkliftController = Kind{
		GVK:        schema.GroupVersionKind{Group: "forklift.konveyor.io", Version: "v1beta1", Kind: "ForkliftController"},
		CRD:        "forkliftcontrollers.forklift.konveyor.io",
		Operator:   "the Migration Toolkit for Virtualization Operator",
		Namespaced: true,
	}
	MetalLB = Kind{
		GVK:        schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta1", Kind: "MetalLB"},
		CRD:        "metallbs.metallb.io",
		Operator:   "the MetalLB Operator",
		Namespaced: true,
	}
	AAQ = Kind{
		GVK:      schema.GroupVersionKind{Group: "aaq.kubevirt.io", Version: "v1alpha1", Kind: "AAQ"},
		CRD:      "aaqs.aaq.kubevirt.io",
		Operator: "OpenShift Virtualization (the HyperConverged Cluster Operator)",
	}
)

// All are every third-party kind, for lookups by GroupKind.
var All = []Kind{
	MachineConfig, MachineConfigPool, KubeletConfig, MachineConfiguration, Scheduler, ClusterVersion,
	KubeDescheduler, HyperConverged, NodeHealthCheck, SelfNodeRemediationTemplate, ForkliftController, MetalLB, AAQ,
}

// ByGroupKind finds a third-party kind.
func ByGroupKind(gk schema.GroupKind) (Kind, bool) {
	for _, k := range All {
		if k.GroupKind() == gk {
			return k, true
		}
	}
	return Kind{}, false
}

// OperatorOf names what to install to get gk, for messages about a kind the cluster does
// not serve.
func OperatorOf(gk schema.GroupKind) string {
	if k, ok := ByGroupKind(gk); ok {
		return k.Operator
	}
	return "the operator that provides " + gk.String()
}
