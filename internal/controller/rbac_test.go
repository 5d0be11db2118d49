package controller_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// canI asks the API server whether user may do verb on VirtPlatformConfigs.
func canI(user, verb string) string {
	GinkgoHelper()
	out, _ := run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "auth", "can-i", verb, "virtplatformconfigs.advisor.kubevirt.io", "--as="+user)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1] // after kubectl's warnings, the answer
}

var _ = Describe("Roles for people", func() {
	It("approving is a cluster-admin act: one role approves, and no role that can draft or approve is aggregated into the built-in admin or edit roles", func() {
		installer := kubectl("kustomize", testenv.Path("config", "default"))
		dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(installer), 4096)
		writers, approvers := 0, 0
		for {
			role := &rbacv1.ClusterRole{}
			if err := dec.Decode(role); err != nil {
				break
			}
			if role.Kind != "ClusterRole" {
				continue
			}
			for _, rule := range role.Rules {
				if !contains(rule.Resources, "virtplatformconfigs") {
					continue
				}
				if role.Name == "virt-advisor-operator-manager-role" {
					continue
				}
				if contains(rule.Verbs, "approve") {
					approvers++
				}
				if contains(rule.Verbs, "patch") || contains(rule.Verbs, "update") || contains(rule.Verbs, "create") || contains(rule.Verbs, "approve") {
					writers++
					Expect(role.Labels).NotTo(HaveKey("rbac.authorization.k8s.io/aggregate-to-edit"), role.Name)
					Expect(role.Labels).NotTo(HaveKey("rbac.authorization.k8s.io/aggregate-to-admin"), role.Name)
				}
			}
		}
		Expect(approvers).To(Equal(1), "one role approves plans")
		Expect(writers).To(Equal(2), "the editor drafts, the approver drafts and approves")
	})

	It("the viewer role reviews plans and cannot approve them; the approver role approves", func() {
		kubectl("apply", "-f", testenv.Path("config", "rbac", "virtplatformconfig_viewer_role.yaml"),
			"-f", testenv.Path("config", "rbac", "virtplatformconfig_approver_role.yaml"))
		kubectl("create", "clusterrolebinding", "test-reviewer", "--clusterrole=virtplatformconfig-viewer-role", "--user=reviewer")
		kubectl("create", "clusterrolebinding", "test-approver", "--clusterrole=virtplatformconfig-approver-role", "--user=approver")
		DeferCleanup(kubectl, "delete", "clusterrolebinding", "test-reviewer", "test-approver")

		Expect(canI("reviewer", "get")).To(Equal("yes"))
		Expect(canI("reviewer", "patch")).To(Equal("no"))
		Expect(canI("approver", "patch")).To(Equal("yes"))
		Expect(canI("nobody", "get")).To(Equal("no"))
	})
})

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
