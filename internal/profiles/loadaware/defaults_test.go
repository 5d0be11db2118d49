package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

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
