package approvals

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The admission policies tell a change of what a plan is drafted from by comparing the
// spec's fields one by one (specChanged): every field of the CRD's spec but action and the
// pins (approvedPlanHash, approvedContent) must be compared in every policy that does, or a change of a new field
// would be neither recorded nor approved.
func TestThePoliciesCompareEverySpecFieldThePlanIsDraftedFrom(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "advisor.kubevirt.io_virtplatformconfigs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for name := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
		if name != "action" && name != "approvedPlanHash" && name != "approvedContent" {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	if len(fields) == 0 {
		t.Fatal("the CRD's spec has no fields")
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "policies", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	compared := regexp.MustCompile(`object\.spec\.\?(\w+)`)
	checked := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(text), -1) {
			if !regexp.MustCompile(`name: specChanged`).MatchString(doc) {
				continue
			}
			checked++
			seen := map[string]bool{}
			for _, m := range compared.FindAllStringSubmatch(doc, -1) {
				seen[m[1]] = true
			}
			for _, field := range fields {
				if !seen[field] {
					t.Errorf("%s: a policy's specChanged does not compare spec.%s", filepath.Base(f), field)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no policy compares the spec")
	}
}
