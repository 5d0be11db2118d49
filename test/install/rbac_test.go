package install

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/satoken"
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

// The objects the profiles write, by the names they render, in the namespaces they write
// them to; and objects of the same kinds they never write.
const (
	deschedulerNamespace = "openshift-kube-descheduler-operator"
	hcoNamespace         = "openshift-cnv"
	mtvNamespace         = "openshift-mtv"
	metalLBNamespace     = "metallb-system"
)

// upstreamCRDFiles are the CRDs, besides those of test/crds, of the kinds platform-baseline
// writes: the KubeletConfig and the operators' objects (read from testenv.UpstreamCRDs()).
var upstreamCRDFiles = []string{
	"machineconfiguration.openshift.io/kubeletconfigs.yaml",
	"remediation.medik8s.io/nodehealthchecks.yaml",
	"self-node-remediation.medik8s.io/selfnoderemediationtemplates.yaml",
	"forklift.konveyor.io/forkliftcontrollers.yaml",
	"metallb.io/metallbs.yaml",
}

var _ = Describe("The manager on the service account and RBAC of dist/install.yaml", Ordered, func() {
	var (
		cp         *controlPlane
		managerLog string
	)
	serviceAccount := "system:serviceaccount:" + operatorNamespace + ":" + managerServiceAccount

	// allowed asks the API server's authorizer whether the manager's service account may do
	// verb on the object (name "" is a request without a name: a POST create, a list).
	allowed := func(verb, group, resource, namespace, name string) bool {
		GinkgoHelper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   serviceAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: namespace, Name: name,
			},
		}}
		Expect(cp.client.Create(context.Background(), review)).To(Succeed())
		return review.Status.Allowed
	}

	config := func(name string) *advisorv1alpha1.VirtPlatformConfig {
		GinkgoHelper()
		vpc := &advisorv1alpha1.VirtPlatformConfig{}
		Expect(cp.client.Get(context.Background(), client.ObjectKey{Name: name}, vpc)).To(Succeed())
		return vpc
	}

	// planApproveApply drafts the plan of sample, approves it as shown and applies it,
	// playing the Machine Config Operator whenever an item waits for the worker pool, until
	// the config is Completed with every item Completed.
	planApproveApply := func(name, sample string) {
		GinkgoHelper()
		// The profile is advertised first, as an administrator sees with kubectl get vpc;
		// the sample is then applied to the advertised config.
		Eventually(func() error {
			return cp.client.Get(context.Background(), client.ObjectKey{Name: name}, &advisorv1alpha1.VirtPlatformConfig{})
		}).WithTimeout(time.Minute).Should(Succeed())
		cp.kubectl("apply", "-f", testenv.Path("config", "samples", sample))
		Eventually(func(g Gomega) {
			vpc := config(name)
			if vpc.Status.Phase == advisorv1alpha1.PhaseFailed {
				StopTrying(fmt.Sprintf("%s was not planned: %s", name, describeItems(vpc))).Now()
			}
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired), "%s: %s", name, describeItems(vpc))
			g.Expect(vpc.Status.PlanHash).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
		approval, err := json.Marshal(map[string]any{"spec": map[string]any{
			"action": "Apply", "approvedPlanHash": config(name).Status.PlanHash,
		}})
		Expect(err).NotTo(HaveOccurred())
		cp.kubectl("patch", "vpc", name, "--type=merge", "-p", string(approval))

		Eventually(func(g Gomega) {
			vpc := config(name)
			if vpc.Status.Phase == advisorv1alpha1.PhaseFailed {
				StopTrying(fmt.Sprintf("%s was not applied: %s", name, describeItems(vpc))).Now()
			}
			for _, it := range vpc.Status.Items {
				if it.State == advisorv1alpha1.ItemInProgress && waitsForMachineConfigOperator(it.Message) {
					cp.rollOutWorkerPool()
				}
			}
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted), "%s: %s", name, describeItems(vpc))
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		for _, it := range config(name).Status.Items {
			Expect(it.State).To(Equal(advisorv1alpha1.ItemCompleted), "%s item %s: %s", name, it.Name, it.Message)
		}
	}

	BeforeAll(func(ctx SpecContext) {
		crds := []string{testenv.BaseCRDs, testenv.DeschedulerCRDs("4.20")}
		for _, f := range upstreamCRDFiles {
			crds = append(crds, filepath.Join(testenv.UpstreamCRDs(), filepath.FromSlash(f)))
		}
		cp = startControlPlane(crds...)
		cp.kubectl("apply", "--server-side", "-f", installYAML)

		// What OpenShift and the other operators would have created: the HyperConverged,
		// the KubeDescheduler, the worker pool and its 00-worker MachineConfig, workers with
		// Node Feature Discovery's labels (one with an NVIDIA GPU), the Self Node
		// Remediation template, and the namespaces of MTV and MetalLB.
		cp.kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
		cp.kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
		cp.kubectl("label", "node", "baseline-worker-0", "feature.node.kubernetes.io/pci-0302_10de.present=true")
		cp.createNamespaces(mtvNamespace, metalLBNamespace)
		cp.rollOutWorkerPool()

		dir := GinkgoT().TempDir()
		kubeconfig := filepath.Join(dir, "manager-kubeconfig")
		Expect(satoken.WriteKubeconfig(ctx, cp.config, operatorNamespace, managerServiceAccount, kubeconfig)).To(Succeed())
		managerLog = filepath.Join(dir, "manager.log")
		// The Deployment's flags; a MachineConfigPool's rollout is checked every second.
		startManager(kubeconfig, managerLog, append(managerArgs(freePort(), GinkgoT().TempDir()), "--health-poll-interval=1s"))
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			data, _ := os.ReadFile(managerLog)
			AddReportEntry("manager log", string(data))
		}
	})

	DescribeTable("lets the manager create and patch only the objects the profiles write",
		func(verb, group, resource, namespace, name string, allow bool) {
			Expect(allowed(verb, group, resource, namespace, name)).To(Equal(allow),
				"%s %s.%s %s/%s", verb, resource, group, namespace, name)
		},
		Entry("patch MachineConfig 99-worker-psi-karg (load-aware-rebalancing)",
			"patch", "machineconfiguration.openshift.io", "machineconfigs", "", "99-worker-psi-karg", true),
		Entry("create MachineConfig 90-worker-kubelet-swap by server-side apply (virt-higher-density, platform-baseline)",
			"create", "machineconfiguration.openshift.io", "machineconfigs", "", "90-worker-kubelet-swap", true),
		Entry("patch MachineConfig 90-worker-iommu (platform-baseline)",
			"patch", "machineconfiguration.openshift.io", "machineconfigs", "", "90-worker-iommu", true),
		Entry("patch MachineConfig 90-worker-vfio-pci (platform-baseline)",
			"patch", "machineconfiguration.openshift.io", "machineconfigs", "", "90-worker-vfio-pci", true),
		Entry("not patch MachineConfig 00-worker",
			"patch", "machineconfiguration.openshift.io", "machineconfigs", "", "00-worker", false),
		Entry("not patch a rendered MachineConfig",
			"patch", "machineconfiguration.openshift.io", "machineconfigs", "", "rendered-worker-0123456789ab", false),
		Entry("not create a MachineConfig with a POST, which names no object",
			"create", "machineconfiguration.openshift.io", "machineconfigs", "", "", false),
		Entry("delete a MachineConfig a profile writes, for a reviewed revert",
			"delete", "machineconfiguration.openshift.io", "machineconfigs", "", "99-worker-psi-karg", true),
		Entry("not update a MachineConfig it writes",
			"update", "machineconfiguration.openshift.io", "machineconfigs", "", "99-worker-psi-karg", false),
		Entry("not delete MachineConfig 00-worker",
			"delete", "machineconfiguration.openshift.io", "machineconfigs", "", "00-worker", false),
		Entry("not delete the HyperConverged, which no profile creates",
			"delete", "hco.kubevirt.io", "hyperconvergeds", "openshift-cnv", "kubevirt-hyperconverged", false),
		Entry("patch KubeletConfig virt-advisor-kubelet (platform-baseline)",
			"patch", "machineconfiguration.openshift.io", "kubeletconfigs", "", "virt-advisor-kubelet", true),
		Entry("not patch another KubeletConfig",
			"patch", "machineconfiguration.openshift.io", "kubeletconfigs", "", "set-max-pods", false),
		Entry("patch the KubeDescheduler cluster (load-aware-rebalancing)",
			"patch", "operator.openshift.io", "kubedeschedulers", deschedulerNamespace, "cluster", true),
		Entry("not patch another KubeDescheduler",
			"patch", "operator.openshift.io", "kubedeschedulers", deschedulerNamespace, "other", false),
		Entry("patch the HyperConverged kubevirt-hyperconverged (virt-higher-density, platform-baseline)",
			"patch", "hco.kubevirt.io", "hyperconvergeds", hcoNamespace, "kubevirt-hyperconverged", true),
		Entry("not create a HyperConverged",
			"create", "hco.kubevirt.io", "hyperconvergeds", hcoNamespace, "kubevirt-hyperconverged", false),
		Entry("patch NodeHealthCheck virt-advisor-worker-health (platform-baseline)",
			"patch", "remediation.medik8s.io", "nodehealthchecks", "", "virt-advisor-worker-health", true),
		Entry("not patch another NodeHealthCheck",
			"patch", "remediation.medik8s.io", "nodehealthchecks", "", "other", false),
		Entry("create the ForkliftController forklift-controller (platform-baseline)",
			"create", "forklift.konveyor.io", "forkliftcontrollers", mtvNamespace, "forklift-controller", true),
		Entry("not create another ForkliftController",
			"create", "forklift.konveyor.io", "forkliftcontrollers", mtvNamespace, "other", false),
		Entry("create the MetalLB metallb (platform-baseline)",
			"create", "metallb.io", "metallbs", metalLBNamespace, "metallb", true),
		Entry("not patch another MetalLB",
			"patch", "metallb.io", "metallbs", metalLBNamespace, "other", false),
	)

	It("plans, and once approved applies, load-aware-rebalancing: the KubeDescheduler and the PSI MachineConfig", func() {
		planApproveApply("load-aware-rebalancing", "loadaware_sample.yaml")
	})

	It("plans, and once approved applies, virt-higher-density: the swap MachineConfig and the HyperConverged", func() {
		planApproveApply("virt-higher-density", "higherdensity_options_sample.yaml")
	})

	It("plans, and once approved applies, platform-baseline with every component: MachineConfigs, the KubeletConfig, "+
		"the NodeHealthCheck, the ForkliftController, the MetalLB and the HyperConverged", func() {
		planApproveApply("platform-baseline", "baseline_full_sample.yaml")
	})

	It("made no request the API server forbade", func() {
		data, err := os.ReadFile(managerLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).NotTo(MatchRegexp(`is forbidden: User \\?"system:serviceaccount:`))
	})
})

// describeItems says where each item of a config is, for failure messages.
func describeItems(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", vpc.Status.Phase)
	for _, it := range vpc.Status.Items {
		fmt.Fprintf(&b, "\n  %s: %s: %s", it.Name, it.State, it.Message)
	}
	for _, c := range vpc.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, "\n  condition %s (%s): %s", c.Type, c.Reason, c.Message)
		}
	}
	return b.String()
}
