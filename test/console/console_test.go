package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/cli"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// forecastLine is a pool's line of `kubectl virt-advisor plan` (internal/cli/plan.go).
var forecastLine = regexp.MustCompile(`MachineConfigPool (\S+): (\d+) node\(s\) (reboot once|update \(no reboot\)), ` +
	`in (\d+) wave\(s\) of at most (\S+); estimated duration (.+)`)

// poolForecast is what the page must show for a pool: the numbers the kubectl plugin prints.
type poolForecast struct {
	Pool           string `json:"pool"`
	Nodes          string `json:"nodes"`
	Reboot         string `json:"reboot"`
	Waves          string `json:"waves"`
	MaxUnavailable string `json:"maxUnavailable"`
	Duration       string `json:"duration"`
}

// cliForecast runs `kubectl virt-advisor plan <name>` and returns its forecast, pool by pool.
func cliForecast(name string) []poolForecast {
	GinkgoHelper()
	var out bytes.Buffer
	root := cli.NewRootCommand(&cli.Options{
		Streams:   genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: io.Discard},
		NewClient: func() (client.Client, error) { return admin, nil },
	})
	root.SetArgs([]string{"plan", name, "--color=never"})
	err := root.ExecuteContext(context.Background())
	var exit *cli.ExitCodeError
	if err != nil && (!errors.As(err, &exit) || exit.Code != cli.ExitChanges) {
		Fail("kubectl virt-advisor plan " + name + ": " + err.Error())
	}
	var pools []poolForecast
	for _, m := range forecastLine.FindAllStringSubmatch(out.String(), -1) {
		pools = append(pools, poolForecast{Pool: m[1], Nodes: m[2], Reboot: m[3], Waves: m[4], MaxUnavailable: m[5], Duration: m[6]})
	}
	Expect(pools).NotTo(BeEmpty(), "kubectl virt-advisor plan %s prints no forecast:\n%s", name, out.String())
	return pools
}

func config(name string) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(admin.Get(context.Background(), client.ObjectKey{Name: name}, vpc)).To(Succeed())
	return vpc
}

// argoNodeHealthCheck is the NodeHealthCheck a GitOps tool manages: the plan sets minHealthy
// to 51%, which argocd-controller owns with 30%, a conflict the review shows.
const argoNodeHealthCheck = `apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  name: virt-advisor-worker-health
spec:
  minHealthy: 30%
  selector:
    matchExpressions:
    - key: node-role.kubernetes.io/worker
      operator: Exists
  remediationTemplate:
    apiVersion: self-node-remediation.medik8s.io/v1alpha1
    kind: SelfNodeRemediationTemplate
    namespace: openshift-workload-availability
    name: self-node-remediation-automatic-strategy-template
`

// bigPlanPatch asks platform-baseline for the largest plan its options allow: 32 PCI devices
// bound to vfio-pci and 32 USB devices, all permitted in the HyperConverged.
func bigPlanPatch() string {
	GinkgoHelper()
	pci := make([]map[string]string, 0, 32)
	usb := make([]map[string]string, 0, 32)
	for i := range 32 {
		pci = append(pci, map[string]string{
			"vendorDevice": fmt.Sprintf("10de:1e%02x", i), "resourceName": fmt.Sprintf("nvidia.com/GPU_MODEL_%d", i),
		})
		usb = append(usb, map[string]string{
			"vendor": "046d", "product": fmt.Sprintf("c5%02x", i), "resourceName": fmt.Sprintf("kubevirt.io/usb-device-%d", i),
		})
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"revert": false, "action": "DryRun",
		"options": map[string]any{"platformBaseline": map[string]any{
			"vfio":           map[string]any{"enabled": true, "devices": pci},
			"usbPassthrough": map[string]any{"enabled": true, "devices": usb},
		}},
	}})
	Expect(err).NotTo(HaveOccurred())
	return string(patch)
}

var _ = Describe("An administrator reviewing, approving and reverting platform-baseline in the console", Ordered, func() {
	const name = "platform-baseline"

	BeforeAll(func() {
		path := filepath.Join(workDir, "argo-nodehealthcheck.yaml")
		Expect(os.WriteFile(path, []byte(argoNodeHealthCheck), 0o600)).To(Succeed())
		kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", path)
		By("drafting the plan of the full platform-baseline sample")
		kubectl("apply", "-f", testenv.Path("config", "samples", "baseline_full_sample.yaml"))
		kubectl("wait", "vpc/"+name, "--for=condition=ReviewRequired", "--timeout=90s")
	})

	It("lists the configs with their profile, action, phase, impact and disruption forecast", func() {
		browse("list")
	})

	It("shows the plan for review: its diffs, its conflicts, and the forecast kubectl virt-advisor plan prints", func() {
		forecast, err := json.Marshal(cliForecast(name))
		Expect(err).NotTo(HaveOccurred())
		browse("review", "EXPECTED_FORECAST="+string(forecast))
	})

	It("offers no enabled action to a user who may not patch the config", func() {
		browse("restricted")
	})

	It("refuses an approval of a plan that changed after the page showed it, and says so", func() {
		shownBefore := config(name).Status.PlanHash
		result := browse("stale")
		vpc := config(name)
		Expect(vpc.Spec.Action).To(Equal(advisorv1alpha1.ActionDryRun), "nothing was approved")
		Expect(vpc.Spec.ApprovedPlanHash).To(BeEmpty())
		Expect(result["refusedHash"]).To(Equal(shownBefore))
		Expect(result["newHash"]).To(Equal(vpc.Status.PlanHash))
	})

	It("approves exactly the plan shown, in one request, and follows the rollout wave by wave to Completed", func() {
		result := browse("approve")
		vpc := config(name)
		Expect(vpc.Spec.Action).To(Equal(advisorv1alpha1.ActionApply))
		Expect(vpc.Spec.ApprovedPlanHash).To(Equal(result["approvedHash"]), "the approval is pinned to the hash the modal showed")
		Expect(vpc.Status.Approval).NotTo(BeNil())
		Expect(vpc.Status.Approval.ApprovedPlanHash).To(Equal(result["approvedHash"]))
		Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted))
		waves, ok := result["wavesSeen"].([]any)
		Expect(ok).To(BeTrue())
		Expect(len(waves)).To(BeNumerically(">=", 2), "the page showed the rollout wave by wave: %v", waves)
	})

	It("reverts: asks for the revert plan, shows it for review, approves it and ends Reverted", func() {
		result := browse("revert")
		vpc := config(name)
		Expect(vpc.Spec.Revert).To(BeTrue())
		Expect(vpc.Spec.ApprovedPlanHash).To(Equal(result["approvedHash"]))
		Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseReverted))
	})

	It("renders a big platform-baseline plan, 32 PCI and 32 USB devices, and prints how long it takes", func() {
		By("labelling the workers with an NVIDIA PCI device, as Node Feature Discovery does, and asking for every device")
		kubectl("label", "nodes", "-l", "node-role.kubernetes.io/worker", "feature.node.kubernetes.io/pci-0302_10de.present=true")
		kubectl("patch", "vpc/"+name, "--type=merge", "-p", bigPlanPatch())
		Eventually(func(g Gomega) {
			vpc := config(name)
			g.Expect(vpc.Status.ObservedGeneration).To(Equal(vpc.Generation))
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired))
			g.Expect(vpc.Status.Items).To(ContainElement(And(
				HaveField("Name", "bind-vfio-devices"), HaveField("State", advisorv1alpha1.ItemPending))))
		}).Should(Succeed())
		browse("bigplan")
	})
})
