package plan_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

func TestShareReadOnlySharesCRDsOnly(t *testing.T) {
	src := &apiextensionsv1.CustomResourceDefinition{}
	src.Name = "hyperconvergeds.hco.kubevirt.io"
	src.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true}}
	dst := &apiextensionsv1.CustomResourceDefinition{}
	if !plan.ShareReadOnly(dst, src) {
		t.Fatal("a CRD is not shared")
	}
	if dst.Name != src.Name || &dst.Spec.Versions[0] != &src.Spec.Versions[0] {
		t.Fatalf("the CRD was copied instead of shared: %+v", dst)
	}

	u := &unstructured.Unstructured{Object: map[string]any{"kind": "KubeDescheduler"}}
	if plan.ShareReadOnly(&unstructured.Unstructured{}, u) {
		t.Fatal("an object other than a CRD is shared: its readers may change it")
	}
	if plan.ShareReadOnly(&unstructured.Unstructured{}, src) {
		t.Fatal("a CRD is shared into another type")
	}
}
