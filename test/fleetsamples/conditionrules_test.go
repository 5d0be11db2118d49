package fleetsamples

import (
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// The OCM work agent evaluates the condition rules of the ManifestWorkReplicaSet sample on the
// managed cluster, with the config as `object`; the API server does not look at them. To know
// that they name fields the config has, with the types they have, the specs type-check them
// as the API server type-checks a ValidatingAdmissionPolicy, whose `object` is the same: a
// VirtPlatformConfig, typed by the schema the API server publishes for it.
var _ = Describe("The CEL condition rules of the ManifestWorkReplicaSet sample", func() {
	It("type-check against the VirtPlatformConfig schema the API server publishes", func() {
		rules := conditionRules()
		Expect(rules).To(HaveKey("Completed"))
		Expect(rules).To(HaveKey("Degraded"))
		Expect(rules).To(HaveKey("Progressing"))
		Expect(typeCheck(rules)).To(BeEmpty())
	})

	It("are the rules of config/health/ocm-condition-rules.yaml, which test/health evaluates in each phase", func() {
		var shipped []map[string]any
		raw, err := os.ReadFile(testenv.Path("config", "health", "ocm-condition-rules.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(raw, &shipped)).To(Succeed())
		Expect(shipped).To(HaveLen(1))
		var sample any
		for _, doc := range documents(readSample(ocmSample)) {
			if doc["kind"] == "ManifestWorkReplicaSet" {
				template := doc["spec"].(map[string]any)["manifestWorkTemplate"].(map[string]any)
				sample = template["manifestConfigs"].([]any)[0].(map[string]any)["conditionRules"]
			}
		}
		Expect(sample).To(Equal(shipped[0]["conditionRules"]))
	})

	It("fail the type check when a rule names a field the config does not have", func() {
		rules := map[string]conditionRule{"Complete": {
			celExpressions:    []string{"object.status.phase == 'Completed'"},
			messageExpression: "'plan ' + object.status.contentHsh + ' completed'",
		}}
		warnings := typeCheck(rules)
		Expect(warnings).To(HaveLen(1))
		Expect(warnings[0].FieldRef).To(Equal("spec.validations[0].messageExpression"))
		Expect(warnings[0].Warning).To(ContainSubstring("contentHsh"))
	})
})

// conditionRule is one CEL condition rule of a ManifestWorkReplicaSet's manifestConfigs.
type conditionRule struct {
	celExpressions    []string
	messageExpression string
}

// conditionRules are the CEL condition rules of the ManifestWorkReplicaSet sample, by
// condition.
func conditionRules() map[string]conditionRule {
	GinkgoHelper()
	rules := map[string]conditionRule{}
	for _, doc := range documents(readSample(ocmSample)) {
		if doc["kind"] != "ManifestWorkReplicaSet" {
			continue
		}
		template := doc["spec"].(map[string]any)["manifestWorkTemplate"].(map[string]any)
		for _, config := range template["manifestConfigs"].([]any) {
			for _, r := range config.(map[string]any)["conditionRules"].([]any) {
				rule := r.(map[string]any)
				Expect(rule).To(HaveKeyWithValue("type", "CEL"))
				var parsed conditionRule
				for _, expression := range rule["celExpressions"].([]any) {
					parsed.celExpressions = append(parsed.celExpressions, expression.(string))
				}
				parsed.messageExpression, _ = rule["messageExpression"].(string)
				rules[rule["condition"].(string)] = parsed
			}
		}
	}
	return rules
}

// typeCheck type-checks rules as the validations of a ValidatingAdmissionPolicy that matches
// VirtPlatformConfigs, against the schemas the test's API server publishes, and returns the
// warnings.
func typeCheck(rules map[string]conditionRule) []admissionregistrationv1.ExpressionWarning {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"advisor.kubevirt.io"},
							APIVersions: []string{"v1alpha1"},
							Resources:   []string{"virtplatformconfigs"},
						},
					},
				}},
			},
		},
	}
	for _, rule := range rules {
		for _, expression := range rule.celExpressions {
			policy.Spec.Validations = append(policy.Spec.Validations, admissionregistrationv1.Validation{
				Expression:        expression,
				MessageExpression: rule.messageExpression,
			})
		}
	}
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	checker := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client)),
	}
	return checker.Check(policy)
}
