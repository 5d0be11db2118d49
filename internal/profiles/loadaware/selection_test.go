package loadaware_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// variant is what the profile must plan on one KubeDescheduler CRD generation.
type variant struct {
	// gen is the test/crds/kubedescheduler directory.
	gen string
	// chosen is the descheduler profile the profile must pick, and reason the explanation
	// its message gives.
	chosen, reason string
	// customizations: the chosen profile is a KubeVirt*RelieveAndMigrate one on a CRD with
	// devEnableEvictionsInBackground, devEnableSoftTainter and devDeviationThresholds.
	customizations bool
	// evictionTotal and evictionNode: the CRD has spec.evictionLimits.total / .node.
	evictionTotal, evictionNode bool
	// duplicatesAllowed: the CRD has no rule against duplicate profiles.
	duplicatesAllowed bool
	// conflicting are live profile sets, each valid on this CRD, holding a profile that
	// conflicts with the chosen one: Entry(description, live, want).
	conflicting []TableEntry
}

// liveProfiles is the live KubeDescheduler most specs start from: two profiles that run
// beside any KubeVirt-aware profile and LifecycleAndUtilization, which conflicts with
// every one of them. Every generation's enum offers all three and none of the 4.21+ CEL
// rules rejects the set.
var liveProfiles = []string{"AffinityAndTaints", "SoftTopologyAndDuplicates", "LifecycleAndUtilization"}

var (
	variant420 = variant{
		gen:            "4.20",
		chosen:         "KubeVirtRelieveAndMigrate",
		reason:         "the best the installed descheduler offers",
		customizations: true,
		evictionTotal:  true,
		evictionNode:   true,
		conflicting: []TableEntry{
			Entry("its dev-preview predecessor DevKubeVirtRelieveAndMigrate",
				[]string{"AffinityAndTaints", "DevKubeVirtRelieveAndMigrate"}, []string{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}),
			Entry("the LongLifecycle fallback",
				[]string{"SoftTopologyAndDuplicates", "LongLifecycle"}, []string{"SoftTopologyAndDuplicates", "KubeVirtRelieveAndMigrate"}),
			Entry("the DevPreviewLongLifecycle fallback",
				[]string{"DevPreviewLongLifecycle", "AffinityAndTaints"}, []string{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}),
			Entry("CompactAndScale",
				[]string{"CompactAndScale"}, []string{"KubeVirtRelieveAndMigrate"}),
		},
	}
	variant418 = variant{
		gen:            "4.18",
		chosen:         "DevKubeVirtRelieveAndMigrate",
		reason:         "the installed descheduler does not offer KubeVirtRelieveAndMigrate",
		customizations: true,
		evictionTotal:  true,
		conflicting: []TableEntry{
			Entry("the LongLifecycle fallback",
				[]string{"AffinityAndTaints", "LongLifecycle"}, []string{"AffinityAndTaints", "DevKubeVirtRelieveAndMigrate"}),
			Entry("the DevPreviewLongLifecycle fallback",
				[]string{"AffinityAndTaints", "DevPreviewLongLifecycle"}, []string{"AffinityAndTaints", "DevKubeVirtRelieveAndMigrate"}),
			Entry("CompactAndScale",
				[]string{"CompactAndScale", "SoftTopologyAndDuplicates"}, []string{"SoftTopologyAndDuplicates", "DevKubeVirtRelieveAndMigrate"}),
		},
		duplicatesAllowed: true,
	}
	variant417 = variant{
		gen:           "4.17",
		chosen:        "LongLifecycle",
		reason:        "the installed descheduler does not offer KubeVirtRelieveAndMigrate or DevKubeVirtRelieveAndMigrate",
		evictionTotal: true,
		conflicting: []TableEntry{
			Entry("its predecessor DevPreviewLongLifecycle",
				[]string{"AffinityAndTaints", "DevPreviewLongLifecycle"}, []string{"AffinityAndTaints", "LongLifecycle"}),
			Entry("CompactAndScale",
				[]string{"CompactAndScale", "AffinityAndTaints"}, []string{"AffinityAndTaints", "LongLifecycle"}),
		},
		duplicatesAllowed: true,
	}
	variant416 = variant{
		gen:    "4.16",
		chosen: "DevPreviewLongLifecycle",
		reason: "the installed descheduler does not offer KubeVirtRelieveAndMigrate or DevKubeVirtRelieveAndMigrate or LongLifecycle",
		conflicting: []TableEntry{
			Entry("LifecycleAndUtilization",
				[]string{"LifecycleAndUtilization", "TopologyAndDuplicates"}, []string{"TopologyAndDuplicates", "DevPreviewLongLifecycle"}),
		},
		duplicatesAllowed: true,
	}
)

// describeProfileSelection specifies how the profile configures the KubeDescheduler on
// the cluster's CRD generation v.
func describeProfileSelection(cl *cluster, v variant) {
	Context("when the live KubeDescheduler runs "+strings.Join(liveProfiles, ", "), func() {
		var d drafted
		BeforeEach(func() {
			cl.liveDescheduler(liveProfiles...)
			d = cl.draft(nil)
		})

		It("chooses "+v.chosen+" and says why in the item message", func() {
			Expect(desiredProfiles(d.descheduler())).To(ContainElement(v.chosen))
			Expect(d.descheduler().Message).To(ContainSubstring(
				"KubeDescheduler cluster will be configured with profile " + v.chosen + " (" + v.reason + ")"))
		})

		It("keeps AffinityAndTaints and SoftTopologyAndDuplicates, drops the conflicting LifecycleAndUtilization and lists no profile twice", func() {
			Expect(desiredProfiles(d.descheduler())).To(Equal([]string{"AffinityAndTaints", "SoftTopologyAndDuplicates", v.chosen}))
		})

		if v.customizations {
			It("turns on evictions in background and the soft tainter and sets the deviation thresholds of the option (default AsymmetricLow)", func() {
				Expect(desiredSpec(d.descheduler())).To(HaveKeyWithValue("profileCustomizations", map[string]any{
					"devEnableEvictionsInBackground": true,
					"devEnableSoftTainter":           true,
					"devDeviationThresholds":         "AsymmetricLow",
				}))
				Expect(d.descheduler().Message).To(ContainSubstring("deviation thresholds AsymmetricLow"))
			})
		} else {
			It("sets no profileCustomizations for the "+v.chosen+" fallback", func() {
				Expect(desiredSpec(d.descheduler())).NotTo(HaveKey("profileCustomizations"))
				Expect(d.descheduler().ManagedFields).NotTo(ContainElement(HavePrefix("spec.profileCustomizations")))
			})
		}

		switch {
		case v.evictionNode:
			It("limits evictions per run in total and per node (defaults 5 and 2)", func() {
				Expect(desiredSpec(d.descheduler())).To(HaveKeyWithValue("evictionLimits",
					map[string]any{"total": int64(5), "node": int64(2)}))
				Expect(d.descheduler().Message).To(ContainSubstring("at most 5 evictions per run (default) and 2 per node (default)"))
			})
		case v.evictionTotal:
			It("limits evictions per run in total only, since this CRD has no evictionLimits.node", func() {
				Expect(desiredSpec(d.descheduler())).To(HaveKeyWithValue("evictionLimits", map[string]any{"total": int64(5)}))
				Expect(d.descheduler().Message).To(ContainSubstring("at most 5 evictions per run (default)"))
				Expect(d.descheduler().Message).NotTo(ContainSubstring("per node"))
			})
		default:
			It("sets no evictionLimits, since this CRD has none", func() {
				Expect(desiredSpec(d.descheduler())).NotTo(HaveKey("evictionLimits"))
				Expect(d.descheduler().Message).NotTo(ContainSubstring("evictions"))
			})
		}

		It("drafts a Pending item the API server's dry-run accepted, whose diff adds "+v.chosen+" and removes LifecycleAndUtilization", func() {
			it := d.descheduler()
			Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
			Expect(it.TargetRef).To(Equal(advisorv1alpha1.TargetReference{
				APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler",
				Namespace: loadaware.DeschedulerNamespace, Name: loadaware.DeschedulerName,
			}))
			Expect(it.Diff).To(MatchRegexp(diffLine("+", v.chosen).String()), "diff:\n%s", it.Diff)
			Expect(it.Diff).To(MatchRegexp(diffLine("-", "LifecycleAndUtilization").String()), "diff:\n%s", it.Diff)
			for _, kept := range []string{"AffinityAndTaints", "SoftTopologyAndDuplicates"} {
				Expect(it.Diff).NotTo(MatchRegexp(diffLine("-", kept).String()), "diff:\n%s", it.Diff)
			}
			Expect(it.SnapshotHash).NotTo(BeEmpty())
			Expect(it.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactMedium))
		})

		It("sets the mode Automatic and the 60 s interval of the defaults over the live Predictive, hourly ones", func() {
			spec := desiredSpec(d.descheduler())
			Expect(spec).To(HaveKeyWithValue("mode", "Automatic"))
			Expect(spec).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(60)))
			Expect(spec).To(HaveKeyWithValue("managementState", "Managed"))
		})
	})

	DescribeTable("replaces a live profile that conflicts with "+v.chosen+", keeping the others",
		func(live, want []string) {
			cl.liveDescheduler(live...)
			d := cl.draft(nil)
			Expect(desiredProfiles(d.descheduler())).To(Equal(want))
			it := d.descheduler()
			Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
			for _, p := range live {
				if !slices.Contains(want, p) {
					Expect(it.Diff).To(MatchRegexp(diffLine("-", p).String()), "diff:\n%s", it.Diff)
				}
			}
			Expect(it.Diff).To(MatchRegexp(diffLine("+", v.chosen).String()), "diff:\n%s", it.Diff)
		},
		v.conflicting,
	)

	It("keeps "+v.chosen+" once when the live KubeDescheduler already runs it", func() {
		cl.liveDescheduler("AffinityAndTaints", v.chosen)
		d := cl.draft(nil)
		Expect(desiredProfiles(d.descheduler())).To(Equal([]string{"AffinityAndTaints", v.chosen}))
		Expect(d.descheduler().State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", d.descheduler().Message)
		Expect(d.descheduler().Diff).NotTo(MatchRegexp(`(?m)^[-+]\s*- `), "the profiles do not change:\n%s", d.descheduler().Diff)
	})

	if v.duplicatesAllowed {
		It("lists each profile once when the live KubeDescheduler lists some twice (this CRD allows it)", func() {
			cl.liveDescheduler("AffinityAndTaints", v.chosen, "AffinityAndTaints", v.chosen)
			d := cl.draft(nil)
			Expect(desiredProfiles(d.descheduler())).To(Equal([]string{"AffinityAndTaints", v.chosen}))
			Expect(d.descheduler().State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", d.descheduler().Message)
		})
	}

	It("plans to create the KubeDescheduler with only "+v.chosen+" when there is none", func() {
		d := cl.draft(nil)
		it := d.descheduler()
		Expect(desiredProfiles(it)).To(Equal([]string{v.chosen}))
		Expect(it.Message).To(HavePrefix("KubeDescheduler cluster will be created with profile " + v.chosen))
		Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
		Expect(it.Diff).To(HavePrefix("--- /dev/null"))
	})
}

// describeSchemaInspection specifies that the profile sets only the profileCustomizations
// keys the installed CRD declares. The CRD is the installed one with keys removed, served
// to Render through crdOverride; nothing is drafted, since the API server keeps the full
// schema.
func describeSchemaInspection(cl *cluster) {
	Context("with a KubeDescheduler CRD that declares fewer profileCustomizations keys", func() {
		render := func(without ...string) plan.Item {
			crd := cl.deschedulerCRD()
			editSpecSchema(crd, func(spec *apiextensionsv1.JSONSchemaProps) {
				for _, key := range without {
					delete(spec.Properties["profileCustomizations"].Properties, key)
				}
			})
			items, err := loadaware.New().Render(ctx, crdOverride{Reader: cl.c, crd: crd}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(items).NotTo(BeEmpty())
			Expect(items[0].Name).To(Equal(loadaware.ItemDescheduler))
			return items[0]
		}

		It("sets only the keys the CRD declares", func() {
			it := render("devEnableSoftTainter", "devDeviationThresholds")
			custom, found, err := unstructured.NestedMap(it.Desired.Object, "spec", "profileCustomizations")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			Expect(custom).To(Equal(map[string]any{"devEnableEvictionsInBackground": true}))
			Expect(it.Message).NotTo(ContainSubstring("deviation thresholds"))
		})

		It("sets no profileCustomizations when the CRD declares none of its keys", func() {
			it := render("devEnableEvictionsInBackground", "devEnableSoftTainter", "devDeviationThresholds")
			Expect(it.Desired.Object["spec"]).NotTo(HaveKey("profileCustomizations"))
		})
	})
}
