package controller_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const configName = "load-aware-rebalancing"

var (
	deschedulerGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	mcGVK          = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	poolGVK        = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	mcpGVK         = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	deschedulerKey = types.NamespacedName{Namespace: loadaware.DeschedulerNamespace, Name: loadaware.DeschedulerName}
	psiKey         = types.NamespacedName{Name: loadaware.PSIMachineConfigName}
)

// resetCluster brings the cluster back to the mock baseline: no config, a KubeDescheduler
// as an administrator left it, a worker pool rolled out without the PSI MachineConfig.
func resetCluster() {
	GinkgoHelper()
	if stopRunning == nil {
		// A spec that stopped the operator failed before starting it again.
		startManager()
	}
	faults.clear()
	profileReader.failNext("", 0)
	deleteAndWait(&advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: configName}})
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		client.MatchingLabels{"test": "freeze"}))).To(Succeed())
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		client.MatchingLabels{"test": "freeze"}))).To(Succeed())
	deleteAndWait(object(mcGVK, psiKey))
	deleteAndWait(object(deschedulerGVK, deschedulerKey))
	restoreMockBaseline()
	Expect(k8s.Patch(ctx, object(poolGVK, types.NamespacedName{Name: "worker"}), client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"paused":false},"metadata":{"annotations":{"`+targets.PausedByAnnotation+`":null}}}`)))).To(Succeed())
	rolloutPool()
	// A step of the previous spec's config that was under way when the config was deleted
	// may still send the write its status authorized before the deletion: the oracle
	// judges this spec's writes from here.
	oracle.reset()
}

// mockBaseline is config/samples/mock_baseline_resources.yaml, read once.
var mockBaseline = sync.OnceValues(func() ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	if err != nil {
		return nil, err
	}
	var docs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		doc := &unstructured.Unstructured{}
		if err := decoder.Decode(&doc.Object); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		if len(doc.Object) > 0 {
			docs = append(docs, doc)
		}
	}
})

// restoreMockBaseline applies, with kubectl as an administrator does, the documents of the
// mock baseline whose object is missing or no longer holds every value the document sets:
// the same result as applying the whole file, without a three-way merge of the objects
// that kept them.
func restoreMockBaseline() {
	GinkgoHelper()
	docs, err := mockBaseline()
	Expect(err).NotTo(HaveOccurred())
	var changed []string
	for _, doc := range docs {
		live := object(doc.GroupVersionKind(), client.ObjectKeyFromObject(doc))
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(doc), live); err == nil && holds(live, doc) {
			continue
		}
		data, err := json.Marshal(doc.Object)
		Expect(err).NotTo(HaveOccurred())
		changed = append(changed, string(data))
	}
	if len(changed) == 0 {
		return
	}
	// A deleted admission policy stops applying a moment later.
	Eventually(func() error {
		cmd := command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(`{"apiVersion":"v1","kind":"List","items":[` + strings.Join(changed, ",") + `]}`)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}).Should(Succeed())
}

// holds tells whether live holds every value doc sets, its labels and annotations included.
func holds(live, doc *unstructured.Unstructured) bool {
	metadata, _ := doc.Object["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		if m, ok := metadata[field]; ok && !subset(map[string]any{field: m}, live.Object["metadata"]) {
			return false
		}
	}
	rest := maps.Clone(doc.Object)
	delete(rest, "metadata")
	return subset(rest, live.Object)
}

// subset tells whether got holds want: every key of a map in want with the same value,
// lists and scalars equal (numbers compared as JSON numbers).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, g[k]) {
				return false
			}
		}
		return true
	default:
		a, errA := json.Marshal(want)
		b, errB := json.Marshal(got)
		return errA == nil && errB == nil && bytes.Equal(a, b)
	}
}

func deleteAndWait(obj client.Object) {
	GinkgoHelper()
	testenv.DeleteAndWait(ctx, k8s, obj)
}

func object(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	return testenv.Object(gvk, key)
}

// read returns the live object, or nil when it does not exist.
func read(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	GinkgoHelper()
	return testenv.Read(ctx, k8s, gvk, key)
}

func descheduler() *unstructured.Unstructured {
	GinkgoHelper()
	return read(deschedulerGVK, deschedulerKey)
}

func deschedulerInterval() int64 {
	GinkgoHelper()
	v, _, _ := unstructured.NestedInt64(descheduler().Object, "spec", "deschedulingIntervalSeconds")
	return v
}

// createPSIMachineConfigByHand creates the PSI MachineConfig out of band, as an
// administrator would, with a kernel argument the plan does not set.
func createPSIMachineConfigByHand() {
	GinkgoHelper()
	kubectlApply(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-psi-karg
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  kernelArguments: [psi=1, psi_debug=1]`)
}

// editDescheduler changes the KubeDescheduler like an administrator would, out of band.
func editDescheduler(patch string) {
	GinkgoHelper()
	kubectl("patch", "kubedescheduler", "cluster", "-n", loadaware.DeschedulerNamespace, "--type=merge", "-p", patch)
}

// createConfig creates the load-aware-rebalancing config with the given spec. The mock
// baseline's KubeDescheduler was written with kubectl apply, so a plan created with action
// Apply takes fields another field manager owns and waits for an approval given after it
// was shown (FieldConflicts): createConfig gives it, as an administrator would.
func createConfig(spec advisorv1alpha1.VirtPlatformConfigSpec) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	vpc := createConfigAsIs(spec)
	if spec.Action == advisorv1alpha1.ActionApply {
		approveShownConflicts()
	}
	return vpc
}

// createConfigAsIs creates the load-aware-rebalancing config with the given spec.
func createConfigAsIs(spec advisorv1alpha1.VirtPlatformConfigSpec) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	spec.Profile = advisorv1alpha1.ProfileLoadAwareRebalancing
	vpc := &advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: configName}, Spec: spec}
	Expect(k8s.Create(ctx, vpc)).To(Succeed())
	return vpc
}

// approveShownConflicts waits until the config's plan was drafted and, when it waits for
// an approval because it takes fields another field manager owns, approves the plan shown
// with a spec change made after it was shown (unpinned, as the specs that follow expect).
func approveShownConflicts() {
	GinkgoHelper()
	var vpc *advisorv1alpha1.VirtPlatformConfig
	Eventually(func() advisorv1alpha1.Phase {
		vpc = getConfig()
		return vpc.Status.Phase
	}).ShouldNot(BeElementOf(advisorv1alpha1.Phase(""), advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting))
	if vpc.Status.Phase == advisorv1alpha1.PhaseReviewRequired &&
		conditionReason(vpc, advisorv1alpha1.ConditionReviewRequired) == advisorv1alpha1.ReasonFieldConflicts {
		approve()
	}
}

func getConfig() *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
	return vpc
}

// patchSpec merges a JSON patch into the config's spec, as `kubectl patch --type=merge` does.
func patchSpec(spec string) {
	GinkgoHelper()
	kubectl("patch", "vpc", configName, "--type=merge", "-p", `{"spec":`+spec+`}`)
}

// approve sets action Apply as a new generation: DryRun first when it is Apply already.
func approve() {
	GinkgoHelper()
	if getConfig().Spec.Action == advisorv1alpha1.ActionApply {
		patchSpec(`{"action":"DryRun"}`)
	}
	patchSpec(`{"action":"Apply"}`)
}

// poke makes the controller reconcile without changing the spec.
func poke() {
	GinkgoHelper()
	kubectl("annotate", "vpc", configName, "--overwrite", fmt.Sprintf("test/poke=%d", time.Now().UnixNano()))
}

func phase() advisorv1alpha1.Phase {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc); err != nil {
		return ""
	}
	return vpc.Status.Phase
}

// waitPhase waits for the phase and a status that reflects the current generation.
func waitPhase(p advisorv1alpha1.Phase) *advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var vpc *advisorv1alpha1.VirtPlatformConfig
	Eventually(func(g Gomega) {
		vpc = &advisorv1alpha1.VirtPlatformConfig{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc)).To(Succeed())
		g.Expect(vpc.Status.ObservedGeneration).To(Equal(vpc.Generation))
		g.Expect(vpc.Status.Phase).To(Equal(p), "conditions: %s", describeConditions(vpc))
	}).Should(Succeed())
	return vpc
}

func describeConditions(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	return testenv.DescribeConditions(vpc)
}

func item(vpc *advisorv1alpha1.VirtPlatformConfig, name string) advisorv1alpha1.PlanItem {
	GinkgoHelper()
	return testenv.Item(vpc, name)
}

func itemState(name string) advisorv1alpha1.ItemState {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: configName}, vpc); err != nil {
		return ""
	}
	for _, it := range vpc.Status.Items {
		if it.Name == name {
			return it.State
		}
	}
	return ""
}

// desiredSpecField reads a field of an item's desired state.
func desiredSpecField(it advisorv1alpha1.PlanItem, fields ...string) any {
	GinkgoHelper()
	obj := map[string]any{}
	Expect(json.Unmarshal(it.DesiredState.Raw, &obj)).To(Succeed())
	v, _, err := unstructured.NestedFieldNoCopy(obj, append([]string{"spec"}, fields...)...)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// expectConditions asserts that exactly the given conditions of the phases are True, that
// every such condition type is present, and that each reflects the current generation.
// ApprovalVerified, which an approval adds and the phase does not decide, is left out, and
// so are Reconciling and Stalled, which the spec's action decides too (test/health).
func expectConditions(vpc *advisorv1alpha1.VirtPlatformConfig, trueTypes ...string) {
	GinkgoHelper()
	all := []string{"Drafting", "ReviewRequired", "InProgress", "Completed", "Drifted", "Failed",
		"PrerequisiteFailed", "Ignored", "UpgradeAvailable", "Reverted", "Ready"}
	want := map[string]bool{}
	for _, t := range trueTypes {
		want[t] = true
	}
	phaseConditions := slices.DeleteFunc(slices.Clone(vpc.Status.Conditions), func(c metav1.Condition) bool {
		return c.Type == advisorv1alpha1.ConditionApprovalVerified ||
			c.Type == advisorv1alpha1.ConditionReconciling || c.Type == advisorv1alpha1.ConditionStalled
	})
	Expect(phaseConditions).To(HaveLen(len(all)))
	for _, t := range all {
		c := meta.FindStatusCondition(vpc.Status.Conditions, t)
		Expect(c).NotTo(BeNil(), "condition %s is missing", t)
		wantStatus := metav1.ConditionFalse
		if want[t] {
			wantStatus = metav1.ConditionTrue
		}
		Expect(c.Status).To(Equal(wantStatus), "condition %s is %s (%s: %s)", t, c.Status, c.Reason, c.Message)
		Expect(c.ObservedGeneration).To(Equal(vpc.Generation), "condition %s", t)
		Expect(c.Reason).NotTo(BeEmpty(), "condition %s", t)
	}
}

func conditionReason(vpc *advisorv1alpha1.VirtPlatformConfig, t string) string {
	GinkgoHelper()
	c := meta.FindStatusCondition(vpc.Status.Conditions, t)
	Expect(c).NotTo(BeNil())
	return c.Reason
}

// conditionText returns the reason and message of condition t.
func conditionText(vpc *advisorv1alpha1.VirtPlatformConfig, t string) (string, string) {
	GinkgoHelper()
	c := meta.FindStatusCondition(vpc.Status.Conditions, t)
	Expect(c).NotTo(BeNil())
	return c.Reason, c.Message
}

// eventReasons lists the reasons of the Events about the config, oldest first.
func eventReasons() []string {
	GinkgoHelper()
	var out []string
	for _, e := range configEvents() {
		out = append(out, e.Reason)
	}
	return out
}

// eventNotes lists the notes of the Events about the config with the given reason.
func eventNotes(reason string) []string {
	GinkgoHelper()
	var out []string
	for _, e := range configEvents() {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func configEvents() []eventsv1.Event {
	GinkgoHelper()
	return eventsOf(getConfig())
}

// eventsOf lists the Events regarding one config.
func eventsOf(vpc *advisorv1alpha1.VirtPlatformConfig) []eventsv1.Event {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(k8s.List(ctx, list)).To(Succeed())
	uid := vpc.UID
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// managedByOperator tells whether the operator's field manager owns fields of obj.
func managedByOperator(obj *unstructured.Unstructured) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == plan.FieldManagerFor(configName) {
			return true
		}
	}
	return false
}

// metricValue reads a gauge or counter from the controller-runtime registry; labels
// not given are summed over.
func metricValue(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				total += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func matches(m *dto.Metric, labels map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(labels)
}

// freezeDescheduler makes the API server refuse real writes to the KubeDescheduler while
// still answering dry-runs, as an admission policy of a cluster in maintenance would.
func freezeDescheduler() {
	GinkgoHelper()
	admitDescheduler("request.dryRun == true", "the KubeDescheduler is frozen for maintenance")
}

// rejectDeschedulerWrites makes the API server refuse every write to the KubeDescheduler,
// dry-runs included.
func rejectDeschedulerWrites() {
	GinkgoHelper()
	admitDescheduler("false", "the KubeDescheduler is frozen for maintenance, dry-runs too")
}

// liftAdmissionPolicies removes the policies of freezeDescheduler and rejectDeschedulerWrites.
func liftAdmissionPolicies() {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		client.MatchingLabels{"test": "freeze"}))).To(Succeed())
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		client.MatchingLabels{"test": "freeze"}))).To(Succeed())
	Eventually(func() error {
		return k8s.Patch(ctx, object(deschedulerGVK, deschedulerKey), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"test/frozen":null}}}`)))
	}).Should(Succeed())
}

func admitDescheduler(expression, message string) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-descheduler", Labels: map[string]string{"test": "freeze"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"operator.openshift.io"}, APIVersions: []string{"*"}, Resources: []string{"kubedeschedulers"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: expression,
				Message:    message,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-descheduler", Labels: map[string]string{"test": "freeze"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	// The policy takes effect once the API server has loaded it.
	Eventually(func() string {
		err := k8s.Patch(ctx, object(deschedulerGVK, deschedulerKey), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"test/frozen":"probe"}}}`)))
		if err == nil {
			return ""
		}
		return err.Error()
	}).Should(ContainSubstring("frozen for maintenance"))
}

// deleteDeschedulerCRD removes the KubeDescheduler CRD, as uninstalling its operator would.
func deleteDeschedulerCRD() {
	GinkgoHelper()
	deleteAndWait(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: loadaware.DeschedulerCRD}})
}
