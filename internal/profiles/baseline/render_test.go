package baseline_test

// The render tests need no cluster: RenderItems is a pure function of the options and the
// typed Inputs. Each case's rendered items are compared with testdata/render/<case>.yaml;
// run `go test ./internal/profiles/baseline/ -run TestRenderItems -update` to rewrite
// them, then review every change.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/ignitioncheck"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// options are the profile's defaults around the blocks set.
func options(set advisorv1alpha1.PlatformBaselineOptions) *advisorv1alpha1.PlatformBaselineOptions {
	return baseline.New().Defaults(&advisorv1alpha1.ProfileOptions{PlatformBaseline: &set}).PlatformBaseline
}

// everything turns every component on, with two PCI and one USB device.
func everything() *advisorv1alpha1.PlatformBaselineOptions {
	return options(advisorv1alpha1.PlatformBaselineOptions{
		VFIO: &advisorv1alpha1.BaselineVFIOOptions{Enabled: ptr.To(true), Devices: []advisorv1alpha1.PCIDevice{
			{VendorDevice: "10de:1eb8", ResourceName: "nvidia.com/TU104GL_Tesla_T4"},
			{VendorDevice: "8086:1572", ResourceName: "intel.com/X710"},
		}},
		USBPassthrough: &advisorv1alpha1.BaselineUSBPassthroughOptions{Enabled: ptr.To(true), Devices: []advisorv1alpha1.USBDevice{
			{Vendor: "046d", Product: "c52b", ResourceName: "kubevirt.io/usb-receiver"},
		}},
		KubeletPerformance: &advisorv1alpha1.BaselineKubeletPerformanceOptions{CPUManager: ptr.To(true), MaxPods: ptr.To[int32](250)},
		AAQ:                &advisorv1alpha1.BaselineAAQOptions{Enabled: ptr.To(true)},
	})
}

func allServed() map[string]bool {
	out := map[string]bool{}
	for _, k := range targets.All {
		out[k.CRD] = true
	}
	return out
}

// worker is a worker node with NFD labels.
func worker(name string, labels ...string) baseline.Worker {
	w := baseline.Worker{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		w.Labels[k] = v
	}
	return w
}

const (
	intel    = baseline.LabelCPUVendor + "=Intel"
	amd      = baseline.LabelCPUVendor + "=AMD"
	numa     = baseline.LabelNUMA + "=true"
	oneNUMA  = baseline.LabelNUMA + "=false"
	iommu    = baseline.LabelIOMMU + "=true"
	nvidia   = "feature.node.kubernetes.io/pci-0302_10de.present=true"
	receiver = "feature.node.kubernetes.io/usb-ff_046d_c52b.present=true"
)

// fiveWorkers: 3 of 5 report two NUMA nodes, all Intel, one with the IOMMU on, two with
// an NVIDIA GPU, one with a USB receiver.
func fiveWorkers() baseline.Facts {
	return baseline.FactsOf(
		worker("worker-0", intel, numa, iommu, nvidia, receiver),
		worker("worker-1", intel, numa, nvidia),
		worker("worker-2", intel, numa),
		worker("worker-3", intel, oneNUMA),
		worker("worker-4", intel, oneNUMA),
	)
}

// cluster is an OpenShift cluster with every operator installed and a v1 HyperConverged.
func cluster(facts baseline.Facts) baseline.Inputs {
	return baseline.Inputs{
		Served: allServed(),
		Facts:  facts,
		HyperConverged: &baseline.HyperConverged{
			Instance: baseline.Instance{Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}, Version: "v1",
		},
		RemediationTemplate: &baseline.Instance{Namespace: "openshift-workload-availability", Name: baseline.SelfNodeRemediationDefault},
		MTV:                 baseline.Placement{Instance: baseline.Instance{Namespace: "openshift-mtv", Name: "forklift-controller"}, Exists: true},
		MetalLB:             baseline.Placement{Instance: baseline.Instance{Namespace: "metallb-system", Name: "metallb"}},
	}
}

func TestRenderItems(t *testing.T) {
	v1beta1 := cluster(fiveWorkers())
	v1beta1.HyperConverged.Version = "v1beta1"
	mixed := cluster(baseline.FactsOf(worker("a", intel, numa), worker("b", amd, numa), worker("c")))
	noNFD := cluster(baseline.FactsOf(worker("a"), worker("b")))
	single := cluster(baseline.FactsOf(worker("a", intel, oneNUMA), worker("b", amd, oneNUMA)))
	onlyMCO := baseline.Inputs{
		Served: map[string]bool{targets.MachineConfig.CRD: true, targets.KubeletConfig.CRD: true},
		Facts:  fiveWorkers(),
	}
	twoHCOs := cluster(fiveWorkers())
	twoHCOs.HyperConverged = nil
	twoHCOs.HyperConvergedProblem = "the cluster has 2 HyperConverged objects (a/kubevirt-hyperconverged, b/kubevirt-hyperconverged); " +
		"OpenShift Virtualization supports exactly one: delete the extra ones"
	noNamespaces := cluster(fiveWorkers())
	noNamespaces.MTV = baseline.Placement{Instance: baseline.Instance{Namespace: "openshift-mtv", Name: "forklift-controller"},
		Problem: "namespace openshift-mtv does not exist: install the Migration Toolkit for Virtualization Operator, which creates it"}
	noNamespaces.RemediationTemplate = nil
	off := ptr.To(false)

	cases := []struct {
		name string
		opts *advisorv1alpha1.PlatformBaselineOptions
		in   baseline.Inputs
	}{
		{
			name: "with the defaults on an OpenShift cluster with every operator, it should plan swap, the kubelet with NUMA, the IOMMU, node health, MTV and MetalLB",
			opts: options(advisorv1alpha1.PlatformBaselineOptions{}),
			in:   cluster(fiveWorkers()),
		},
		{
			name: "with every component on a v1 HyperConverged, it should permit the devices, turn on AAQ and the CPU manager",
			opts: everything(),
			in:   cluster(fiveWorkers()),
		},
		{
			name: "with every component on a cluster that serves only v1beta1, it should use the v1beta1 paths",
			opts: everything(),
			in:   v1beta1,
		},
		{
			name: "on Intel and AMD workers, it should add both vendors' IOMMU arguments",
			opts: options(advisorv1alpha1.PlatformBaselineOptions{}),
			in:   mixed,
		},
		{
			name: "without Node Feature Discovery labels, it should skip NUMA, the IOMMU and the devices, naming the labels",
			opts: everything(),
			in:   noNFD,
		},
		{
			name: "on workers with one NUMA node each, it should skip NUMA and keep the kubelet settings",
			opts: options(advisorv1alpha1.PlatformBaselineOptions{}),
			in:   single,
		},
		{
			name: "on a cluster with only the Machine Config Operator, it should skip every other component naming its operator",
			opts: everything(),
			in:   onlyMCO,
		},
		{
			name: "with two HyperConverged objects, it should skip the HyperConverged item and say which",
			opts: everything(),
			in:   twoHCOs,
		},
		{
			name: "without the MTV namespace and the remediation template, it should skip MTV and the node health check saying why",
			opts: options(advisorv1alpha1.PlatformBaselineOptions{}),
			in:   noNamespaces,
		},
		{
			name: "with every component off, it should plan nothing",
			opts: options(advisorv1alpha1.PlatformBaselineOptions{
				Swap: &advisorv1alpha1.BaselineSwapOptions{Enabled: off}, NUMA: &advisorv1alpha1.BaselineNUMAOptions{Enabled: off},
				PCIPassthrough:     &advisorv1alpha1.BaselinePCIPassthroughOptions{Enabled: off},
				KubeletPerformance: &advisorv1alpha1.BaselineKubeletPerformanceOptions{Enabled: off},
				NodeHealthCheck:    &advisorv1alpha1.BaselineNodeHealthCheckOptions{Enabled: off},
				MTV:                &advisorv1alpha1.BaselineMTVOptions{Enabled: off}, MetalLB: &advisorv1alpha1.BaselineMetalLBOptions{Enabled: off},
			}),
			in: cluster(fiveWorkers()),
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

			items, err := baseline.RenderItems(tc.opts, tc.in)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tc.opts).To(Equal(optsBefore), "RenderItems modified its options")
			inAfter, _ := json.Marshal(tc.in)
			g.Expect(string(inAfter)).To(Equal(string(inBefore)), "RenderItems modified its inputs")
			_, err = plan.MergeFragments(items)
			g.Expect(err).NotTo(HaveOccurred(), "the fragments of one item merge")
			golden.Expect(t, path, testenv.RenderedYAML(t, items))
		})
	}
	golden.CheckLeftovers(t)
}

// merged renders and merges the items as a draft does, by name.
func merged(t *testing.T, o *advisorv1alpha1.PlatformBaselineOptions, in baseline.Inputs) map[string]plan.Item {
	t.Helper()
	rendered, err := baseline.RenderItems(o, in)
	if err != nil {
		t.Fatal(err)
	}
	items, err := plan.MergeFragments(rendered)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plan.Item{}
	for _, it := range items {
		out[it.Name] = it
	}
	return out
}

// TestHardwareFacts decides each hardware-conditional component from present and absent
// node labels, and lists the facts in the item message.
func TestHardwareFacts(t *testing.T) {
	g := NewWithT(t)

	present := merged(t, everything(), cluster(fiveWorkers()))
	g.Expect(present[baseline.ItemKubelet].SkipReason).To(BeEmpty())
	g.Expect(present[baseline.ItemKubelet].Message).To(ContainSubstring("numa: 3 of 5 workers report several NUMA nodes"))
	g.Expect(present[baseline.ItemIOMMU].SkipReason).To(BeEmpty())
	g.Expect(present[baseline.ItemIOMMU].Message).To(ContainSubstring("5 of 5 workers report Intel CPUs; 1 of 5 workers already run with the IOMMU on"))
	g.Expect(present[baseline.ItemIOMMU].Desired.Object["spec"]).To(HaveKeyWithValue("kernelArguments", []any{"intel_iommu=on", "iommu=pt"}))
	g.Expect(present[baseline.ItemVFIO].SkipReason).To(BeEmpty())
	g.Expect(present[baseline.ItemVFIO].Message).To(ContainSubstring("2 of 5 workers report a PCI device of vendor 10de (for 10de:1eb8)"))
	g.Expect(present[baseline.ItemHyperConverged].SkipReason).To(BeEmpty())
	g.Expect(present[baseline.ItemHyperConverged].Message).To(ContainSubstring("1 of 5 workers report USB device 046d:c52b"))

	amdOnly := merged(t, options(advisorv1alpha1.PlatformBaselineOptions{}), cluster(baseline.FactsOf(worker("a", amd))))
	g.Expect(amdOnly[baseline.ItemIOMMU].Desired.Object["spec"]).To(HaveKeyWithValue("kernelArguments", []any{"amd_iommu=on", "iommu=pt"}))
	g.Expect(amdOnly[baseline.ItemIOMMU].Message).To(ContainSubstring("1 of 1 workers report AMD CPUs"))

	absent := merged(t, everything(), cluster(baseline.FactsOf(worker("a"), worker("b"))))
	g.Expect(absent[baseline.ItemKubelet].SkipReason).To(BeEmpty(), "the kubelet settings do not depend on NUMA")
	g.Expect(absent[baseline.ItemKubelet].Message).To(ContainSubstring("numa: not planned: no worker reports its NUMA layout (label feature.node.kubernetes.io/memory-numa"))
	g.Expect(absent[baseline.ItemIOMMU].SkipReason).To(ContainSubstring("no worker reports its CPU vendor (label feature.node.kubernetes.io/cpu-model.vendor_id"))
	g.Expect(absent[baseline.ItemVFIO].SkipReason).To(ContainSubstring("0 of 2 workers report a PCI device of vendor 10de"))
	g.Expect(absent[baseline.ItemHyperConverged].SkipReason).To(BeEmpty(), "AAQ needs no hardware")
	g.Expect(absent[baseline.ItemHyperConverged].Message).To(And(
		ContainSubstring("vfio: not planned: 0 of 2 workers report a PCI device"),
		ContainSubstring("usbPassthrough: not planned: 0 of 2 workers report USB device 046d:c52b")))
	_, hasDevices := absent[baseline.ItemHyperConverged].Desired.Object["spec"].(map[string]any)["virtualization"]
	g.Expect(hasDevices).To(BeFalse(), "no permitted devices are planned without the hardware")
}

// TestMachineConfigsPassIgnition checks every MachineConfig the profile renders, for each
// vendor mix and device list, with the real Ignition 3.2 parser and validator.
func TestMachineConfigsPassIgnition(t *testing.T) {
	facts := []baseline.Facts{
		fiveWorkers(),
		baseline.FactsOf(worker("a", amd, nvidia)),
		baseline.FactsOf(worker("a", amd, nvidia), worker("b", intel)),
	}
	devices := [][]advisorv1alpha1.PCIDevice{
		{{VendorDevice: "10de:1eb8", ResourceName: "nvidia.com/T4"}},
		{{VendorDevice: "10DE:1EB8", ResourceName: "nvidia.com/T4"}, {VendorDevice: "10de:2236", ResourceName: "nvidia.com/A10"}},
	}
	labels := []string{"CNV_SWAP", "A23456789012345678901234567890123456"}
	checked := 0
	for fi, f := range facts {
		for di, d := range devices {
			for _, label := range labels {
				t.Run(fmt.Sprintf("facts %d, devices %d, label %s", fi, di, label), func(t *testing.T) {
					g := NewWithT(t)
					o := everything()
					o.VFIO.Devices = d
					o.Swap.PartitionLabel = label
					names := map[string]bool{}
					items, err := baseline.RenderItems(o, cluster(f))
					g.Expect(err).NotTo(HaveOccurred())
					for _, it := range items {
						if it.Desired.GroupVersionKind() != targets.MachineConfig.GVK {
							continue
						}
						g.Expect(it.SkipReason).To(BeEmpty(), it.Name)
						g.Expect(ignitioncheck.Check(it.Desired)).To(Succeed(), "MachineConfig %s", it.Desired.GetName())
						names[it.Desired.GetName()] = true
						checked++
					}
					g.Expect(names).To(HaveLen(3), "swap, IOMMU and VFIO")
				})
			}
		}
	}
	t.Logf("checked %d MachineConfigs", checked)
}

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	o := baseline.New().Defaults(nil).PlatformBaseline
	g.Expect(*o.Swap.Enabled).To(BeTrue())
	g.Expect(o.Swap.PartitionLabel).To(Equal("CNV_SWAP"))
	g.Expect(*o.NUMA.Enabled).To(BeTrue())
	g.Expect(*o.PCIPassthrough.Enabled).To(BeTrue())
	g.Expect(*o.VFIO.Enabled).To(BeFalse())
	g.Expect(*o.USBPassthrough.Enabled).To(BeFalse())
	g.Expect(*o.KubeletPerformance.Enabled).To(BeTrue())
	g.Expect(*o.KubeletPerformance.MaxPods).To(BeEquivalentTo(500))
	g.Expect(*o.KubeletPerformance.AutoSizingReserved).To(BeTrue())
	g.Expect(*o.KubeletPerformance.CPUManager).To(BeFalse())
	g.Expect(*o.NodeHealthCheck.Enabled).To(BeTrue())
	g.Expect(*o.MTV.Enabled).To(BeTrue())
	g.Expect(*o.MetalLB.Enabled).To(BeTrue())
	g.Expect(*o.AAQ.Enabled).To(BeFalse())
	set := everything()
	in := &advisorv1alpha1.ProfileOptions{PlatformBaseline: set}
	g.Expect(baseline.New().Defaults(in).PlatformBaseline).To(Equal(set))
	g.Expect(baseline.New().Defaults(in).PlatformBaseline).NotTo(BeIdenticalTo(set), "Defaults copies its input")
	g.Expect(baseline.New().Prerequisites(nil)).To(BeEmpty(), "every component is optional")
}

// TestFactsCountEachWorkerOnce counts a worker once for each fact, however many of its
// labels report it, matching vendors and devices in any case.
func TestFactsCountEachWorkerOnce(t *testing.T) {
	g := NewWithT(t)
	f := baseline.FactsOf(
		worker("a", nvidia, "feature.node.kubernetes.io/pci-0300_10DE_1eb8.present=true", receiver,
			"feature.node.kubernetes.io/usb-03_046D_C52B.present=true", baseline.LabelCPUVendor+"=GenuineIntel", numa),
		worker("b", "feature.node.kubernetes.io/pci-0302_10de.present=false", baseline.LabelCPUVendor+"=AuthenticAMD", oneNUMA, iommu),
		worker("c", "feature.node.kubernetes.io/pci-0200_8086.sriov.capable=true"),
	)
	g.Expect(f.Workers).To(Equal(3))
	g.Expect(f.WithPCIVendor("10DE")).To(Equal(1), "two labels of one worker report vendor 10de; a false one does not count")
	g.Expect(f.WithPCIVendor("8086")).To(Equal(0), "only .present labels report a device")
	g.Expect(f.WithUSBDevice("046d", "c52b")).To(Equal(1))
	g.Expect(f.CPUVendors).To(Equal(map[nodeconfig.CPUVendor]int{nodeconfig.VendorIntel: 1, nodeconfig.VendorAMD: 1}))
	g.Expect([]int{f.MultiNUMA, f.ReportingNUMA, f.IOMMUEnabled}).To(Equal([]int{1, 2, 1}))
}
