package install

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// forbiddenVerbs let their holder gain permissions it does not have.
var forbiddenVerbs = []string{"escalate", "bind", "impersonate"}

// privilegeViolations lists what in the rules of a Role or ClusterRole breaks least privilege:
// a wildcard, access to Secrets, or a verb that grants more permissions.
func privilegeViolations(obj *unstructured.Unstructured) []string {
	GinkgoHelper()
	var role struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role)).To(Succeed())
	var out []string
	for i, rule := range role.Rules {
		at := fmt.Sprintf("%s rule %d", ref(obj), i)
		for field, values := range map[string][]string{
			"apiGroups": rule.APIGroups, "resources": rule.Resources, "verbs": rule.Verbs,
			"resourceNames": rule.ResourceNames,
		} {
			if slices.Contains(values, rbacv1.ResourceAll) {
				out = append(out, fmt.Sprintf("%s: wildcard in %s", at, field))
			}
		}
		for _, url := range rule.NonResourceURLs {
			if strings.HasSuffix(url, "*") {
				out = append(out, fmt.Sprintf("%s: wildcard non-resource URL %s", at, url))
			}
		}
		for _, resource := range rule.Resources {
			if resource == "secrets" || strings.HasPrefix(resource, "secrets/") {
				out = append(out, fmt.Sprintf("%s: grants access to %s", at, resource))
			}
		}
		for _, verb := range rule.Verbs {
			if slices.Contains(forbiddenVerbs, verb) {
				out = append(out, fmt.Sprintf("%s: verb %s", at, verb))
			}
		}
	}
	return out
}

var _ = Describe("The RBAC the operator ships", func() {
	DescribeTable("has no wildcard, no access to Secrets and no escalate, bind or impersonate verb",
		func(path string) {
			var roles int
			var violations []string
			for _, obj := range readObjects(path) {
				if obj.GetKind() == "Role" || obj.GetKind() == "ClusterRole" {
					roles++
					violations = append(violations, privilegeViolations(obj)...)
				}
			}
			Expect(roles).To(BeNumerically(">", 0), "%s holds no Role or ClusterRole", path)
			Expect(violations).To(BeEmpty())
		},
		Entry("config/rbac/role.yaml (generated from the +kubebuilder:rbac markers)",
			testenv.Path("config", "rbac", "role.yaml")),
		Entry("dist/install.yaml", testenv.Path("dist", "install.yaml")),
	)

	It("flags every kind of violation it looks for", func() {
		read := []string{"get"}
		role := &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "too-much"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"*"}, Resources: []string{"pods"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: read},
				{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"escalate", "bind"}},
				{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}},
				{NonResourceURLs: []string{"/metrics/*"}, Verbs: read},
			},
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(role)
		Expect(err).NotTo(HaveOccurred())
		Expect(privilegeViolations(&unstructured.Unstructured{Object: obj})).To(HaveLen(8))
	})
})
