package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// deschedulerPrerequisite and machineConfigPrerequisite match the prerequisite CRDs,
// whose operator is named.
func deschedulerPrerequisite() gomegatypes.GomegaMatcher {
	return SatisfyAll(
		HaveField("CRD", "kubedeschedulers.operator.openshift.io"),
		HaveField("Operator", ContainSubstring("Kube Descheduler Operator")))
}

func machineConfigPrerequisite() gomegatypes.GomegaMatcher {
	return SatisfyAll(
		HaveField("CRD", "machineconfigs.machineconfiguration.openshift.io"),
		HaveField("Operator", ContainSubstring("Machine Config Operator")))
}

var _ = Describe("load-aware-rebalancing prerequisites", func() {
	It("are, without options, the KubeDescheduler CRD and the MachineConfig CRD, each with the operator that installs it", func() {
		Expect(loadaware.New().Prerequisites(nil)).To(HaveExactElements(deschedulerPrerequisite(), machineConfigPrerequisite()))
	})

	It("are only the KubeDescheduler CRD when enablePSIMetrics is false", func() {
		Expect(loadaware.New().Prerequisites(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
			EnablePSIMetrics: ptr.To(false),
		}})).To(HaveExactElements(deschedulerPrerequisite()))
	})
})

var _ = Describe("load-aware-rebalancing Defaults", func() {
	allSet := func() *advisorv1alpha1.ProfileOptions {
		return &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
			DeschedulingIntervalSeconds: ptr.To[int32](300),
			Mode:                        advisorv1alpha1.DeschedulerModePredictive,
			EnablePSIMetrics:            ptr.To(false),
			DevDeviationThresholds:      "High",
			EvictionLimitTotal:          ptr.To[int32](20),
			EvictionLimitNode:           ptr.To[int32](4),
		}}
	}

	It("are interval 60 s, mode Automatic, PSI metrics on, deviation thresholds AsymmetricLow and no eviction limits", func() {
		Expect(loadaware.New().Defaults(nil)).To(Equal(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
			DeschedulingIntervalSeconds: ptr.To[int32](60),
			Mode:                        advisorv1alpha1.DeschedulerModeAutomatic,
			EnablePSIMetrics:            ptr.To(true),
			DevDeviationThresholds:      "AsymmetricLow",
		}}))
	})

	It("treat options without a loadAware block like no options", func() {
		Expect(loadaware.New().Defaults(&advisorv1alpha1.ProfileOptions{})).To(Equal(loadaware.New().Defaults(nil)))
	})

	It("keep every value the user set", func() {
		Expect(loadaware.New().Defaults(allSet())).To(Equal(allSet()))
	})

	It("fill in only the unset fields", func() {
		in := &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
			Mode: advisorv1alpha1.DeschedulerModePredictive, EvictionLimitNode: ptr.To[int32](3),
		}}
		Expect(loadaware.New().Defaults(in).LoadAware).To(Equal(&advisorv1alpha1.LoadAwareOptions{
			DeschedulingIntervalSeconds: ptr.To[int32](60),
			Mode:                        advisorv1alpha1.DeschedulerModePredictive,
			EnablePSIMetrics:            ptr.To(true),
			DevDeviationThresholds:      "AsymmetricLow",
			EvictionLimitNode:           ptr.To[int32](3),
		}))
	})

	It("do not modify their input", func() {
		partial := &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{Mode: advisorv1alpha1.DeschedulerModePredictive}}
		before := partial.DeepCopy()
		loadaware.New().Defaults(partial)
		Expect(partial).To(Equal(before))

		full := allSet()
		out := loadaware.New().Defaults(full)
		*out.LoadAware.EvictionLimitTotal = 999
		*out.LoadAware.EnablePSIMetrics = true
		Expect(full).To(Equal(allSet()), "the defaulted options share memory with the input")
	})
})

// describePrerequisiteErrors specifies Render's answer to a KubeDescheduler CRD the
// profile cannot work with. The CRD is the cluster's own, altered and served to Render
// through crdOverride; every other read goes to the API server.
func describePrerequisiteErrors(cl *cluster) {
	Context("with a KubeDescheduler CRD it cannot use", func() {
		var crd *apiextensionsv1.CustomResourceDefinition
		BeforeEach(func() { crd = cl.deschedulerCRD() })

		expectPrerequisiteError := func(crd *apiextensionsv1.CustomResourceDefinition, fragments ...string) {
			items, err := loadaware.New().Render(ctx, crdOverride{Reader: cl.c, crd: crd}, nil)
			Expect(err).To(HaveOccurred())
			Expect(items).To(BeEmpty())
			Expect(profiles.IsPrerequisiteError(err)).To(BeTrue(), "not a prerequisite error: %v", err)
			for _, f := range fragments {
				Expect(err.Error()).To(ContainSubstring(f))
			}
		}

		It("refuses to plan, asking to upgrade the Kube Descheduler Operator, when the CRD does not serve v1", func() {
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Served = false
			}
			expectPrerequisiteError(crd, "does not serve v1", "upgrade the Kube Descheduler Operator")
		})

		It("refuses to plan, asking to install the Kube Descheduler Operator, when the CRD is missing", func() {
			expectPrerequisiteError(nil, "the KubeDescheduler CRD is missing", "install the Kube Descheduler Operator")
		})
	})
}
