// Package v1alpha1 contains the API of the virt advisor: the VirtPlatformConfig kind
// of group advisor.kubevirt.io, version v1alpha1.
// +kubebuilder:object:generate=true
// +groupName=advisor.kubevirt.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "advisor.kubevirt.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a runtime scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a runtime scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
