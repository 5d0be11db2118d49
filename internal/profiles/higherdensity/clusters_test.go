package higherdensity_test

import (
	"errors"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// One control plane per HyperConverged CRD, started once for its container;
// ContinueOnFailure keeps one failing spec from hiding the results of the others.

var _ = Describe("virt-higher-density with the upstream HyperConverged CRD (v1 stored, v1beta1 served)", Ordered, ContinueOnFailure, func() {
	cl := onCluster(upstreamCRD)
	describePlans(cl)
	describeFindingTheHyperConverged(cl)
})

var _ = Describe("virt-higher-density with the upstream HyperConverged CRD of a cluster that serves only v1beta1", Ordered, ContinueOnFailure, func() {
	cl := onCluster(upstreamV1beta1Only)
	describePlans(cl)
})

var _ = Describe("virt-higher-density with the project's HyperConverged test CRD", Ordered, ContinueOnFailure, func() {
	cl := onCluster(projectCRD)
	describePlans(cl)
	describeFindingTheHyperConverged(cl)
	describeDefaultsMatchTheCRD(cl)
})

// line matches a whole line of a unified diff.
func line(sign, text string) string {
	return `(?m)^` + regexp.QuoteMeta(sign) + `\s*` + regexp.QuoteMeta(text) + `$`
}

// overcommitPath is memoryOvercommitPercentage's path at the cluster's version.
func (cl *cluster) fields() targets.HyperConvergedFields {
	return targets.HyperConvergedFields{Version: cl.version}
}

func (cl *cluster) nested(obj *unstructured.Unstructured, path []string) (any, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	Expect(err).NotTo(HaveOccurred())
	return v, found
}

func describePlans(cl *cluster) {
	Context("plans", func() {
		BeforeEach(func() {
			cl.hyperConverged("openshift-cnv", "{}")
			DeferCleanup(func() {
				mc := &unstructured.Unstructured{}
				mc.SetGroupVersionKind(targets.MachineConfig.GVK)
				mc.SetName(higherdensity.SwapMachineConfigName)
				Expect(client.IgnoreNotFound(cl.c.Delete(ctx, mc))).To(Succeed())
			})
		})

		It("with the defaults: creates the swap MachineConfig, then raises memory overcommit from the server default 100 to 150 and turns KSM on for every node, at the served version's path", func() {
			_, p := cl.draft(nil)
			Expect(p.Items).To(HaveLen(2))
			Expect(p.Items[0].Name).To(Equal(higherdensity.ItemSwap), "swap comes first")
			swap := p.Items[0]
			Expect(swap.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactHigh))
			Expect(swap.Diff).To(HavePrefix("--- /dev/null"))
			Expect(swap.Diff).To(MatchRegexp(line("+", "ConditionPathExists=/dev/disk/by-partlabel/CNV_SWAP")))
			Expect(swap.Diff).To(MatchRegexp(line("+", "MemorySwapMax=0")))

			hco := item(p, higherdensity.ItemHyperConverged)
			Expect(hco.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactMedium))
			Expect(hco.TargetRef.APIVersion).To(Equal("hco.kubevirt.io/" + cl.version))
			Expect(hco.Diff).To(MatchRegexp(line("-", "memoryOvercommitPercentage: 100")))
			Expect(hco.Diff).To(MatchRegexp(line("+", "memoryOvercommitPercentage: 150")))
			Expect(hco.Message).To(ContainSubstring("100 → 150"))
			Expect(hco.Message).To(ContainSubstring("running VMs keep what they see until they restart or migrate"))
			Expect(hco.ManagedFields).To(ContainElement(pathString(cl.fields().MemoryOvercommitPercentage())))
			Expect(hco.Diff).To(MatchRegexp(line("+", "ksmConfiguration:")))
			Expect(hco.Diff).To(MatchRegexp(line("+", "nodeLabelSelector: {}")))
			Expect(hco.Message).To(ContainSubstring("Kernel Samepage Merging on every node"))
			Expect(hco.ManagedFields).To(ContainElement(pathString(append(cl.fields().KSMConfiguration(), "nodeLabelSelector"))),
				"KSM is on for every node by default")
			if cl.version == "v1" {
				Expect(hco.Diff).To(MatchRegexp(line(" ", "virtualization:")))
			} else {
				Expect(hco.Diff).NotTo(ContainSubstring("virtualization:"))
			}
		})

		It("KSM on by default: sets nodeLabelSelector {}; enabled: false afterwards: removes the ksmConfiguration it set", func() {
			opts := &advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](110)}
			rendered, p := cl.draft(opts)
			hco := p.Items[0]
			Expect(hco.Diff).To(MatchRegexp(line("+", "ksmConfiguration:")))
			Expect(hco.Diff).To(MatchRegexp(line("+", "nodeLabelSelector: {}")))
			Expect(hco.Message).To(ContainSubstring("Kernel Samepage Merging on every node"))
			cl.applyAll(rendered, p)
			selector, found := cl.nested(cl.readHyperConverged("openshift-cnv"), append(cl.fields().KSMConfiguration(), "nodeLabelSelector"))
			Expect(found).To(BeTrue())
			Expect(selector).To(BeEmpty())

			By("opting out of KSM removes the field this profile set")
			opts.KSMConfiguration = &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(false)}
			rendered, p = cl.draft(opts)
			Expect(p.Items[0].Diff).To(MatchRegexp(line("-", "ksmConfiguration:")))
			Expect(p.Items[0].ManagedFields).NotTo(ContainElement(ContainSubstring("ksmConfiguration")))
			cl.applyAll(rendered, p)
			_, found = cl.nested(cl.readHyperConverged("openshift-cnv"), cl.fields().KSMConfiguration())
			Expect(found).To(BeFalse())
		})

		It("KSM opted out leaves a ksmConfiguration someone else set as it is", func() {
			hco := cl.readHyperConverged("openshift-cnv")
			Expect(unstructured.SetNestedField(hco.Object, map[string]any{"matchLabels": map[string]any{"ksm": "on"}},
				append(cl.fields().KSMConfiguration(), "nodeLabelSelector")...)).To(Succeed())
			Expect(cl.c.Update(ctx, hco)).To(Succeed())
			rendered, p := cl.draft(&advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](110),
				KSMConfiguration: &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(false)}})
			Expect(p.Items[0].Diff).NotTo(MatchRegexp(`(?m)^[-+].*ksm`))
			cl.applyAll(rendered, p)
			_, found := cl.nested(cl.readHyperConverged("openshift-cnv"), cl.fields().KSMConfiguration())
			Expect(found).To(BeTrue())
		})

		It("applies as the profile's own field manager, and a second draft has nothing to change", func() {
			rendered, p := cl.draft(nil)
			cl.applyAll(rendered, p)
			hco := cl.readHyperConverged("openshift-cnv")
			v, _ := cl.nested(hco, cl.fields().MemoryOvercommitPercentage())
			Expect(v).To(BeEquivalentTo(150))
			var managers []string
			for _, mf := range hco.GetManagedFields() {
				managers = append(managers, mf.Manager)
			}
			Expect(managers).To(ContainElement(plan.FieldManagerFor(profileName)))

			_, again := cl.draft(nil)
			for _, it := range again.Items {
				Expect(it.Diff).To(Equal(plan.NoChanges), "item %s", it.Name)
			}
		})
	})
}

func pathString(path []string) string {
	out := ""
	for i, p := range path {
		if i > 0 {
			out += "."
		}
		out += p
	}
	return out
}

func describeFindingTheHyperConverged(cl *cluster) {
	Context("finding the HyperConverged", func() {
		render := func() error {
			_, err := higherdensity.New().Render(ctx, cl.c, nil)
			return err
		}
		prerequisiteError := func(err error) string {
			var pe *profiles.PrerequisiteError
			Expect(errors.As(err, &pe)).To(BeTrue(), "want a *profiles.PrerequisiteError, got %v", err)
			return pe.Error()
		}

		It("none: a prerequisite error that says where it is expected", func() {
			msg := prerequisiteError(render())
			Expect(msg).To(ContainSubstring("no HyperConverged exists"))
			Expect(msg).To(ContainSubstring("openshift-cnv"))
			Expect(msg).To(ContainSubstring("kubevirt-hyperconverged"))
		})

		It("two: a prerequisite error that names both", func() {
			cl.hyperConverged("openshift-cnv", "{}")
			cl.hyperConverged("kubevirt-hyperconverged", "{}")
			msg := prerequisiteError(render())
			Expect(msg).To(ContainSubstring("2 HyperConverged objects"))
			Expect(msg).To(ContainSubstring("kubevirt-hyperconverged/kubevirt-hyperconverged, openshift-cnv/kubevirt-hyperconverged"))
		})

		It("upstream's, in kubevirt-hyperconverged: targets it there", func() {
			cl.hyperConverged("kubevirt-hyperconverged", "{}")
			_, p := cl.draft(&advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](100)})
			Expect(p.Items[0].TargetRef.Namespace).To(Equal("kubevirt-hyperconverged"))
			Expect(p.Items[0].Message).To(HavePrefix("HyperConverged kubevirt-hyperconverged/kubevirt-hyperconverged"))
		})
	})
}

// describeDefaultsMatchTheCRD specifies that the Go defaults are the CRD's defaults.
func describeDefaultsMatchTheCRD(cl *cluster) {
	Context("defaults", func() {
		serverDefaulted := func(options string) *advisorv1alpha1.VirtHigherDensityOptions {
			cl.create(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata: {name: virt-higher-density}
spec:
  profile: virt-higher-density
  options: {virtHigherDensity: ` + options + `}`)
			got := &advisorv1alpha1.VirtPlatformConfig{}
			Expect(cl.c.Get(ctx, types.NamespacedName{Name: profileName}, got)).To(Succeed())
			Expect(got.Spec.Options.VirtHigherDensity).NotTo(BeNil())
			return got.Spec.Options.VirtHigherDensity
		}

		It("are what the API server fills into options: {virtHigherDensity: {}}", func() {
			Expect(serverDefaulted("{}")).To(Equal(higherdensity.New().Defaults(nil).VirtHigherDensity))
		})

		DescribeTable("fill in what the API server fills in around the options the user set",
			func(options string, set *advisorv1alpha1.VirtHigherDensityOptions) {
				Expect(serverDefaulted(options)).To(Equal(
					higherdensity.New().Defaults(&advisorv1alpha1.ProfileOptions{VirtHigherDensity: set}).VirtHigherDensity))
			},
			Entry("swap off and a ratio of 110", "{enableSwap: false, memoryToRequestRatio: 110}",
				&advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](110)}),
			Entry("KSM opted out", "{ksmConfiguration: {enabled: false}}",
				&advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(false)}}),
			Entry("KSM on selected nodes", `{ksmConfiguration: {nodeLabelSelector: {matchLabels: {ksm: "on"}}}}`,
				&advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: &advisorv1alpha1.KSMConfiguration{
					NodeLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ksm": "on"}},
				}}),
		)

		It("a ratio above 120 without swap is refused at admission", func() {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("advisor.kubevirt.io/v1alpha1")
			obj.SetKind("VirtPlatformConfig")
			obj.SetName(profileName)
			obj.Object["spec"] = map[string]any{"profile": profileName, "options": map[string]any{
				"virtHigherDensity": map[string]any{"enableSwap": false, "memoryToRequestRatio": int64(150)},
			}}
			err := cl.c.Create(ctx, obj)
			Expect(err).To(MatchError(ContainSubstring("memoryToRequestRatio above 120 requires enableSwap: true")))
		})
	})
}
