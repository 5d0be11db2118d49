package install

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The admission policies and the roles for people, as installed (docs/approvals.md).
const (
	editorRole   = "virt-advisor-operator-virtplatformconfig-editor-role"
	approverRole = "virt-advisor-operator-virtplatformconfig-approver-role"
)

// expectPoliciesWork checks on an installed operator that the policies are in force with the
// shipped roles: an editor's approval of the config virtPlatformConfig created is refused,
// naming the verb approve, and an approver's is recorded under their name.
func (cp *controlPlane) expectPoliciesWork() {
	GinkgoHelper()
	for _, kind := range []string{"mutatingadmissionpolicybindings", "validatingadmissionpolicybindings"} {
		cp.kubectl("get", kind, "virt-advisor-operator-approval-identity")
	}
	cp.kubectl("get", "validatingadmissionpolicybindings", "virt-advisor-operator-approve-verb", "virt-advisor-operator-four-eyes")
	cp.kubectl("create", "clusterrolebinding", "policies-editor", "--clusterrole="+editorRole, "--user=eve")
	cp.kubectl("create", "clusterrolebinding", "policies-approver", "--clusterrole="+approverRole, "--user=ann")
	approve := []string{"patch", "vpc", "load-aware-rebalancing", "--type=merge", "-p", `{"spec":{"action":"Apply"}}`}
	// Policies are loaded by the API server asynchronously.
	Eventually(func() string {
		out, _ := cp.kubectlAs("eve", append(approve, "--dry-run=server")...)
		return out
	}, 30*time.Second, 200*time.Millisecond).Should(ContainSubstring(
		"needs the verb approve on virtplatformconfigs.advisor.kubevirt.io, which eve lacks: the ClusterRole " + approverRole + " grants it"))
	out, err := cp.kubectlAs("ann", append(approve, "--dry-run=server", "-o", "jsonpath={.metadata.annotations}")...)
	Expect(err).NotTo(HaveOccurred(), out)
	Expect(out).To(ContainSubstring(`"advisor.kubevirt.io/approved-by":"ann"`))
	cp.kubectl("delete", "clusterrolebinding", "policies-editor", "policies-approver")
}

// kubectlAs runs kubectl as user (impersonated) and returns its output and error.
func (cp *controlPlane) kubectlAs(user string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--as=" + user}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

var _ = Describe("The chart's admission policies", func() {
	DescribeTable("are all on by default; each value turns its own off",
		func(values string, want int) {
			var args []string
			if values != "" {
				args = []string{"--set", values}
			}
			n := 0
			for _, obj := range renderChart(args...) {
				if strings.HasSuffix(obj.GetKind(), "AdmissionPolicy") || strings.HasSuffix(obj.GetKind(), "AdmissionPolicyBinding") {
					n++
				}
			}
			Expect(n).To(Equal(want))
		},
		Entry("default", "", 10),
		Entry("identity off", "policies.identity.enable=false", 6),
		Entry("approve verb off", "policies.approveVerb.enable=false", 8),
		Entry("four-eyes off", "policies.fourEyes.enable=false", 6),
	)
})
