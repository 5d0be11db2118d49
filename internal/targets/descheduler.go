package targets

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The KubeDescheduler singleton: the Kube Descheduler Operator acts only on the object named
// cluster in its own namespace.
const (
	KubeDeschedulerNamespace = "openshift-kube-descheduler-operator"
	KubeDeschedulerName      = "cluster"
)

// DeschedulerSchema is what the installed KubeDescheduler CRD offers. Its schema changes
// with every operator release (profiles come and go, customizations and eviction limits
// were added), so a plan is built from what the cluster serves, not from a fixed list.
type DeschedulerSchema struct {
	// Profiles is the spec.profiles enum, in schema order.
	Profiles []string `json:"profiles"`
	// Customizations are the keys of spec.profileCustomizations.
	Customizations []string `json:"customizations,omitempty"`
	// EvictionLimitTotal and EvictionLimitNode tell whether spec.evictionLimits.total and
	// .node exist.
	EvictionLimitTotal bool `json:"evictionLimitTotal,omitempty"`
	EvictionLimitNode  bool `json:"evictionLimitNode,omitempty"`
}

// HasCustomization tells whether spec.profileCustomizations has the key.
func (s DeschedulerSchema) HasCustomization(key string) bool {
	for _, k := range s.Customizations {
		if k == key {
			return true
		}
	}
	return false
}

// ReadDeschedulerSchema reads the schema of the served v1 KubeDescheduler. A missing CRD
// or one without a v1 spec schema is a PrerequisiteError.
func ReadDeschedulerSchema(ctx context.Context, reader client.Reader) (DeschedulerSchema, error) {
	crd, err := KubeDescheduler.ReadCRD(ctx, reader)
	switch {
	case err != nil:
		return DeschedulerSchema{}, err
	case crd == nil:
		return DeschedulerSchema{}, &PrerequisiteError{Message: fmt.Sprintf(
			"the KubeDescheduler CRD is missing: install %s", KubeDescheduler.Operator)}
	}
	return DeschedulerSchemaOf(crd)
}

// DeschedulerSchemaOf reads the schema out of a KubeDescheduler CRD.
func DeschedulerSchemaOf(crd *apiextensionsv1.CustomResourceDefinition) (DeschedulerSchema, error) {
	var spec *apiextensionsv1.JSONSchemaProps
	if v, ok := KubeDescheduler.ServedVersion(crd); ok && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		if s, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]; ok {
			spec = &s
		}
	}
	if spec == nil {
		return DeschedulerSchema{}, &PrerequisiteError{Message: fmt.Sprintf(
			"the KubeDescheduler CRD does not serve %s with a spec schema: upgrade %s",
			KubeDescheduler.GVK.Version, KubeDescheduler.Operator)}
	}
	var s DeschedulerSchema
	if p, ok := spec.Properties["profiles"]; ok && p.Items != nil && p.Items.Schema != nil {
		for _, e := range p.Items.Schema.Enum {
			s.Profiles = append(s.Profiles, strings.Trim(string(e.Raw), `"`))
		}
	}
	if pc, ok := spec.Properties["profileCustomizations"]; ok {
		for k := range pc.Properties {
			s.Customizations = append(s.Customizations, k)
		}
		sort.Strings(s.Customizations)
	}
	if el, ok := spec.Properties["evictionLimits"]; ok {
		_, s.EvictionLimitTotal = el.Properties["total"]
		_, s.EvictionLimitNode = el.Properties["node"]
	}
	return s, nil
}
