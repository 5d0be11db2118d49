package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// describeReadingInputs specifies what ReadInputs reads from the API server, on a CRD with
// evictionLimits.total and .node. What the plan makes of it is the table in render_test.go.
func describeReadingInputs(cl *cluster) {
	Context("reading the HyperConverged's live-migration limits", func() {
		read := func(set advisorv1alpha1.LoadAwareOptions) loadaware.Inputs {
			in, err := loadaware.ReadInputs(ctx, cl.c, options(set))
			Expect(err).NotTo(HaveOccurred())
			return in
		}

		It("reads them from the one HyperConverged, at the served version's path, naming it", func() {
			cl.hyperConverged(7, 3)
			Expect(read(advisorv1alpha1.LoadAwareOptions{}).MigrationLimits).To(Equal(&loadaware.MigrationLimits{
				HyperConvergeds: 1, Source: hcoSource, PerCluster: ptr.To[int64](7), PerNode: ptr.To[int64](3),
			}))
		})

		It("reads none, and counts them, when the cluster has two HyperConverged objects", func() {
			cl.hyperConverged(7, 3)
			cl.hyperConvergedIn(upstreamHCONamespace, 9, 4)
			Expect(read(advisorv1alpha1.LoadAwareOptions{}).MigrationLimits).To(Equal(&loadaware.MigrationLimits{HyperConvergeds: 2}))
		})

		It("reads none, and counts none, when the cluster has no HyperConverged", func() {
			Expect(read(advisorv1alpha1.LoadAwareOptions{}).MigrationLimits).To(Equal(&loadaware.MigrationLimits{HyperConvergeds: 0}))
		})

		It("does not read them when the options set both limits", func() {
			cl.hyperConverged(7, 3)
			cl.hyperConvergedIn(upstreamHCONamespace, 9, 4)
			in := read(advisorv1alpha1.LoadAwareOptions{EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4)})
			Expect(in.MigrationLimits).To(BeNil())
		})
	})
}
