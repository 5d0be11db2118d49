package controller

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// NewScheme knows every kind the operator reads typed: the built-in kinds, CRDs (whose
// schemas profiles inspect) and VirtPlatformConfig. Third-party targets are unstructured.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, advisorv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// CacheOptions keeps the manager's cache to what the operator owns or watches: its
// configs and CRD metadata in full, and of every managed kind only the objects that carry
// the managed-by label (metadata only, see targetWatches). Targets themselves are always
// read uncached.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{plan.ManagedByLabel: plan.ManagedByValue}),
		DefaultTransform:     cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&advisorv1alpha1.VirtPlatformConfig{}: {Label: labels.Everything()},
			CRDMetadata():                         {Label: labels.Everything()},
		},
	}
}
