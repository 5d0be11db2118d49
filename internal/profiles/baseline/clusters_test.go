package baseline_test

import (
	"fmt"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// line matches a whole line of a unified diff.
func line(sign, text string) string {
	return `(?m)^` + regexp.QuoteMeta(sign) + `\s*` + regexp.QuoteMeta(text) + `$`
}

// The objects a platform-baseline plan may create, deleted after each spec.
var created = []struct {
	kind            targets.Kind
	namespace, name string
}{
	{targets.MachineConfig, "", nodeconfig.SwapMachineConfigName},
	{targets.MachineConfig, "", nodeconfig.IOMMUMachineConfigName},
	{targets.MachineConfig, "", nodeconfig.VFIOMachineConfigName},
	{targets.KubeletConfig, "", baseline.KubeletConfigName},
	{targets.NodeHealthCheck, "", baseline.NodeHealthCheckName},
	{targets.ForkliftController, baseline.MTVNamespace, baseline.ForkliftControllerName},
	{targets.MetalLB, baseline.MetalLBNamespace, baseline.MetalLBName},
}

var _ = Describe("platform-baseline against the real upstream CRDs of every component", Ordered, ContinueOnFailure, func() {
	cl := onCluster()

	// aCluster creates three workers (two with two NUMA nodes, all Intel, one with an
	// NVIDIA GPU and a USB receiver), the HyperConverged and the Self Node Remediation
	// template.
	aCluster := func() {
		labels := [][]string{
			{intel, numa, nvidia, receiver},
			{intel, numa},
			{intel, oneNUMA},
		}
		for i, ls := range labels {
			doc := fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-%d\n  labels:\n    node-role.kubernetes.io/worker: \"\"\n", i)
			for _, l := range ls {
				k, v, _ := cut(l)
				doc += fmt.Sprintf("    %s: %q\n", k, v)
			}
			cl.create(doc)
		}
		cl.create(`
apiVersion: v1
kind: Node
metadata:
  name: master-0
  labels: {node-role.kubernetes.io/master: "", node-role.kubernetes.io/control-plane: "", ` + baseline.LabelCPUVendor + `: AMD}`)
		cl.create(`
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}
spec: {}`)
		cl.create(`
apiVersion: self-node-remediation.medik8s.io/v1alpha1
kind: SelfNodeRemediationTemplate
metadata: {name: ` + baseline.SelfNodeRemediationDefault + `, namespace: openshift-workload-availability}
spec:
  template:
    spec: {remediationStrategy: Automatic}`)
		DeferCleanup(func() {
			for _, o := range created {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(o.kind.GVK)
				obj.SetNamespace(o.namespace)
				obj.SetName(o.name)
				Expect(client.IgnoreNotFound(cl.c.Delete(ctx, obj))).To(Succeed())
			}
		})
	}

	Context("every component", func() {
		BeforeEach(func() { aCluster() })

		It("drafts each item with a server-side dry-run the real CRD accepts, shows its change, and a second draft after the apply has nothing to change", func() {
			rendered, p := cl.draft(everything())
			names := make([]string, 0, len(p.Items))
			for _, it := range p.Items {
				names = append(names, it.Name)
				Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item %s: %s", it.Name, it.Message)
			}
			Expect(names).To(Equal([]string{baseline.ItemSwap, baseline.ItemKubelet, baseline.ItemIOMMU, baseline.ItemVFIO,
				baseline.ItemNodeHealth, baseline.ItemMTV, baseline.ItemMetalLB, baseline.ItemHyperConverged}))

			swap := item(p, baseline.ItemSwap)
			Expect(swap.Diff).To(HavePrefix("--- /dev/null"))
			Expect(swap.Diff).To(MatchRegexp(line("+", "ConditionPathExists=/dev/disk/by-partlabel/CNV_SWAP")))

			kubelet := item(p, baseline.ItemKubelet)
			Expect(kubelet.Components).To(Equal([]string{baseline.ComponentNUMA, baseline.ComponentKubelet}))
			Expect(kubelet.Diff).To(HavePrefix("--- /dev/null\n+++ KubeletConfig " + baseline.KubeletConfigName))
			for _, l := range []string{"topologyManagerPolicy: best-effort", "nodeStatusMaxImages: -1", "maxPods: 250",
				"cpuManagerPolicy: static", "autoSizingReserved: true", "pools.operator.machineconfiguration.openshift.io/worker: \"\""} {
				Expect(kubelet.Diff).To(MatchRegexp(line("+", l)))
			}
			Expect(kubelet.Message).To(ContainSubstring("2 of 3 workers report several NUMA nodes"))

			iommu := item(p, baseline.ItemIOMMU)
			Expect(iommu.Diff).To(MatchRegexp(line("+", "- intel_iommu=on")))
			Expect(iommu.Diff).To(MatchRegexp(line("+", "- iommu=pt")))
			Expect(iommu.Diff).NotTo(ContainSubstring("amd_iommu"), "the AMD control-plane node is not a worker")
			Expect(iommu.Message).To(ContainSubstring("3 of 3 workers report Intel CPUs"))

			vfio := item(p, baseline.ItemVFIO)
			Expect(vfio.Diff).To(ContainSubstring("options%20vfio-pci%20ids=10de:1eb8%2C8086:1572"))
			Expect(vfio.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactHigh))

			nhc := item(p, baseline.ItemNodeHealth)
			for _, l := range []string{"minHealthy: 51%", "- duration: 300s", "status: Unknown", "operator: DoesNotExist",
				"- key: node-role.kubernetes.io/control-plane", "name: " + baseline.SelfNodeRemediationDefault,
				"namespace: openshift-workload-availability"} {
				Expect(nhc.Diff).To(MatchRegexp(line("+", l)))
			}

			mtv := item(p, baseline.ItemMTV)
			Expect(mtv.Diff).To(MatchRegexp(line("+", `feature_ui_plugin: "true"`)), "the CRD wants strings")
			Expect(mtv.Diff).To(HavePrefix("--- /dev/null\n+++ ForkliftController openshift-mtv/forklift-controller"))

			metallb := item(p, baseline.ItemMetalLB)
			Expect(metallb.Diff).To(HavePrefix("--- /dev/null\n+++ MetalLB metallb-system/metallb"))

			hco := item(p, baseline.ItemHyperConverged)
			Expect(hco.Components).To(Equal([]string{baseline.ComponentVFIO, baseline.ComponentUSB, baseline.ComponentAAQ}))
			for _, l := range []string{"- pciDeviceSelector: 10DE:1EB8", "resourceName: nvidia.com/TU104GL_Tesla_T4",
				"- resourceName: kubevirt.io/usb-receiver", "enable: true"} {
				Expect(hco.Diff).To(MatchRegexp(line("+", l)))
			}

			cl.applyAll(profileName, rendered, p)
			kc := cl.read("machineconfiguration.openshift.io/v1", "KubeletConfig", "", baseline.KubeletConfigName)
			Expect(managers(kc)).To(ContainElement(plan.FieldManagerFor(profileName)))
			aaq, _, _ := unstructured.NestedBool(cl.read("hco.kubevirt.io/v1", "HyperConverged", "openshift-cnv", "kubevirt-hyperconverged").Object,
				"spec", "deployment", "applicationAwareConfig", "enable")
			Expect(aaq).To(BeTrue())

			_, again := cl.draft(everything())
			for _, it := range again.Items {
				Expect(it.Diff).To(Equal(plan.NoChanges), "item %s", it.Name)
			}
		})
	})

	Context("a component whose CRD the cluster does not serve", func() {
		BeforeEach(func() { aCluster() })

		DescribeTable("is Skipped naming the operator to install, while the other items draft and apply",
			func(kind targets.Kind, operator string, skipped ...string) {
				cl.setServed(kind.CRD, false)
				DeferCleanup(func() { cl.setServed(kind.CRD, true); cl.waitServed(kind) })

				rendered, p := cl.draft(everything())
				isSkipped := map[string]bool{}
				for _, name := range skipped {
					isSkipped[name] = true
					it := item(p, name)
					Expect(it.State).To(Equal(advisorv1alpha1.ItemSkipped), "item %s", name)
					Expect(it.Message).To(ContainSubstring("CRD " + kind.CRD + " is missing: install " + operator))
				}
				for _, it := range p.Items {
					if !isSkipped[it.Name] {
						Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item %s: %s", it.Name, it.Message)
					}
				}
				applied := cl.applyAll(profileName, rendered, p)
				Expect(applied).To(HaveLen(len(p.Items) - len(skipped)))
			},
			Entry("MachineConfig: swap, IOMMU and VFIO", targets.MachineConfig, "the Machine Config Operator (OpenShift)",
				baseline.ItemSwap, baseline.ItemIOMMU, baseline.ItemVFIO),
			Entry("KubeletConfig: NUMA and kubelet performance", targets.KubeletConfig, "the Machine Config Operator (OpenShift)",
				baseline.ItemKubelet),
			Entry("HyperConverged: VFIO devices, USB devices and AAQ", targets.HyperConverged, "OpenShift Virtualization",
				baseline.ItemHyperConverged),
			Entry("NodeHealthCheck", targets.NodeHealthCheck, "the Node Health Check Operator", baseline.ItemNodeHealth),
			Entry("SelfNodeRemediationTemplate, the node health check's remediation", targets.SelfNodeRemediationTemplate,
				"the Self Node Remediation Operator", baseline.ItemNodeHealth),
			Entry("ForkliftController (MTV)", targets.ForkliftController, "the Migration Toolkit for Virtualization Operator", baseline.ItemMTV),
			Entry("MetalLB", targets.MetalLB, "the MetalLB Operator", baseline.ItemMetalLB),
		)
	})

	Context("hardware facts from the worker nodes' labels", func() {
		It("reads them from the workers only (not the AMD control-plane node): plans NUMA, the Intel IOMMU arguments and the reported devices, counting 3 workers", func() {
			aCluster()
			_, p := cl.draft(everything())
			Expect(item(p, baseline.ItemKubelet).Message).To(ContainSubstring("numa: 2 of 3 workers report several NUMA nodes (feature.node.kubernetes.io/memory-numa=true)"))
			Expect(item(p, baseline.ItemIOMMU).State).To(Equal(advisorv1alpha1.ItemPending))
			Expect(item(p, baseline.ItemVFIO).Message).To(ContainSubstring("1 of 3 workers report a PCI device of vendor 10de (for 10de:1eb8)"))
			Expect(item(p, baseline.ItemHyperConverged).Message).To(ContainSubstring("1 of 3 workers report USB device 046d:c52b"))
		})
	})

	Context("together with virt-higher-density", func() {
		BeforeEach(func() { aCluster() })

		It("co-owns the swap MachineConfig and the HyperConverged: neither apply removes the other's fields, and each profile sees drift only on its own", func() {
			hd := string(advisorv1alpha1.ProfileVirtHigherDensity)
			hdRendered, err := higherdensity.New().Render(ctx, cl.c, nil)
			Expect(err).NotTo(HaveOccurred())
			hdApplied := cl.applyAll(hd, hdRendered, cl.draftAs(hd, hdRendered))

			rendered, p := cl.draft(everything())
			swap := item(p, baseline.ItemSwap)
			Expect(swap.Conflicts).To(BeEmpty(), "the same swap MachineConfig is no conflict")
			Expect(swap.Diff).NotTo(MatchRegexp(`(?m)^-\s+`), "nothing of virt-higher-density's is removed")
			Expect(swap.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow), "only the ownership marks change: nothing rolls out")
			Expect(swap.Message).To(HaveSuffix("only this profile's ownership marks change, so nothing rolls out"))
			// The HyperConverged's creator owns the defaults the server filled in (AAQ's
			// enable: false), and that conflict is shown; none is with virt-higher-density.
			for _, c := range item(p, baseline.ItemHyperConverged).Conflicts {
				Expect(c.Manager).NotTo(Equal(plan.FieldManagerFor(hd)), "conflict %+v", c)
			}
			applied := cl.applyAll(profileName, rendered, p)

			mc := cl.read("machineconfiguration.openshift.io/v1", "MachineConfig", "", nodeconfig.SwapMachineConfigName)
			Expect(managers(mc)).To(ContainElements(plan.FieldManagerFor(hd), plan.FieldManagerFor(profileName)))
			hco := cl.read("hco.kubevirt.io/v1", "HyperConverged", "openshift-cnv", "kubevirt-hyperconverged")
			Expect(managers(hco)).To(ContainElements(plan.FieldManagerFor(hd), plan.FieldManagerFor(profileName)))
			overcommit, _, _ := unstructured.NestedInt64(hco.Object, "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
			Expect(overcommit).To(BeEquivalentTo(150), "virt-higher-density's field is kept")

			// Each profile's next draft has nothing to change: neither removed the other's fields.
			_, again := cl.draft(everything())
			for _, it := range again.Items {
				Expect(it.Diff).To(Equal(plan.NoChanges), "platform-baseline item %s", it.Name)
			}
			hdAgain := cl.draftAs(hd, hdRendered)
			for _, it := range hdAgain.Items {
				Expect(it.Diff).To(Equal(plan.NoChanges), "virt-higher-density item %s", it.Name)
			}

			inSync := func(profile string, items []advisorv1alpha1.PlanItem, name string) bool {
				for _, it := range items {
					if it.Name == name {
						dc, err := cl.engine().CheckDrift(ctx, profile, it)
						Expect(err).NotTo(HaveOccurred())
						return dc.InSync
					}
				}
				Fail("no item " + name)
				return false
			}
			someone := func(patch string) {
				obj := &unstructured.Unstructured{}
				Expect(yamlInto(patch, obj)).To(Succeed())
				Expect(cl.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("an-admin"), client.ForceOwnership)).To(Succeed())
			}

			By("virt-higher-density's field changed by someone else: only virt-higher-density drifts")
			someone(`
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}
spec: {virtualization: {higherWorkloadDensity: {memoryOvercommitPercentage: 170}}}`)
			Expect(inSync(hd, hdApplied, higherdensity.ItemHyperConverged)).To(BeFalse())
			Expect(inSync(profileName, applied, baseline.ItemHyperConverged)).To(BeTrue())

			By("platform-baseline's field changed by someone else: platform-baseline drifts too, virt-higher-density not more")
			someone(`
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}
spec: {virtualization: {higherWorkloadDensity: {memoryOvercommitPercentage: 150}}, deployment: {applicationAwareConfig: {enable: false}}}`)
			Expect(inSync(hd, hdApplied, higherdensity.ItemHyperConverged)).To(BeTrue(), "its value is back")
			Expect(inSync(profileName, applied, baseline.ItemHyperConverged)).To(BeFalse())

			By("the shared swap MachineConfig is in sync for both")
			Expect(inSync(hd, hdApplied, higherdensity.ItemSwap)).To(BeTrue())
			Expect(inSync(profileName, applied, baseline.ItemSwap)).To(BeTrue())
		})
	})
})

var _ = Describe("platform-baseline and virt-higher-density sharing the HyperConverged and the swap MachineConfig, under the optimistic lock", Ordered, ContinueOnFailure, func() {
	cl := onCluster()
	hd := string(advisorv1alpha1.ProfileVirtHigherDensity)

	BeforeEach(func() {
		doc := "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-0\n  labels:\n    node-role.kubernetes.io/worker: \"\"\n"
		for _, l := range []string{intel, nvidia, receiver} {
			k, v, _ := cut(l)
			doc += fmt.Sprintf("    %s: %q\n", k, v)
		}
		cl.create(doc)
		// Created as an administrator does (kubectl create), with the schema's defaults.
		cl.create(`
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}
spec: {}`)
		DeferCleanup(func() {
			for _, o := range created {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(o.kind.GVK)
				obj.SetNamespace(o.namespace)
				obj.SetName(o.name)
				Expect(client.IgnoreNotFound(cl.c.Delete(ctx, obj))).To(Succeed())
			}
		})
	})

	// notStale asserts that every planned item of a plan reviewed before the other profile's
	// apply still finds its snapshot, and applies with the optimistic lock.
	notStale := func(profile string, rendered []plan.Item, p plan.Plan) {
		GinkgoHelper()
		for _, it := range p.Items {
			if it.State == advisorv1alpha1.ItemSkipped {
				continue
			}
			snapshot, err := cl.engine().Snapshot(ctx, profile, it)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot).To(Equal(it.SnapshotHash), "%s item %s (%s %s) is stale", profile, it.Name, it.TargetRef.Kind, it.TargetRef.Name)
		}
		cl.applyAll(profile, rendered, p)
	}

	It("rule 4: a platform-baseline plan reviewed before virt-higher-density's apply is not stale: that apply set only the operator's label and fields the plan does not set", func() {
		rendered, p := cl.draft(everything())
		hco := item(p, baseline.ItemHyperConverged)
		Expect(hco.ManagedFields).To(ContainElement(`metadata.labels["advisor.kubevirt.io/managed-by"]`))
		hdRendered, err := higherdensity.New().Render(ctx, cl.c, nil)
		Expect(err).NotTo(HaveOccurred())
		cl.applyAll(hd, hdRendered, cl.draftAs(hd, hdRendered))
		Expect(cl.read("hco.kubevirt.io/v1", "HyperConverged", "openshift-cnv", "kubevirt-hyperconverged").GetLabels()).
			To(HaveKeyWithValue(plan.ManagedByLabel, plan.ManagedByValue))
		notStale(profileName, rendered, p)
	})

	It("rule 4: a virt-higher-density plan reviewed before platform-baseline's apply is not stale", func() {
		hdRendered, err := higherdensity.New().Render(ctx, cl.c, nil)
		Expect(err).NotTo(HaveOccurred())
		hdPlan := cl.draftAs(hd, hdRendered)
		rendered, p := cl.draft(everything())
		cl.applyAll(profileName, rendered, p)
		notStale(hd, hdRendered, hdPlan)
	})

	It("rule 4: a value the plan sets, changed by the other profile to another value, still makes it stale", func() {
		hdRendered, err := higherdensity.New().Render(ctx, cl.c, nil)
		Expect(err).NotTo(HaveOccurred())
		hdPlan := cl.draftAs(hd, hdRendered)
		other := &unstructured.Unstructured{}
		Expect(yamlInto(`
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv, labels: {advisor.kubevirt.io/managed-by: virt-advisor-operator}}
spec: {virtualization: {higherWorkloadDensity: {memoryOvercommitPercentage: 110}}}`, other)).To(Succeed())
		Expect(cl.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner(plan.FieldManagerFor(profileName)),
			client.ForceOwnership)).To(Succeed())
		it := item(hdPlan, higherdensity.ItemHyperConverged)
		snapshot, err := cl.engine().Snapshot(ctx, hd, it)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot).NotTo(Equal(it.SnapshotHash))
		out, err := cl.engine().ApplyItem(ctx, it, plan.ApplyOptions{Profile: hd, CheckSnapshot: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Stale).To(BeTrue())
		Expect(out.Applied).To(BeFalse())
	})
})

var _ = Describe("platform-baseline on a cluster whose HyperConverged CRD serves only v1beta1", Ordered, func() {
	cl := onCluster(onlyV1beta1)

	It("sets AAQ and the permitted devices at the v1beta1 paths, which the real v1beta1 schema accepts", func() {
		cl.create(`
apiVersion: v1
kind: Node
metadata:
  name: worker-0
  labels: {node-role.kubernetes.io/worker: "", ` + baseline.LabelCPUVendor + `: Intel, "feature.node.kubernetes.io/pci-0302_10de.present": "true", "feature.node.kubernetes.io/usb-ff_046d_c52b.present": "true"}`)
		cl.create(`
apiVersion: hco.kubevirt.io/v1beta1
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}
spec: {}`)
		_, p := cl.draft(everything())
		hco := item(p, baseline.ItemHyperConverged)
		Expect(hco.State).To(Equal(advisorv1alpha1.ItemPending), hco.Message)
		Expect(hco.TargetRef.APIVersion).To(Equal("hco.kubevirt.io/v1beta1"))
		Expect(hco.Diff).To(MatchRegexp(line("+", "enableApplicationAwareQuota: true")))
		Expect(hco.Diff).To(MatchRegexp(line("+", "- pciDeviceSelector: 10DE:1EB8")))
		Expect(hco.Diff).To(MatchRegexp(line("+", "- resourceName: kubevirt.io/usb-receiver")))
		Expect(hco.Diff).NotTo(ContainSubstring("virtualization:"))
	})
})

// waitServed waits until the API server serves kind again after its CRD was re-enabled.
func (cl *controlPlane) waitServed(kind targets.Kind) {
	GinkgoHelper()
	Eventually(func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: kind.GVK.Group, Version: servedVersion(kind), Kind: kind.GVK.Kind + "List"})
		return cl.c.List(ctx, list)
	}).WithTimeout(30 * 1e9).Should(Succeed())
}

func servedVersion(kind targets.Kind) string {
	if kind.CRD == targets.HyperConverged.CRD {
		return "v1"
	}
	return kind.GVK.Version
}

var _ = Describe("platform-baseline options on the real API server", Ordered, func() {
	cl := onCluster(onlyV1beta1)

	serverDefaulted := func(options string) *advisorv1alpha1.PlatformBaselineOptions {
		cl.create(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata: {name: platform-baseline}
spec:
  profile: platform-baseline
  options: {platformBaseline: ` + options + `}`)
		got := &advisorv1alpha1.VirtPlatformConfig{}
		Expect(cl.c.Get(ctx, client.ObjectKey{Name: profileName}, got)).To(Succeed())
		Expect(got.Spec.Options.PlatformBaseline).NotTo(BeNil())
		return got.Spec.Options.PlatformBaseline
	}

	It("defaults to what Defaults() fills in, for options: {platformBaseline: {}}", func() {
		Expect(serverDefaulted("{}")).To(Equal(baseline.New().Defaults(nil).PlatformBaseline))
	})

	It("defaults around the blocks the user set as Defaults() does", func() {
		o := serverDefaulted(`{kubeletPerformance: {maxPods: 250}, aaq: {enabled: true}, swap: {partitionLabel: VM_SWAP}}`)
		set := &advisorv1alpha1.PlatformBaselineOptions{
			KubeletPerformance: &advisorv1alpha1.BaselineKubeletPerformanceOptions{MaxPods: ptr.To[int32](250)},
			AAQ:                &advisorv1alpha1.BaselineAAQOptions{Enabled: ptr.To(true)},
			Swap:               &advisorv1alpha1.BaselineSwapOptions{PartitionLabel: "VM_SWAP"},
		}
		Expect(o).To(Equal(baseline.New().Defaults(&advisorv1alpha1.ProfileOptions{PlatformBaseline: set}).PlatformBaseline))
	})

	DescribeTable("refuses at admission, with a clear message",
		func(options, message string) {
			obj := &unstructured.Unstructured{}
			Expect(yamlInto(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata: {name: platform-baseline}
spec:
  profile: platform-baseline
  options: {platformBaseline: `+options+`}`, obj)).To(Succeed())
			Expect(cl.c.Create(ctx, obj)).To(MatchError(ContainSubstring(message)))
		},
		Entry("VFIO enabled without devices", `{vfio: {enabled: true}}`, "options.platformBaseline.vfio.enabled requires at least one device"),
		Entry("USB passthrough enabled without devices", `{usbPassthrough: {enabled: true}}`, "options.platformBaseline.usbPassthrough.enabled requires at least one device"),
		Entry("a PCI ID that is not vendor:device", `{vfio: {enabled: true, devices: [{vendorDevice: "10de", resourceName: "nvidia.com/T4"}]}}`, "vendorDevice"),
		Entry("maxPods below 10", `{kubeletPerformance: {maxPods: 5}}`, "maxPods"),
	)
})
