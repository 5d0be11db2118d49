package fleetsamples

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const (
	// hubNamespace is where the OCM and RHACM samples live on the hub.
	hubNamespace = "virt-advisor-fleet"
	// argoCDNamespace is the namespace of OpenShift GitOps' Argo CD.
	argoCDNamespace = "openshift-gitops"

	ocmSample    = "ocm-manifestworkreplicaset.yaml"
	rhacmSample  = "rhacm-policy.yaml"
	argoSample   = "argocd-applicationset.yaml"
	argoManifest = "argocd/load-aware-rebalancing.yaml"
)

// samples are the files of config/samples/fleet, each with the kinds of its documents.
var samples = map[string][]string{
	ocmSample:    {"ManagedClusterSetBinding", "Placement", "ManifestWorkReplicaSet"},
	rhacmSample:  {"Policy", "Policy", "Placement", "PlacementBinding"},
	argoSample:   {"ApplicationSet"},
	argoManifest: {"VirtPlatformConfig"},
}

var _ = Describe("The fleet samples", func() {
	It("are all listed here, so that none goes unchecked", func() {
		var found []string
		Expect(filepath.WalkDir(samplePath(), func(path string, _ os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".yaml") {
				rel, _ := filepath.Rel(samplePath(), path)
				found = append(found, filepath.ToSlash(rel))
			}
			return err
		})).To(Succeed())
		var listed []string
		for name := range samples {
			listed = append(listed, name)
		}
		Expect(found).To(ConsistOf(listed))
	})

	DescribeTable("are accepted, every document, by the real CRDs in a server-side dry run",
		func(name string) {
			data := readSample(name)
			var kinds []string
			for _, doc := range documents(data) {
				kinds = append(kinds, doc["kind"].(string))
			}
			Expect(kinds).To(Equal(samples[name]))

			out, err := dryRun(data)
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(strings.Count(out, "(server dry run)")).To(Equal(len(kinds)), out)
			Expect(out).NotTo(ContainSubstring("Warning"), out)
		},
		Entry("OCM: ManagedClusterSetBinding, Placement and ManifestWorkReplicaSet", ocmSample),
		Entry("RHACM: Policies, Placement and PlacementBinding", rhacmSample),
		Entry("Argo CD: ApplicationSet", argoSample),
		Entry("Argo CD: the config the ApplicationSet syncs", argoManifest),
	)

	It("carry VirtPlatformConfigs that the operator's CRD accepts, as the engines write them on a managed cluster", func() {
		configs := embeddedConfigs()
		Expect(configs).To(HaveLen(3), "one in the ManifestWorkReplicaSet, one in each Policy")
		for _, config := range configs {
			out, err := dryRun(toJSON(config))
			Expect(err).NotTo(HaveOccurred(), "%s\n%s", toJSON(config), out)
			Expect(out).To(ContainSubstring("virtplatformconfig.advisor.kubevirt.io/load-aware-rebalancing created (server dry run)"))
		}
	})

	It("carry ConfigurationPolicies that the config policy controller's CRD accepts", func() {
		policies := configurationPolicies()
		Expect(policies).To(HaveLen(2))
		for _, policy := range policies {
			out, err := dryRun(toJSON(policy), "-n", hubNamespace)
			Expect(err).NotTo(HaveOccurred(), "%s\n%s", toJSON(policy), out)
			Expect(out).To(ContainSubstring("configurationpolicy.policy.open-cluster-management.io/"))
		}
	})

	It("roll the approved content out in every engine: action Apply with a content hash", func() {
		configs := embeddedConfigs()
		configs = append(configs, documents(readSample(argoManifest))...)
		var applies int
		for _, config := range configs {
			spec := config["spec"].(map[string]any)
			Expect(spec["profile"]).To(Equal("load-aware-rebalancing"))
			if spec["action"] == "Apply" {
				applies++
				Expect(spec).To(HaveKeyWithValue("approvedContent", HaveKey("hash")))
			}
		}
		Expect(applies).To(Equal(3), "the ManifestWorkReplicaSet, the approving Policy and the Argo CD config")
	})
})

var _ = Describe("The checks of the fleet samples", func() {
	It("refuse a ManifestWorkReplicaSet with a misspelled rollout strategy type", func() {
		out, err := dryRun(replaceOnce(readSample(ocmSample), "type: Progressive\n", "type: Progressiv\n"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`Unsupported value: "Progressiv"`))
	})

	It("refuse an ApplicationSet with a misspelled rolling sync field", func() {
		out, err := dryRun(replaceOnce(readSample(argoSample), "    rollingSync:\n", "    rollingSinc:\n"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`unknown field "spec.strategy.rollingSinc"`))
	})

	It("refuse a PlacementBinding that binds a kind other than Policy or PolicySet", func() {
		out, err := dryRun(replaceOnce(readSample(rhacmSample), "  kind: Policy\n  name: virt-advisor-load-aware-draft\n",
			"  kind: Policies\n  name: virt-advisor-load-aware-draft\n"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`Unsupported value: "Policies"`))
	})

	It("refuse a ConfigurationPolicy with an unknown compliance type", func() {
		policy := configurationPolicies()[0]
		templates := policy["spec"].(map[string]any)["object-templates"].([]any)
		templates[0].(map[string]any)["complianceType"] = "mustexist"
		out, err := dryRun(toJSON(policy), "-n", hubNamespace)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`Unsupported value: "mustexist"`))
	})

	It("refuse an embedded VirtPlatformConfig whose content hash is left as a text placeholder", func() {
		config := embeddedConfigs()[0]
		config["spec"].(map[string]any)["approvedContent"] = map[string]any{"hash": "<status.contentHash of the canary>"}
		out, err := dryRun(toJSON(config))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("the content hash must be the 64-character lowercase hex value of status.contentHash"))
	})
})

func samplePath(elem ...string) string {
	return testenv.Path(append([]string{"config", "samples", "fleet"}, elem...)...)
}

func readSample(name string) string {
	GinkgoHelper()
	data, err := os.ReadFile(samplePath(name))
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// documents decodes the YAML documents of manifest, leaving out empty ones (comments only).
func documents(manifest string) []map[string]any {
	GinkgoHelper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var docs []map[string]any
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		Expect(err).NotTo(HaveOccurred())
		var doc map[string]any
		Expect(yaml.Unmarshal(raw, &doc)).To(Succeed())
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// embeddedConfigs are the VirtPlatformConfigs inside the samples' objects: the manifests of
// the ManifestWorkReplicaSet and the object templates of the Policies' ConfigurationPolicies.
func embeddedConfigs() []map[string]any {
	GinkgoHelper()
	var configs []map[string]any
	for _, doc := range documents(readSample(ocmSample)) {
		if doc["kind"] != "ManifestWorkReplicaSet" {
			continue
		}
		template := doc["spec"].(map[string]any)["manifestWorkTemplate"].(map[string]any)
		for _, manifest := range template["workload"].(map[string]any)["manifests"].([]any) {
			configs = append(configs, virtPlatformConfig(manifest))
		}
	}
	for _, policy := range configurationPolicies() {
		for _, template := range policy["spec"].(map[string]any)["object-templates"].([]any) {
			configs = append(configs, virtPlatformConfig(template.(map[string]any)["objectDefinition"]))
		}
	}
	return configs
}

func virtPlatformConfig(object any) map[string]any {
	GinkgoHelper()
	config := object.(map[string]any)
	Expect(config).To(HaveKeyWithValue("kind", "VirtPlatformConfig"))
	return config
}

// configurationPolicies are the ConfigurationPolicies of the policy templates of the RHACM
// sample's Policies.
func configurationPolicies() []map[string]any {
	GinkgoHelper()
	var policies []map[string]any
	for _, doc := range documents(readSample(rhacmSample)) {
		if doc["kind"] != "Policy" {
			continue
		}
		for _, template := range doc["spec"].(map[string]any)["policy-templates"].([]any) {
			definition := template.(map[string]any)["objectDefinition"].(map[string]any)
			Expect(definition).To(HaveKeyWithValue("kind", "ConfigurationPolicy"))
			policies = append(policies, definition)
		}
	}
	return policies
}

func toJSON(object map[string]any) string {
	GinkgoHelper()
	data, err := json.Marshal(object)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// replaceOnce replaces old in s by new, and fails unless old occurs exactly once.
func replaceOnce(s, old, new string) string {
	GinkgoHelper()
	Expect(strings.Count(s, old)).To(Equal(1), "%q in the sample", old)
	return strings.Replace(s, old, new, 1)
}
