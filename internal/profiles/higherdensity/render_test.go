package higherdensity_test

// The render tests need no cluster: RenderItems is a pure function of the options and the
// typed Inputs. Each case's rendered items are compared with testdata/render/<case>.yaml;
// run `go test ./internal/profiles/higherdensity/ -run TestRenderItems -update` to rewrite
// them, then review every change.

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// options are the profile's defaults around the fields set.
func options(set advisorv1alpha1.VirtHigherDensityOptions) *advisorv1alpha1.VirtHigherDensityOptions {
	return higherdensity.New().Defaults(&advisorv1alpha1.ProfileOptions{VirtHigherDensity: &set}).VirtHigherDensity
}

// onVersion is a freshly installed HyperConverged in openshift-cnv, read at version.
func onVersion(version string) higherdensity.Inputs {
	return higherdensity.Inputs{Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged", Version: version}
}

// ksmOff opts out of KSM.
func ksmOff() *advisorv1alpha1.KSMConfiguration {
	return &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(false)}
}

func TestRenderItems(t *testing.T) {
	noSwap := advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](120)}
	configured := onVersion("v1")
	configured.Overcommit = ptr.To[int64](110)
	configured.KSM = map[string]any{"nodeLabelSelector": map[string]any{"matchLabels": map[string]any{"ksm": "on"}}}
	upstream := onVersion("v1")
	upstream.Namespace = "kubevirt-hyperconverged"

	cases := []struct {
		name string
		opts *advisorv1alpha1.VirtHigherDensityOptions
		in   higherdensity.Inputs
	}{
		{
			name: "with the defaults on a v1 HyperConverged, it should plan swap, then memory overcommit 150 and KSM on every node under spec.virtualization",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{}),
			in:   onVersion("v1"),
		},
		{
			name: "with the defaults on a cluster that serves only v1beta1, it should set memory overcommit and KSM at spec",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{}),
			in:   onVersion("v1beta1"),
		},
		{
			name: "with no options at all, it should plan as with the defaults",
			opts: higherdensity.New().Defaults(nil).VirtHigherDensity,
			in:   onVersion("v1"),
		},
		{
			name: "with KSM enabled and no selector, it should set an empty nodeLabelSelector",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(true)}}),
			in:   onVersion("v1"),
		},
		{
			name: "with KSM opted out, it should leave ksmConfiguration out and say that one it set before is removed",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: ksmOff()}),
			in:   onVersion("v1"),
		},
		{
			name: "with KSM opted out and a selector, it should ignore the selector",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: &advisorv1alpha1.KSMConfiguration{
				Enabled: ptr.To(false), NodeLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ksm": "on"}},
			}}),
			in: onVersion("v1beta1"),
		},
		{
			name: "with KSM on selected nodes, it should copy labels and expressions of the selector",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: &advisorv1alpha1.KSMConfiguration{
				NodeLabelSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""},
					MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: "kubevirt.io/schedulable", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"},
					}},
				},
			}}),
			in: onVersion("v1"),
		},
		{
			name: "without swap and a ratio of 120, it should plan only the HyperConverged",
			opts: options(noSwap),
			in:   onVersion("v1"),
		},
		{
			name: "with a ratio of 300 and a custom swap partition label, it should use both",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{MemoryToRequestRatio: ptr.To[int32](300), SwapPartitionLabel: "VM_SWAP"}),
			in:   onVersion("v1"),
		},
		{
			name: "when the HyperConverged already overcommits and runs KSM on some nodes, it should name both current values",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{}),
			in:   configured,
		},
		{
			name: "when the HyperConverged runs KSM on some nodes and KSM is opted out, it should leave KSM out",
			opts: options(advisorv1alpha1.VirtHigherDensityOptions{KSMConfiguration: ksmOff()}),
			in:   configured,
		},
		{
			name: "when the HyperConverged is upstream's in kubevirt-hyperconverged, it should target it there",
			opts: options(noSwap),
			in:   upstream,
		},
	}

	golden := testenv.NewGolden("testdata/render")
	for _, tc := range cases {
		path := golden.Path(t, tc.name)
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			optsBefore := tc.opts.DeepCopy()
			inBefore, err := json.Marshal(tc.in)
			g.Expect(err).NotTo(HaveOccurred())

			items, err := higherdensity.RenderItems(tc.opts, tc.in)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tc.opts).To(Equal(optsBefore), "RenderItems modified its options")
			inAfter, _ := json.Marshal(tc.in)
			g.Expect(string(inAfter)).To(Equal(string(inBefore)), "RenderItems modified its inputs")
			golden.Expect(t, path, testenv.RenderedYAML(t, items))
		})
	}
	golden.CheckLeftovers(t)
}

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	p := higherdensity.New()
	g.Expect(p.Defaults(nil).VirtHigherDensity).To(Equal(&advisorv1alpha1.VirtHigherDensityOptions{
		EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To[int32](150), SwapPartitionLabel: "CNV_SWAP",
		KSMConfiguration: &advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(true)},
	}), "swap, KSM on every node, memory overcommit 150")
	set := &advisorv1alpha1.VirtHigherDensityOptions{EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](110), SwapPartitionLabel: "X",
		KSMConfiguration: ksmOff()}
	in := &advisorv1alpha1.ProfileOptions{VirtHigherDensity: set}
	g.Expect(p.Defaults(in).VirtHigherDensity).To(Equal(set))
	g.Expect(p.Defaults(in).VirtHigherDensity).NotTo(BeIdenticalTo(set), "Defaults copies its input")
	g.Expect(p.Defaults(in).VirtHigherDensity.KSMConfiguration).NotTo(BeIdenticalTo(set.KSMConfiguration), "Defaults copies its input")

	selected := &metav1.LabelSelector{MatchLabels: map[string]string{"ksm": "on"}}
	g.Expect(p.Defaults(&advisorv1alpha1.ProfileOptions{VirtHigherDensity: &advisorv1alpha1.VirtHigherDensityOptions{
		KSMConfiguration: &advisorv1alpha1.KSMConfiguration{NodeLabelSelector: selected},
	}}).VirtHigherDensity.KSMConfiguration).To(Equal(&advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(true), NodeLabelSelector: selected}),
		"a selector alone leaves KSM enabled")
}

func TestPrerequisites(t *testing.T) {
	g := NewWithT(t)
	p := higherdensity.New()
	crds := func(opts *advisorv1alpha1.ProfileOptions) []string {
		var out []string
		for _, pr := range p.Prerequisites(opts) {
			out = append(out, pr.CRD)
		}
		return out
	}
	g.Expect(crds(nil)).To(HaveExactElements("hyperconvergeds.hco.kubevirt.io", "machineconfigs.machineconfiguration.openshift.io"))
	g.Expect(crds(&advisorv1alpha1.ProfileOptions{VirtHigherDensity: &advisorv1alpha1.VirtHigherDensityOptions{
		EnableSwap: ptr.To(false), MemoryToRequestRatio: ptr.To[int32](100),
	}})).To(HaveExactElements("hyperconvergeds.hco.kubevirt.io"), "without swap no MachineConfig is planned")
}
