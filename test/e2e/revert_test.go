package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// revertCluster is a control plane of its own with the operators the profiles configure
// (the Machine Config Operator's KubeletConfig, the Node Health Check and Self Node
// Remediation operators), the baseline resources of a cluster without OpenShift and the
// platform-baseline cluster's three labelled workers, whose pool has rolled out.
func revertCluster() *pluginCluster {
	GinkgoHelper()
	pc := startPluginCluster(upstreamCRDFiles...)
	pc.kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	pc.kubectl("apply", "-f", testenv.Path("test", "e2e", "testdata", "platform_baseline_cluster.yaml"))
	pc.waitForWorkerPool()
	return pc
}

// config reads a VirtPlatformConfig whole, in one read.
func (pc *pluginCluster) config(name string) advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var vpc advisorv1alpha1.VirtPlatformConfig
	Expect(json.Unmarshal([]byte(pc.kubectl("get", "vpc/"+name, "-o", "json")), &vpc)).To(Succeed())
	return vpc
}

// conditionTrue tells whether the config's condition of type holds.
func conditionTrue(vpc advisorv1alpha1.VirtPlatformConfig, condition string) bool {
	for _, c := range vpc.Status.Conditions {
		if c.Type == condition {
			return c.Status == "True"
		}
	}
	return false
}

// showPlan applies a sample of config/samples to the advertised config and waits until
// its plan is shown for review.
func (pc *pluginCluster) showPlan(name, sample string) {
	GinkgoHelper()
	Eventually(func() string { return pc.jsonpath("vpc/"+name, "{.status.phase}") }).Should(Equal("Ignored"))
	pc.kubectl("apply", "-f", testenv.Path("config", "samples", sample))
	pc.kubectl("wait", "vpc/"+name, "--for=condition=ReviewRequired", "--timeout=60s")
}

// applyAndComplete applies a sample of config/samples, approves the plan it shows with the
// command its status gives, and waits until the config is Completed.
func (pc *pluginCluster) applyAndComplete(name, sample string) {
	GinkgoHelper()
	pc.showPlan(name, sample)
	pc.approveAsShown(name)
	pc.waitCompleted(name)
}

// requestRevert asks for the config's revert plan as an administrator does.
func (pc *pluginCluster) requestRevert(name string) {
	GinkgoHelper()
	pc.kubectl("patch", "vpc", name, "--type", "merge", "-p", `{"spec":{"revert":true}}`)
}

// waitRevertShown waits until the config shows its revert plan for review, and returns it.
func (pc *pluginCluster) waitRevertShown(name string) advisorv1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var vpc advisorv1alpha1.VirtPlatformConfig
	Eventually(func(g Gomega) {
		vpc = pc.config(name)
		g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired), "%s: %s", name, vpc.Status.Phase)
		g.Expect(vpc.Status.Items).NotTo(BeEmpty())
		for _, it := range vpc.Status.Items {
			g.Expect(it.Name).To(HavePrefix("revert-"), "the plan shown is the revert plan")
		}
	}).Should(Succeed())
	Expect(conditionTrue(vpc, "ReviewRequired")).To(BeTrue())
	Expect(vpc.Status.Approval).NotTo(BeNil())
	Expect(vpc.Status.Approval.Command).To(ContainSubstring(vpc.Status.PlanHash))
	return vpc
}

// waitReverted waits, while the pool simulator rolls out what the revert changes on the
// nodes, until the config is Reverted.
func (pc *pluginCluster) waitReverted(name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		out := pc.jsonpath("vpc/"+name, `{.status.phase}{"\n"}{range .status.items[*]}{.name}={.state}: {.message}{"\n"}{end}`)
		phase, items, _ := strings.Cut(out, "\n")
		g.Expect(phase).To(Equal("Reverted"), "%s items:\n%s", name, items)
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	pc.kubectl("wait", "vpc/"+name, "--for=condition=Reverted", "--timeout=60s")
}

// resourceOf names a target's resource for kubectl: <kind>.<version>.<group>.
func resourceOf(ref advisorv1alpha1.TargetReference) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	Expect(err).NotTo(HaveOccurred())
	if gv.Group == "" {
		return strings.ToLower(ref.Kind)
	}
	return strings.ToLower(ref.Kind) + "." + gv.Version + "." + gv.Group
}

func describeTarget(ref advisorv1alpha1.TargetReference) string {
	if ref.Namespace == "" {
		return ref.Kind + " " + ref.Name
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}

// readTarget reads a target with kubectl; nil when it does not exist.
func (pc *pluginCluster) readTarget(ref advisorv1alpha1.TargetReference) *unstructured.Unstructured {
	GinkgoHelper()
	args := []string{"get", resourceOf(ref), ref.Name, "-o", "json", "--ignore-not-found", "--show-managed-fields"}
	if ref.Namespace != "" {
		args = append(args, "-n", ref.Namespace)
	}
	out := pc.kubectl(args...)
	if strings.TrimSpace(out) == "" {
		return nil
	}
	obj := &unstructured.Unstructured{}
	Expect(json.Unmarshal([]byte(out), &obj.Object)).To(Succeed())
	return obj
}

// fieldValue is a managed path's value on a target, or its absence.
type fieldValue struct {
	Present bool
	Value   any
}

// valuesAt reads obj's value at each managed path.
func valuesAt(obj *unstructured.Unstructured, paths []string) map[string]fieldValue {
	GinkgoHelper()
	out := map[string]fieldValue{}
	for _, s := range paths {
		p, err := plan.ParseFieldPath(s)
		Expect(err).NotTo(HaveOccurred())
		v, ok, _ := unstructured.NestedFieldCopy(obj.Object, p...)
		out[s] = fieldValue{Present: ok, Value: v}
	}
	return out
}

// managersOf are the field managers of obj's managedFields entries.
func managersOf(obj *unstructured.Unstructured) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}

// targetBefore is a target as it was before a plan was applied: whether it existed, and
// its values at the paths the plan manages.
type targetBefore struct {
	ref    advisorv1alpha1.TargetReference
	exists bool
	paths  []string
	values map[string]fieldValue
}

// revertItemName is the name a revert plan gives the item of a target.
func (t targetBefore) revertItemName() string {
	name := "revert-" + strings.ToLower(t.ref.Kind) + "-"
	if t.ref.Namespace != "" {
		name += t.ref.Namespace + "-"
	}
	return name + t.ref.Name
}

// readTargetsBefore reads every target of the plan the config shows (its items that are
// not skipped) at the paths the items manage.
func (pc *pluginCluster) readTargetsBefore(name string) []*targetBefore {
	GinkgoHelper()
	var out []*targetBefore
	byTarget := map[string]*targetBefore{}
	for _, it := range pc.config(name).Status.Items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		Expect(it.ManagedFields).NotTo(BeEmpty(), "item %s names its managed paths", it.Name)
		key := describeTarget(it.TargetRef)
		t, ok := byTarget[key]
		if !ok {
			t = &targetBefore{ref: it.TargetRef}
			byTarget[key] = t
			out = append(out, t)
		}
		t.paths = append(t.paths, it.ManagedFields...)
	}
	for _, t := range out {
		live := pc.readTarget(t.ref)
		t.exists = live != nil
		if t.exists {
			t.values = valuesAt(live, t.paths)
		}
	}
	return out
}

// expectPutBack checks every target as it is now against what it was before: a target the
// apply created is gone; on one that existed every managed path holds its value from
// before, and the profile's field manager owns nothing.
func (pc *pluginCluster) expectPutBack(profile string, before []*targetBefore) {
	GinkgoHelper()
	for _, t := range before {
		live := pc.readTarget(t.ref)
		if !t.exists {
			Expect(live).To(BeNil(), "%s, created by the apply, is deleted", describeTarget(t.ref))
			continue
		}
		Expect(live).NotTo(BeNil(), "%s, which existed before the apply, still exists", describeTarget(t.ref))
		Expect(valuesAt(live, t.paths)).To(Equal(t.values), "%s: every managed path is back to its value before the apply", describeTarget(t.ref))
		Expect(managersOf(live)).NotTo(ContainElement("virt-advisor-operator/"+profile),
			"%s: the profile's field manager owns nothing", describeTarget(t.ref))
	}
}

// itemOf is the item of a plan that targets ref.
func itemOf(vpc advisorv1alpha1.VirtPlatformConfig, kind, name string) advisorv1alpha1.PlanItem {
	GinkgoHelper()
	for _, it := range vpc.Status.Items {
		if it.TargetRef.Kind == kind && it.TargetRef.Name == name {
			return it
		}
	}
	Fail(fmt.Sprintf("%s has no item for %s %s", vpc.Name, kind, name))
	return advisorv1alpha1.PlanItem{}
}

var _ = Describe("An administrator reverting a profile with kubectl", func() {
	var pc *pluginCluster

	ReportAfterEach(func(report SpecReport) {
		if report.Failed() && pc != nil {
			data, _ := os.ReadFile(pc.managerLog)
			AddReportEntry("manager log (the revert's control plane)", string(data))
			data, _ = os.ReadFile(pc.poolSimLog)
			AddReportEntry("pool simulator log (the revert's control plane)", string(data))
		}
	})

	DescribeTable("puts every managed path of every target back to its value before the apply, deletes the objects the apply created and leaves no field to the profile's manager, after the revert plan shown is approved",
		func(profile, sample string) {
			pc = revertCluster()
			pc.showPlan(profile, sample)

			By("reading every target at the paths the plan shown manages, before the apply")
			before := pc.readTargetsBefore(profile)
			Expect(before).NotTo(BeEmpty())

			By("applying the plan: the profile's field manager owns fields of every target")
			pc.approveAsShown(profile)
			pc.waitCompleted(profile)
			applied := map[string]map[string]fieldValue{}
			for _, t := range before {
				live := pc.readTarget(t.ref)
				Expect(live).NotTo(BeNil(), describeTarget(t.ref))
				Expect(managersOf(live)).To(ContainElement("virt-advisor-operator/"+profile), describeTarget(t.ref))
				applied[describeTarget(t.ref)] = valuesAt(live, t.paths)
			}

			By("asking for the revert: the revert plan is shown with one item per target, and nothing is written before its approval")
			pc.requestRevert(profile)
			shown := pc.waitRevertShown(profile)
			actions := map[string]advisorv1alpha1.ItemAction{}
			for _, it := range shown.Status.Items {
				actions[it.Name] = it.Action
				Expect(it.Diff).NotTo(BeEmpty(), "item %s shows its diff", it.Name)
			}
			want := map[string]advisorv1alpha1.ItemAction{}
			for _, t := range before {
				want[t.revertItemName()] = advisorv1alpha1.ItemActionRestore
				if !t.exists {
					want[t.revertItemName()] = advisorv1alpha1.ItemActionDelete
				}
			}
			Expect(actions).To(Equal(want))
			for _, t := range before {
				live := pc.readTarget(t.ref)
				Expect(live).NotTo(BeNil(), "%s is still there before the approval", describeTarget(t.ref))
				Expect(valuesAt(live, t.paths)).To(Equal(applied[describeTarget(t.ref)]),
					"%s holds the values applied until the approval", describeTarget(t.ref))
			}

			By("approving with the command the status gives, and waiting for Reverted")
			pc.approveAsShown(profile)
			pc.waitReverted(profile)
			pc.expectPutBack(profile, before)
			Expect(pc.jsonpath("vpc/"+profile, "{.status.replaced}")).To(BeEmpty())
			Expect(pc.jsonpath("mcp/worker", "{.spec.paused}")).NotTo(Equal("true"), "the pool is resumed")
		},
		Entry("load-aware-rebalancing", "load-aware-rebalancing", "loadaware_sample.yaml"),
		Entry("virt-higher-density", "virt-higher-density", "higherdensity_sample.yaml"),
		Entry("platform-baseline", "platform-baseline", "baseline_sample.yaml"),
	)

	It("reverting platform-baseline leaves virt-higher-density's fields of the swap MachineConfig and the HyperConverged they share, and virt-higher-density stays Completed without drift", func() {
		pc = revertCluster()
		const (
			baseline = "platform-baseline"
			density  = "virt-higher-density"
		)
		swap := advisorv1alpha1.TargetReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "90-worker-kubelet-swap"}
		hco := advisorv1alpha1.TargetReference{APIVersion: "hco.kubevirt.io/v1", Kind: "HyperConverged", Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}

		By("applying platform-baseline with every component (it creates the swap MachineConfig and sets the HyperConverged's AAQ), then virt-higher-density")
		pc.showPlan(baseline, "baseline_full_sample.yaml")
		baselineHCOPaths := itemOf(pc.config(baseline), hco.Kind, hco.Name).ManagedFields
		Expect(baselineHCOPaths).To(ContainElement("spec.deployment.applicationAwareConfig.enable"))
		hcoBeforeBaseline := valuesAt(pc.readTarget(hco), baselineHCOPaths)
		pc.approveAsShown(baseline)
		pc.waitCompleted(baseline)
		Expect(pc.jsonpath("hyperconverged/kubevirt-hyperconverged", "{.spec.deployment.applicationAwareConfig.enable}", "-n", "openshift-cnv")).
			To(Equal("true"))
		pc.applyAndComplete(density, "higherdensity_sample.yaml")
		for _, ref := range []advisorv1alpha1.TargetReference{swap, hco} {
			Expect(managersOf(pc.readTarget(ref))).To(ContainElements("virt-advisor-operator/"+baseline, "virt-advisor-operator/"+density),
				"both profiles own fields of %s", describeTarget(ref))
		}
		densityPaths := func(ref advisorv1alpha1.TargetReference) []string {
			return itemOf(pc.config(density), ref.Kind, ref.Name).ManagedFields
		}
		swapBefore := valuesAt(pc.readTarget(swap), densityPaths(swap))
		hcoBefore := valuesAt(pc.readTarget(hco), densityPaths(hco))
		Expect(hcoBefore).To(HaveKeyWithValue("spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage",
			fieldValue{Present: true, Value: float64(150)}))

		By("reverting platform-baseline: the swap MachineConfig it created is released, not deleted")
		pc.requestRevert(baseline)
		shown := pc.waitRevertShown(baseline)
		Expect(itemOf(shown, swap.Kind, swap.Name).Action).To(Equal(advisorv1alpha1.ItemActionRelease),
			"platform-baseline created it, virt-higher-density shares its fields: only its ownership is released")
		pc.approveAsShown(baseline)
		pc.waitReverted(baseline)

		By("virt-higher-density's fields keep their values, and only platform-baseline's manager is gone")
		liveSwap := pc.readTarget(swap)
		Expect(liveSwap).NotTo(BeNil(), "the swap MachineConfig virt-higher-density also sets stays")
		Expect(valuesAt(liveSwap, densityPaths(swap))).To(Equal(swapBefore))
		Expect(managersOf(liveSwap)).To(ContainElement("virt-advisor-operator/" + density))
		Expect(managersOf(liveSwap)).NotTo(ContainElement("virt-advisor-operator/" + baseline))
		liveHCO := pc.readTarget(hco)
		Expect(valuesAt(liveHCO, densityPaths(hco))).To(Equal(hcoBefore))
		Expect(managersOf(liveHCO)).To(ContainElement("virt-advisor-operator/" + density))
		Expect(managersOf(liveHCO)).NotTo(ContainElement("virt-advisor-operator/" + baseline))
		// A path both profiles set (the managed-by label) keeps virt-higher-density's value;
		// the others are back to their values before platform-baseline's apply.
		var baselineOnly []string
		for _, p := range baselineHCOPaths {
			if !slices.Contains(densityPaths(hco), p) {
				baselineOnly = append(baselineOnly, p)
			}
		}
		Expect(baselineOnly).To(ContainElement("spec.deployment.applicationAwareConfig.enable"))
		for _, p := range baselineOnly {
			Expect(valuesAt(liveHCO, []string{p})).To(HaveKeyWithValue(p, hcoBeforeBaseline[p]),
				"platform-baseline's %s of the HyperConverged is put back", p)
		}
		for _, gone := range []string{"machineconfig/90-worker-iommu", "kubeletconfig/virt-advisor-kubelet"} {
			Expect(pc.kubectl("get", gone, "--ignore-not-found")).To(BeEmpty(), "%s, platform-baseline's alone, is deleted", gone)
		}

		By("virt-higher-density stays Completed, with no drift")
		Consistently(func(g Gomega) {
			vpc := pc.config(density)
			g.Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseCompleted))
			g.Expect(conditionTrue(vpc, "Drifted")).To(BeFalse())
		}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("shows a value someone else changed after the apply as a conflict of the revert plan, writes nothing to its target before the approval, and puts it back after", func() {
		pc = revertCluster()
		const profile = "load-aware-rebalancing"
		descheduler := []string{"kubedescheduler/cluster", "-n", "openshift-kube-descheduler-operator"}
		original := pc.jsonpath(descheduler[0], "{.spec.profiles}", descheduler[1:]...)
		Expect(original).To(Equal(`["AffinityAndTaints","SoftTopologyAndDuplicates","LifecycleAndUtilization"]`))
		pc.applyAndComplete(profile, "loadaware_sample.yaml")
		Expect(pc.jsonpath("vpc/"+profile, "{.spec.bypassOptimisticLock}")).NotTo(Equal("true"))

		By("another field manager changing the descheduler's profiles: the config is Drifted")
		pc.kubectl(append([]string{"patch"}, append(descheduler, "--type=merge", "--field-manager=cluster-admin",
			"-p", `{"spec":{"profiles":["AffinityAndTaints","LongLifecycle"]}}`)...)...)
		changed := pc.jsonpath(descheduler[0], "{.metadata.resourceVersion}", descheduler[1:]...)
		Eventually(func() advisorv1alpha1.Phase { return pc.config(profile).Status.Phase }).Should(Equal(advisorv1alpha1.PhaseDrifted))

		By("asking for the revert after the change: the revert plan shows the change as a conflict")
		pc.requestRevert(profile)
		shown := pc.waitRevertShown(profile)
		item := itemOf(shown, "KubeDescheduler", "cluster")
		Expect(item.Action).To(Equal(advisorv1alpha1.ItemActionRestore))
		Expect(item.Conflicts).To(ContainElement(advisorv1alpha1.FieldConflict{
			Path:         "spec.profiles",
			Manager:      "cluster-admin",
			LiveValue:    `["AffinityAndTaints","LongLifecycle"]`,
			PlannedValue: original,
		}))

		By("the descheduler is not written before the approval")
		Consistently(func() string { return pc.jsonpath(descheduler[0], "{.metadata.resourceVersion}", descheduler[1:]...) }).
			WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(changed))
		Expect(pc.config(profile).Status.Phase).To(Equal(advisorv1alpha1.PhaseReviewRequired))

		By("approving the revert plan shown: the value from before the apply is put back")
		pc.approveAsShown(profile)
		pc.waitReverted(profile)
		Expect(pc.jsonpath(descheduler[0], "{.spec.profiles}", descheduler[1:]...)).To(Equal(original))
		Expect(pc.jsonpath(descheduler[0], "{.spec.deschedulingIntervalSeconds}", descheduler[1:]...)).To(Equal("3600"))
		Expect(strings.Fields(pc.jsonpath(descheduler[0], "{.metadata.managedFields[*].manager}", descheduler[1:]...))).
			NotTo(ContainElement("virt-advisor-operator/" + profile))
	})

	It("reverting the platform-baseline full sample deletes its MachineConfigs in one roll-out of the worker pool, forecast before approval: each worker reboots once more, no control plane node reboots", func() {
		pc = rebootCluster()
		const profile = "platform-baseline"
		pc.applyAndComplete(profile, "baseline_full_sample.yaml")
		applied := pc.rebootsOf("worker")
		Expect(applied).To(HaveLen(6))
		Expect(applied).To(Equal(eachOnce(applied)))
		Expect(pc.pools.Rollouts("worker")).To(HaveLen(1))
		var machineConfigs []string
		for _, it := range pc.config(profile).Status.Items {
			if it.TargetRef.Kind == "MachineConfig" && it.State == advisorv1alpha1.ItemCompleted {
				machineConfigs = append(machineConfigs, "machineconfig/"+it.TargetRef.Name)
			}
		}
		Expect(machineConfigs).To(ContainElements("machineconfig/90-worker-kubelet-swap", "machineconfig/90-worker-iommu"))

		By("the revert plan forecasts one reboot of the six workers, in six waves, and none of the control plane")
		pc.requestRevert(profile)
		shown := pc.waitRevertShown(profile)
		for _, mc := range machineConfigs {
			name := strings.TrimPrefix(mc, "machineconfig/")
			Expect(itemOf(shown, "MachineConfig", name).Action).To(Equal(advisorv1alpha1.ItemActionDelete), mc)
		}
		f := pc.forecast(profile, "worker")
		Expect(f.Nodes).To(BeEquivalentTo(6))
		Expect(f.Waves).To(BeEquivalentTo(6))
		Expect(f.Reboot).To(BeTrue())
		Expect(f.Pause).To(BeTrue())
		for _, ro := range shown.Status.Rollouts {
			Expect(ro.Pool).NotTo(Equal("master"), "nothing of the control plane's pool changes")
		}
		Expect(shown.Status.Disruption).To(Equal("reboots 6 worker node(s) once, in 6 wave(s)"))
		Expect(pc.rebootsOf("worker")).To(Equal(applied), "no node reboots before the approval")

		pc.approveAsShown(profile)
		pc.waitReverted(profile)

		By("what the simulator counted: one more reboot per worker, in one roll-out, none of the control plane")
		for _, mc := range machineConfigs {
			Expect(pc.kubectl("get", mc, "--ignore-not-found")).To(BeEmpty(), "%s is deleted", mc)
		}
		Expect(pc.kubectl("get", "kubeletconfig/virt-advisor-kubelet", "--ignore-not-found")).To(BeEmpty())
		reverted := pc.rebootsOf("worker")
		twice := map[string]int{}
		for node := range applied {
			twice[node] = 2
		}
		Expect(reverted).To(Equal(twice), "each worker rebooted exactly once more")
		Expect(pc.pools.Rollouts("worker")).To(HaveLen(2), "the deletions rolled out together")
		Expect(pc.pools.Waves("worker")).To(BeEquivalentTo(f.Waves))
		for _, node := range pc.nodesOf("master") {
			Expect(pc.pools.Reboots(node)).To(BeZero(), "control plane node %s is not touched", node)
		}
		Expect(pc.jsonpath("mcp/worker", "{.spec.paused}")).NotTo(Equal("true"), "the pool is resumed")
	})
})
