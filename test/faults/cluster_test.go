package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// configName is the VirtPlatformConfig of config/samples/loadaware_sample.yaml.
const configName = "load-aware-rebalancing"

// faultLabel marks the admission policies the specs create.
const faultLabel = "faults.advisor.kubevirt.io/policy"

var (
	deschedulerGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	mcGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	deschedulerKey = types.NamespacedName{Namespace: loadaware.DeschedulerNamespace, Name: loadaware.DeschedulerName}
	psiKey         = types.NamespacedName{Name: loadaware.PSIMachineConfigName}
)

// resetCluster brings the cluster back to the mock baseline of the samples: no config, no
// admission policy of a spec, the KubeDescheduler as an administrator left it and the
// worker pool rolled out without the PSI MachineConfig, then paused: the pool simulator
// renders what the spec changes, and the pool's nodes are updated from rolloutPool on.
func resetCluster() {
	GinkgoHelper()
	testenv.DeleteAndWait(ctx, k8s, &advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: configName}})
	liftPolicies()
	testenv.DeleteAndWait(ctx, k8s, testenv.Object(mcGVK, psiKey))
	testenv.DeleteAndWait(ctx, k8s, testenv.Object(deschedulerGVK, deschedulerKey))
	kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	pauseWorkerPool(false)
	Eventually(workerPoolRolledOut).WithTimeout(time.Minute).Should(Succeed())
	pauseWorkerPool(true)
}

// deschedulerProfiles reads the KubeDescheduler's spec.profiles ("" when it is absent).
func deschedulerProfiles() string {
	GinkgoHelper()
	u := testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey)
	if u == nil {
		return ""
	}
	profiles, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "profiles")
	return strings.Join(profiles, ",")
}

// appliedProfiles is the KubeDescheduler's spec.profiles once the plan is applied.
const appliedProfiles = "AffinityAndTaints,SoftTopologyAndDuplicates,KubeVirtRelieveAndMigrate"

// kubectl runs the control plane's kubectl as the administrator and returns its stdout.
func kubectl(args ...string) string {
	GinkgoHelper()
	return run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
}

// rolloutPool unpauses the worker pool: the pool simulator updates its nodes to what it
// rendered, one at a time, and reports the pool Updated.
func rolloutPool() {
	GinkgoHelper()
	pauseWorkerPool(false)
}

func run(bin string, args ...string) string {
	GinkgoHelper()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+adminKubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "%s %s\n%s%s", filepath.Base(bin), strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// createNamespace creates the operator namespace of a spec, which holds its lease.
func createNamespace(name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, ns))).To(Succeed())
}

// userKubeconfig writes a kubeconfig of a new user of the control plane, member of
// system:masters, named in the audit log as name.
func userKubeconfig(name string) string {
	GinkgoHelper()
	path := filepath.Join(workDir, name+".kubeconfig")
	Expect(testenv.WriteUserKubeconfig(env, name, path)).To(Succeed())
	return path
}

// createConfig creates the sample config (config/samples/loadaware_sample.yaml) with the
// given action and labels.
func createConfig(action advisorv1alpha1.Action, labels map[string]string) {
	GinkgoHelper()
	data, err := os.ReadFile(testenv.Path("config", "samples", "loadaware_sample.yaml"))
	Expect(err).NotTo(HaveOccurred())
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(yaml.Unmarshal(data, vpc)).To(Succeed())
	Expect(vpc.Name).To(Equal(configName))
	vpc.Spec.Action = action
	vpc.Labels = labels
	Expect(k8s.Create(ctx, vpc)).To(Succeed())
}

func getConfig() *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
	return vpc
}

// approve sets spec.action to Apply, as an administrator does after the review.
func approve() {
	GinkgoHelper()
	kubectl("patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"action":"Apply"}}`)
}

// waitPhase waits for the phase, in a status that reflects the current generation.
func waitPhase(p advisorv1alpha1.Phase, timeout time.Duration) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var vpc *advisorv1alpha1.VirtPlatformConfig
	Eventually(func(g Gomega) {
		vpc = &advisorv1alpha1.VirtPlatformConfig{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
		g.Expect(vpc.Status.ObservedGeneration).To(Equal(vpc.Generation))
		g.Expect(vpc.Status.Phase).To(Equal(p), "conditions: %s", testenv.DescribeConditions(vpc))
	}).WithTimeout(timeout).Should(Succeed())
	return vpc
}

// waitingForPool waits until the PSI MachineConfig is applied and its item waits for the
// worker pool to roll it out.
func waitingForPool(timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		vpc := getConfig()
		g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseInProgress))
		psi := testenv.Item(vpc, loadaware.ItemPSI)
		g.Expect(psi.State).To(Equal(advisorv1alpha1.ItemInProgress))
		g.Expect(psi.Applied).NotTo(BeNil())
		g.Expect(psi.Message).To(ContainSubstring("MachineConfigPool worker"))
	}).WithTimeout(timeout).Should(Succeed())
}

// expectCompletedAsPlanned checks the end state of a fully executed plan: every item
// Completed and recorded as applied, the targets holding the planned values.
func expectCompletedAsPlanned(vpc *advisorv1alpha1.VirtPlatformConfig) {
	GinkgoHelper()
	Expect(vpc.Status.Items).To(HaveLen(2))
	for _, it := range vpc.Status.Items {
		Expect(it.State).To(Equal(advisorv1alpha1.ItemCompleted), "item %s: %s", it.Name, it.Message)
		Expect(it.Applied).NotTo(BeNil(), "item %s is not recorded as applied", it.Name)
	}
	Expect(vpc.Status.ItemsSummary).To(Equal("2/2"))
	Expect(deschedulerProfiles()).To(Equal(appliedProfiles))
	mc := testenv.Read(ctx, k8s, mcGVK, psiKey)
	Expect(mc).NotTo(BeNil())
	kargs, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	Expect(kargs).To(Equal([]string{"psi=1"}))
}

// eventReasons lists the reasons of the Events about the current config, oldest first.
func eventReasons() []string {
	GinkgoHelper()
	uid := getConfig().UID
	list := &eventsv1.EventList{}
	Expect(k8s.List(ctx, list)).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid {
			out = append(out, e.Reason)
		}
	}
	return out
}

// holdStatusOnceApplied makes the API server refuse every status write of the config that
// records the item as applied, while the config carries holdLabel: the item's apply goes
// through and the write that would record it does not, as for a process that dies in
// between. Removing the label lifts it at once.
func holdStatusOnceApplied(itemName string) {
	GinkgoHelper()
	expr := fmt.Sprintf(`!(has(oldObject.metadata.labels) && '%s' in oldObject.metadata.labels) || `+
		`!(has(object.status.items) && object.status.items.exists(i, i.name == '%s' && has(i.applied)))`, holdLabel, itemName)
	createPolicy("hold-status", admissionregistrationv1.Rule{
		APIGroups: []string{"advisor.kubevirt.io"}, APIVersions: []string{"*"}, Resources: []string{"virtplatformconfigs/status"},
	}, expr, "status writes recording item "+itemName+" as applied are held")
	// The policy takes effect once the API server has loaded it: probe with a dry-run of
	// such a write.
	vpc := getConfig()
	idx := -1
	for i, it := range vpc.Status.Items {
		if it.Name == itemName {
			idx = i
		}
	}
	Expect(idx).To(BeNumerically(">=", 0), "the config has no item %s yet", itemName)
	probe := fmt.Sprintf(`[{"op":"add","path":"/status/items/%d/applied","value":{"fields":[],"hash":"probe"}}]`, idx)
	Eventually(func() string {
		err := k8s.Status().Patch(ctx, vpc, client.RawPatch(types.JSONPatchType, []byte(probe)), client.DryRunAll)
		if err == nil {
			return ""
		}
		return err.Error()
	}).Should(ContainSubstring("are held"))
}

// holdLabel on the config turns holdStatusOnceApplied on.
const holdLabel = "faults.advisor.kubevirt.io/hold-status"

// releaseHold removes holdLabel from the config.
func releaseHold() {
	GinkgoHelper()
	kubectl("label", "vpc", configName, holdLabel+"-")
}

// createPolicy creates a ValidatingAdmissionPolicy and its binding that deny the
// requests on the given resources for which expression is false.
func createPolicy(name string, rule admissionregistrationv1.Rule, expression, message string) {
	GinkgoHelper()
	labels := map[string]string{faultLabel: "true"}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "faults-" + name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule:       rule,
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "faults-" + name, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
}

// liftPolicies deletes the admission policies of the specs.
func liftPolicies() {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		client.MatchingLabels{faultLabel: "true"}))).To(Succeed())
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		client.MatchingLabels{faultLabel: "true"}))).To(Succeed())
}

func objectKey(name string) types.NamespacedName { return types.NamespacedName{Name: name} }
