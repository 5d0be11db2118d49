package loadaware_test

// These specs run on the per-generation envtest control planes (clusters_test.go) and
// test only what needs the real API server: that its dry-run, with the generation's CRD
// schema and CEL rules, accepts the drafted KubeDescheduler, the diffs its server-side
// apply dry-run produces, and the managed fields recorded from it. What RenderItems
// produces (profile chosen and why, merged profile list, profileCustomizations, eviction
// limits, mode and interval, per generation) is the table in render_test.go.

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// variant is what the profile must plan on one KubeDescheduler CRD generation.
type variant struct {
	// gen is the test/crds/kubedescheduler directory.
	gen string
	// chosen is the descheduler profile the profile must pick.
	chosen string
	// customizations: the chosen profile is a KubeVirt*RelieveAndMigrate one on a CRD with
	// devEnableEvictionsInBackground, devEnableSoftTainter and devDeviationThresholds; when
	// false, the drafted item must neither set nor manage spec.profileCustomizations.
	customizations bool
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
		customizations: true,
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
		customizations: true,
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
		gen:    "4.17",
		chosen: "LongLifecycle",
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

		if !v.customizations {
			It("sets no profileCustomizations for the "+v.chosen+" fallback", func() {
				Expect(desiredSpec(d.descheduler())).NotTo(HaveKey("profileCustomizations"))
				Expect(d.descheduler().ManagedFields).NotTo(ContainElement(HavePrefix("spec.profileCustomizations")))
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
