package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// describeOptions specifies how the options shape the plan, on a CRD where every option
// has a KubeDescheduler field to land in.
func describeOptions(cl *cluster) {
	Context("options", func() {
		It("puts mode, deschedulingIntervalSeconds and devDeviationThresholds into the desired KubeDescheduler", func() {
			cl.liveDescheduler(liveProfiles...)
			d := cl.draft(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
				Mode:                        advisorv1alpha1.DeschedulerModePredictive,
				DeschedulingIntervalSeconds: ptr.To[int32](3600),
				DevDeviationThresholds:      "High",
			}})
			it := d.descheduler()
			spec := desiredSpec(it)
			Expect(spec).To(HaveKeyWithValue("mode", "Predictive"))
			Expect(spec).To(HaveKeyWithValue("deschedulingIntervalSeconds", int64(3600)))
			Expect(spec).To(HaveKeyWithValue("profileCustomizations", HaveKeyWithValue("devDeviationThresholds", "High")))
			Expect(it.Message).To(ContainSubstring("mode Predictive, every 3600s"))
			Expect(it.Message).To(ContainSubstring("deviation thresholds High"))
			Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
		})

		It("plans only the KubeDescheduler when enablePSIMetrics is false", func() {
			d := cl.draft(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
				EnablePSIMetrics: ptr.To(false),
			}})
			Expect(d.rendered).To(HaveLen(1))
			Expect(d.items).To(HaveLen(1))
			Expect(d.items[0].Name).To(Equal(loadaware.ItemDescheduler))
		})
	})

	Context("PSI metrics (the default)", func() {
		It("plans the KubeDescheduler first and then MachineConfig 99-worker-psi-karg adding psi=1 to workers, with High impact", func() {
			d := cl.draft(nil)
			Expect(d.items).To(HaveLen(2))
			Expect(d.items[0].Name).To(Equal(loadaware.ItemDescheduler))
			it := d.items[1]
			Expect(it.Name).To(Equal(loadaware.ItemPSI))
			Expect(it.TargetRef).To(Equal(advisorv1alpha1.TargetReference{
				APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: loadaware.PSIMachineConfigName,
			}))
			mc := desired(it)
			Expect(mc.GetName()).To(Equal("99-worker-psi-karg"))
			Expect(mc.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", "worker"))
			args, found, err := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			Expect(args).To(Equal([]string{"psi=1"}))
			Expect(it.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactHigh))
			Expect(it.Message).To(ContainSubstring("reboots"))
			Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
			Expect(it.Diff).To(HavePrefix("--- /dev/null"))
		})

		// workerPoolRendered creates the worker MachineConfigPool whose current rendered
		// configuration has the given kernel arguments.
		workerPoolRendered := func(kernelArguments string) {
			cl.create(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: rendered-worker-0123456789abcdef}
spec:
  config: {ignition: {version: 3.2.0}}
  kernelArguments: ` + kernelArguments)
			pool := cl.create(`
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: worker}}`)
			Expect(unstructured.SetNestedField(pool.Object, "rendered-worker-0123456789abcdef", "status", "configuration", "name")).To(Succeed())
			Expect(cl.c.Status().Update(ctx, pool)).To(Succeed())
		}

		It("gives the MachineConfig Low impact when the worker pool's rendered configuration already has psi=1", func() {
			workerPoolRendered("[nosmt, psi=1]")
			d := cl.draft(nil)
			it := d.item(loadaware.ItemPSI)
			Expect(it.ImpactSeverity).To(Equal(advisorv1alpha1.ImpactLow))
			Expect(it.Message).To(ContainSubstring("no reboot is expected"))
			Expect(it.State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", it.Message)
		})

		It("keeps the MachineConfig at High impact when the worker pool's rendered configuration lacks psi=1", func() {
			workerPoolRendered("[nosmt]")
			d := cl.draft(nil)
			Expect(d.item(loadaware.ItemPSI).ImpactSeverity).To(Equal(advisorv1alpha1.ImpactHigh))
		})
	})
}

// describeDefaultsMatchTheCRD specifies that the Go defaults are the CRD's defaults.
func describeDefaultsMatchTheCRD(cl *cluster) {
	Context("defaults", func() {
		// serverDefaulted creates the load-aware-rebalancing VirtPlatformConfig with the
		// loadAware options given as YAML and returns them as the API server stored them.
		serverDefaulted := func(loadAware string) *advisorv1alpha1.LoadAwareOptions {
			cl.create(`
apiVersion: advisor.kubevirt.io/v1alpha1
kind: VirtPlatformConfig
metadata: {name: load-aware-rebalancing}
spec:
  profile: load-aware-rebalancing
  options: {loadAware: ` + loadAware + `}`)
			got := &advisorv1alpha1.VirtPlatformConfig{}
			Expect(cl.c.Get(ctx, types.NamespacedName{Name: profileName}, got)).To(Succeed())
			Expect(got.Spec.Options).NotTo(BeNil())
			Expect(got.Spec.Options.LoadAware).NotTo(BeNil())
			return got.Spec.Options.LoadAware
		}

		It("are what the API server fills into options: {loadAware: {}}", func() {
			Expect(serverDefaulted("{}")).To(Equal(loadaware.New().Defaults(nil).LoadAware))
		})

		DescribeTable("fill in what the API server fills in around the options the user set",
			func(loadAware string, set *advisorv1alpha1.LoadAwareOptions) {
				Expect(serverDefaulted(loadAware)).To(Equal(
					loadaware.New().Defaults(&advisorv1alpha1.ProfileOptions{LoadAware: set}).LoadAware))
			},
			Entry("mode Predictive", "{mode: Predictive}",
				&advisorv1alpha1.LoadAwareOptions{Mode: advisorv1alpha1.DeschedulerModePredictive}),
			Entry("PSI off and both eviction limits", "{enablePSIMetrics: false, evictionLimitTotal: 10, evictionLimitNode: 2}",
				&advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false), EvictionLimitTotal: ptr.To[int32](10), EvictionLimitNode: ptr.To[int32](2)}),
			Entry("interval and deviation thresholds", "{deschedulingIntervalSeconds: 600, devDeviationThresholds: Medium}",
				&advisorv1alpha1.LoadAwareOptions{DeschedulingIntervalSeconds: ptr.To[int32](600), DevDeviationThresholds: "Medium"}),
		)
	})
}
