package v1alpha1_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// object builds a VirtPlatformConfig from YAML, so each case sends exactly the fields it
// names (no Go defaults, no omitempty surprises).
func object(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	u.SetAPIVersion("advisor.kubevirt.io/v1alpha1")
	u.SetKind("VirtPlatformConfig")
	return u
}

func vpc(name, spec string) *unstructured.Unstructured {
	return object("metadata: {name: " + name + "}\nspec:\n" + indent(spec))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// expectRejected creates obj and expects the API server to refuse it as invalid with a
// message that contains every fragment.
func expectRejected(obj *unstructured.Unstructured, fragments ...string) {
	err := k8sClient.Create(ctx, obj)
	if err == nil {
		_ = k8sClient.Delete(ctx, obj)
	}
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid VirtPlatformConfig")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an Invalid error, got: %v", err)
	for _, f := range fragments {
		Expect(err.Error()).To(ContainSubstring(f))
	}
}

// createAndRead creates obj, reads it back typed (with the server's defaults) and
// deletes it again.
func createAndRead(obj *unstructured.Unstructured) *advisorv1alpha1.VirtPlatformConfig {
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
	got := &advisorv1alpha1.VirtPlatformConfig{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Name: obj.GetName()}, got)).To(Succeed())
	return got
}

const lar = "load-aware-rebalancing"

var _ = Describe("VirtPlatformConfig admission", func() {
	DescribeTable("rejects an invalid config at create, naming the broken rule",
		func(obj *unstructured.Unstructured, fragments ...string) { expectRejected(obj, fragments...) },

		Entry("a name other than the profile", vpc("my-config", "profile: load-aware-rebalancing"),
			"metadata.name must equal spec.profile"),
		Entry("an unknown profile", vpc("turbo", "profile: turbo"),
			"spec.profile", `Unsupported value: "turbo"`),
		Entry("no profile", vpc(lar, "action: DryRun"),
			"spec.profile", "Required value"),
		Entry("no spec", object("metadata: {name: load-aware-rebalancing}"),
			"spec", "Required value"),
		Entry("virtHigherDensity options on load-aware-rebalancing", vpc(lar, `
profile: load-aware-rebalancing
options: {virtHigherDensity: {}}`),
			"options.virtHigherDensity may only be set when spec.profile is virt-higher-density"),
		Entry("platformBaseline options on load-aware-rebalancing", vpc(lar, `
profile: load-aware-rebalancing
options: {platformBaseline: {}}`),
			"options.platformBaseline may only be set when spec.profile is platform-baseline"),
		Entry("loadAware options on virt-higher-density", vpc("virt-higher-density", `
profile: virt-higher-density
options: {loadAware: {}}`),
			"options.loadAware may only be set when spec.profile is load-aware-rebalancing"),
		Entry("an unknown action", vpc(lar, "{profile: load-aware-rebalancing, action: Yolo}"),
			"spec.action", `Unsupported value: "Yolo"`),
		Entry("an unknown failurePolicy", vpc(lar, "{profile: load-aware-rebalancing, failurePolicy: Retry}"),
			"spec.failurePolicy", `Unsupported value: "Retry"`),
		Entry("a waitTimeout that is not a duration", vpc(lar, "{profile: load-aware-rebalancing, waitTimeout: soon}"),
			"spec.waitTimeout must be a duration between 1m and 168h"),
		Entry("a waitTimeout below 1m", vpc(lar, "{profile: load-aware-rebalancing, waitTimeout: 10s}"),
			"spec.waitTimeout must be a duration between 1m and 168h"),
		Entry("a waitTimeout above 168h", vpc(lar, "{profile: load-aware-rebalancing, waitTimeout: 200h}"),
			"spec.waitTimeout must be a duration between 1m and 168h"),
		Entry("an approvedPlanHash that is not a SHA-256", vpc(lar, "{profile: load-aware-rebalancing, approvedPlanHash: abc123}"),
			"spec.approvedPlanHash must be the 64-character lowercase hex value of status.planHash"),
		Entry("a bypassOptimisticLock that is not a boolean", vpc(lar, `{profile: load-aware-rebalancing, bypassOptimisticLock: "yes"}`),
			"spec.bypassOptimisticLock", "boolean"),
		Entry("deschedulingIntervalSeconds below 60", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {deschedulingIntervalSeconds: 30}}`),
			"spec.options.loadAware.deschedulingIntervalSeconds", "greater than or equal to 60"),
		Entry("deschedulingIntervalSeconds above 86400", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {deschedulingIntervalSeconds: 90000}}`),
			"spec.options.loadAware.deschedulingIntervalSeconds", "less than or equal to 86400"),
		Entry("an unknown descheduler mode", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {mode: Sometimes}}`),
			"spec.options.loadAware.mode", `Unsupported value: "Sometimes"`),
		Entry("an unknown devDeviationThresholds", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {devDeviationThresholds: Extreme}}`),
			"spec.options.loadAware.devDeviationThresholds", `Unsupported value: "Extreme"`),
		Entry("evictionLimitTotal below 1", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {evictionLimitTotal: 0}}`),
			"spec.options.loadAware.evictionLimitTotal", "greater than or equal to 1"),
		Entry("evictionLimitTotal above 1000", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {evictionLimitTotal: 1001}}`),
			"spec.options.loadAware.evictionLimitTotal", "less than or equal to 1000"),
		Entry("evictionLimitNode above 100", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {evictionLimitNode: 101}}`),
			"spec.options.loadAware.evictionLimitNode", "less than or equal to 100"),
		Entry("evictionLimitNode above evictionLimitTotal", vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {evictionLimitTotal: 5, evictionLimitNode: 10}}`),
			"options.loadAware.evictionLimitNode must not exceed evictionLimitTotal"),
		Entry("memoryToRequestRatio below 100", vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {memoryToRequestRatio: 99}}`),
			"spec.options.virtHigherDensity.memoryToRequestRatio", "greater than or equal to 100"),
		Entry("memoryToRequestRatio above 300", vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {memoryToRequestRatio: 301}}`),
			"spec.options.virtHigherDensity.memoryToRequestRatio", "less than or equal to 300"),
		Entry("memoryToRequestRatio above 120 without swap", vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {memoryToRequestRatio: 150, enableSwap: false}}`),
			"memoryToRequestRatio above 120 requires enableSwap: true"),
		Entry("a swapPartitionLabel with spaces", vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {swapPartitionLabel: "my swap"}}`),
			"spec.options.virtHigherDensity.swapPartitionLabel", "should match"),
		Entry(`a swapPartitionLabel of "."`, vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {swapPartitionLabel: "."}}`),
			"spec.options.virtHigherDensity.swapPartitionLabel", "must name a partition, not . or .."),
		Entry(`a swapPartitionLabel of ".."`, vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {swapPartitionLabel: ".."}}`),
			"spec.options.virtHigherDensity.swapPartitionLabel", "must name a partition, not . or .."),
		Entry("a ksmConfiguration.enabled that is not a boolean", vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {ksmConfiguration: {enabled: "no"}}}`),
			"spec.options.virtHigherDensity.ksmConfiguration.enabled", "boolean"),
		Entry("VFIO enabled without devices", vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {vfio: {enabled: true}}}`),
			"options.platformBaseline.vfio.enabled requires at least one device"),
		Entry("a VFIO device that is not vendor:device", vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {vfio: {enabled: true, devices: [{vendorDevice: nvidia, resourceName: nvidia.com/T4}]}}}`),
			"spec.options.platformBaseline.vfio.devices[0].vendorDevice", "should match"),
		Entry("USB passthrough enabled without devices", vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {usbPassthrough: {enabled: true}}}`),
			"options.platformBaseline.usbPassthrough.enabled requires at least one device"),
		Entry(`a swap partitionLabel of "."`, vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {swap: {partitionLabel: "."}}}`),
			"spec.options.platformBaseline.swap.partitionLabel", "must name a partition, not . or .."),
		Entry(`a swap partitionLabel of ".."`, vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {swap: {partitionLabel: ".."}}}`),
			"spec.options.platformBaseline.swap.partitionLabel", "must name a partition, not . or .."),
		Entry("maxPods below 10", vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {kubeletPerformance: {maxPods: 5}}}`),
			"spec.options.platformBaseline.kubeletPerformance.maxPods", "greater than or equal to 10"),
		Entry("a maintenance window schedule with three fields", vpc(lar, `
profile: load-aware-rebalancing
maintenanceWindow: {schedule: "0 22 *", duration: 4h}`),
			"spec.maintenanceWindow.schedule must be five cron fields"),
		Entry("a maintenance window without a duration", vpc(lar, `
profile: load-aware-rebalancing
maintenanceWindow: {schedule: "0 22 * * 1-5"}`),
			"spec.maintenanceWindow.duration", "Required value"),
		Entry("a maintenance window of 10s", vpc(lar, `
profile: load-aware-rebalancing
maintenanceWindow: {schedule: "@daily", duration: 10s}`),
			"spec.maintenanceWindow.duration must be a duration between 1m and 168h"),
	)

	It("accepts a maintenance window in cron syntax and defaults its time zone to UTC", func() {
		got := createAndRead(vpc(lar, `
profile: load-aware-rebalancing
maintenanceWindow: {schedule: "0 22 * * 1-5", duration: 4h}`))
		Expect(got.Spec.MaintenanceWindow.TimeZone).To(Equal("UTC"))
		Expect(got.Spec.MaintenanceWindow.Duration.Duration.String()).To(Equal("4h0m0s"))
	})

	Context("at update", func() {
		var current *advisorv1alpha1.VirtPlatformConfig

		BeforeEach(func() {
			current = createAndRead(vpc(lar, "profile: load-aware-rebalancing"))
		})

		update := func(mutate func(u *unstructured.Unstructured)) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("advisor.kubevirt.io/v1alpha1")
			u.SetKind("VirtPlatformConfig")
			Expect(k8sClient.Get(ctx, types.NamespacedName{Name: current.Name}, u)).To(Succeed())
			mutate(u)
			return k8sClient.Update(ctx, u)
		}

		It("rejects a change of profile", func() {
			err := update(func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, "virt-higher-density", "spec", "profile")).To(Succeed())
			})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.profile is immutable"))
		})

		It("rejects options of another profile added later", func() {
			err := update(func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedMap(u.Object, map[string]any{"virtHigherDensity": map[string]any{}}, "spec", "options")).To(Succeed())
			})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("options.virtHigherDensity may only be set when spec.profile is virt-higher-density"))
		})

		It("rejects an unknown action set later", func() {
			err := update(func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, "Later", "spec", "action")).To(Succeed())
			})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(`spec.action: Unsupported value: "Later"`))
		})

		It("accepts a change of action and approvedPlanHash", func() {
			Expect(update(func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, "Apply", "spec", "action")).To(Succeed())
				Expect(unstructured.SetNestedField(u.Object, strings.Repeat("ab", 32), "spec", "approvedPlanHash")).To(Succeed())
			})).To(Succeed())
		})
	})

	Context("valid configs", func() {
		It("fills in the spec defaults of a minimal config", func() {
			got := createAndRead(vpc(lar, "profile: load-aware-rebalancing"))
			Expect(got.Spec.Action).To(Equal(advisorv1alpha1.ActionDryRun))
			Expect(got.Spec.FailurePolicy).To(Equal(advisorv1alpha1.FailurePolicyAbort))
			Expect(got.Spec.BypassOptimisticLock).To(BeFalse())
			Expect(got.Spec.WaitTimeout).To(BeNil())
			Expect(got.Spec.ApprovedPlanHash).To(BeEmpty())
			Expect(got.Spec.Options).To(BeNil())
		})

		It("fills in the loadAware option defaults", func() {
			got := createAndRead(vpc(lar, `
profile: load-aware-rebalancing
options: {loadAware: {}}`))
			o := got.Spec.Options.LoadAware
			Expect(o).NotTo(BeNil())
			Expect(*o.DeschedulingIntervalSeconds).To(BeEquivalentTo(60))
			Expect(o.Mode).To(Equal(advisorv1alpha1.DeschedulerModeAutomatic))
			Expect(*o.EnablePSIMetrics).To(BeTrue())
			Expect(o.DevDeviationThresholds).To(BeEquivalentTo("AsymmetricLow"))
			Expect(o.EvictionLimitTotal).To(BeNil())
			Expect(o.EvictionLimitNode).To(BeNil())
		})

		It("keeps every field of a fully specified load-aware config", func() {
			hash := strings.Repeat("0f", 32)
			got := createAndRead(vpc(lar, `
profile: load-aware-rebalancing
action: Apply
approvedPlanHash: `+hash+`
failurePolicy: Continue
bypassOptimisticLock: true
waitTimeout: 2h30m
options:
  loadAware: {deschedulingIntervalSeconds: 3600, mode: Predictive, enablePSIMetrics: false,
    devDeviationThresholds: High, evictionLimitTotal: 10, evictionLimitNode: 3}`))
			Expect(got.Spec.Action).To(Equal(advisorv1alpha1.ActionApply))
			Expect(got.Spec.ApprovedPlanHash).To(Equal(hash))
			Expect(got.Spec.FailurePolicy).To(Equal(advisorv1alpha1.FailurePolicyContinue))
			Expect(got.Spec.BypassOptimisticLock).To(BeTrue())
			Expect(got.Spec.WaitTimeout.Duration.String()).To(Equal("2h30m0s"))
			o := got.Spec.Options.LoadAware
			Expect(*o.DeschedulingIntervalSeconds).To(BeEquivalentTo(3600))
			Expect(o.Mode).To(Equal(advisorv1alpha1.DeschedulerModePredictive))
			Expect(*o.EnablePSIMetrics).To(BeFalse())
			Expect(*o.EvictionLimitTotal).To(BeEquivalentTo(10))
			Expect(*o.EvictionLimitNode).To(BeEquivalentTo(3))
		})

		It("fills in the virtHigherDensity option defaults: swap, KSM on every node, 150% overcommit", func() {
			got := createAndRead(vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {}}`))
			o := got.Spec.Options.VirtHigherDensity
			Expect(*o.EnableSwap).To(BeTrue())
			Expect(*o.MemoryToRequestRatio).To(BeEquivalentTo(150))
			Expect(o.SwapPartitionLabel).To(Equal("CNV_SWAP"))
			Expect(o.KSMConfiguration).To(Equal(&advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(true)}),
				"KSM enabled, no selector: every node")
		})

		It("keeps KSM enabled when only a nodeLabelSelector is given", func() {
			got := createAndRead(vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {ksmConfiguration: {nodeLabelSelector: {matchLabels: {ksm: "on"}}}}}`))
			ksm := got.Spec.Options.VirtHigherDensity.KSMConfiguration
			Expect(*ksm.Enabled).To(BeTrue())
			Expect(ksm.NodeLabelSelector.MatchLabels).To(Equal(map[string]string{"ksm": "on"}))
		})

		It("accepts KSM opted out", func() {
			got := createAndRead(vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {ksmConfiguration: {enabled: false}}}`))
			Expect(got.Spec.Options.VirtHigherDensity.KSMConfiguration).To(Equal(&advisorv1alpha1.KSMConfiguration{Enabled: ptr.To(false)}))
		})

		It("accepts 120 percent without swap and KSM on every node", func() {
			got := createAndRead(vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {memoryToRequestRatio: 120, enableSwap: false, ksmConfiguration: {nodeLabelSelector: {}}}}`))
			o := got.Spec.Options.VirtHigherDensity
			Expect(*o.MemoryToRequestRatio).To(BeEquivalentTo(120))
			Expect(*o.EnableSwap).To(BeFalse())
			Expect(o.KSMConfiguration).NotTo(BeNil())
			Expect(o.KSMConfiguration.NodeLabelSelector).NotTo(BeNil())
			Expect(o.KSMConfiguration.NodeLabelSelector.MatchLabels).To(BeEmpty())
		})

		It("accepts swap partition labels that contain dots but are not . or ..", func() {
			got := createAndRead(vpc("virt-higher-density", `
profile: virt-higher-density
options: {virtHigherDensity: {swapPartitionLabel: "..."}}`))
			Expect(got.Spec.Options.VirtHigherDensity.SwapPartitionLabel).To(Equal("..."))
			got = createAndRead(vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {swap: {partitionLabel: ".swap-1.2"}}}`))
			Expect(got.Spec.Options.PlatformBaseline.Swap.PartitionLabel).To(Equal(".swap-1.2"))
		})

		It("fills in every platformBaseline component's defaults", func() {
			got := createAndRead(vpc("platform-baseline", `
profile: platform-baseline
options: {platformBaseline: {}}`))
			o := got.Spec.Options.PlatformBaseline
			Expect(*o.Swap.Enabled).To(BeTrue())
			Expect(o.Swap.PartitionLabel).To(Equal("CNV_SWAP"))
			Expect(*o.NUMA.Enabled).To(BeTrue())
			Expect(*o.PCIPassthrough.Enabled).To(BeTrue())
			Expect(*o.VFIO.Enabled).To(BeFalse())
			Expect(*o.USBPassthrough.Enabled).To(BeFalse())
			Expect(*o.KubeletPerformance.Enabled).To(BeTrue())
			Expect(*o.KubeletPerformance.MaxPods).To(BeEquivalentTo(500))
			Expect(*o.KubeletPerformance.AutoSizingReserved).To(BeTrue())
			Expect(*o.KubeletPerformance.CPUManager).To(BeFalse())
			Expect(*o.NodeHealthCheck.Enabled).To(BeTrue())
			Expect(*o.MTV.Enabled).To(BeTrue())
			Expect(*o.MetalLB.Enabled).To(BeTrue())
			Expect(*o.AAQ.Enabled).To(BeFalse())
		})

		It("accepts VFIO and USB devices", func() {
			got := createAndRead(vpc("platform-baseline", `
profile: platform-baseline
options:
  platformBaseline:
    vfio: {enabled: true, devices: [{vendorDevice: 10de:1eb8, resourceName: nvidia.com/TU104GL_Tesla_T4}]}
    usbPassthrough: {enabled: true, devices: [{vendor: 046d, product: c52b, resourceName: kubevirt.io/usb-receiver}]}`))
			o := got.Spec.Options.PlatformBaseline
			Expect(o.VFIO.Devices).To(HaveLen(1))
			Expect(o.VFIO.Devices[0].VendorDevice).To(Equal("10de:1eb8"))
			Expect(o.USBPassthrough.Devices).To(HaveLen(1))
			Expect(*o.Swap.Enabled).To(BeTrue(), "the other components keep their defaults")
		})
	})
})
