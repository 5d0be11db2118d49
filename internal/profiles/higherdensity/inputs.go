package higherdensity

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Inputs is what the plan depends on: the cluster's one HyperConverged, at the API
// version the cluster serves, and its current values of the fields the plan sets.
type Inputs struct {
	// Namespace and Name locate the HyperConverged.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Version is the HyperConverged API version the cluster serves (v1, else v1beta1).
	Version string `json:"version"`
	// Overcommit is the current memoryOvercommitPercentage, when set.
	Overcommit *int64 `json:"overcommit,omitempty"`
	// KSM is the current ksmConfiguration, when set.
	KSM map[string]any `json:"ksm,omitempty"`
}

// ReadInputs finds the HyperConverged by listing it at the version the cluster serves:
// none, or several, is a prerequisite error that says which. Every option set reads the
// same.
func ReadInputs(ctx context.Context, reader client.Reader, _ *advisorv1alpha1.VirtHigherDensityOptions) (Inputs, error) {
	hco, err := targets.RequireHyperConverged(ctx, reader)
	if err != nil {
		return Inputs{}, err
	}
	in := Inputs{Namespace: hco.Namespace(), Name: hco.Name(), Version: hco.Fields.Version}
	if v, ok := hco.Int64(hco.Fields.MemoryOvercommitPercentage()); ok {
		in.Overcommit = &v
	}
	if ksm, ok, _ := unstructured.NestedMap(hco.Object.Object, hco.Fields.KSMConfiguration()...); ok {
		in.KSM = ksm
	}
	return in, nil
}
