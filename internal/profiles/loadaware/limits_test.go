package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// describeEvictionLimits specifies where the eviction limits come from, on a CRD with
// evictionLimits.total and .node.
func describeEvictionLimits(cl *cluster) {
	Context("eviction limits", func() {
		evictionLimits := func(d drafted) map[string]any {
			el, found, err := unstructured.NestedMap(desired(d.descheduler()).Object, "spec", "evictionLimits")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue(), "the desired KubeDescheduler has no spec.evictionLimits")
			return el
		}
		const hco = "HyperConverged openshift-cnv/kubevirt-hyperconverged"

		It("follow the HyperConverged's live-migration limits, which the message names", func() {
			cl.hyperConverged(7, 3)
			d := cl.draft(nil)
			Expect(evictionLimits(d)).To(Equal(map[string]any{"total": int64(7), "node": int64(3)}))
			Expect(d.descheduler().Message).To(ContainSubstring(
				"at most 7 evictions per run (" + hco + " parallelMigrationsPerCluster) and 3 per node (" + hco + " parallelOutboundMigrationsPerNode)"))
			Expect(d.descheduler().State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", d.descheduler().Message)
		})

		It("come from the options, which take precedence over the HyperConverged, and the message says so", func() {
			cl.hyperConverged(7, 3)
			d := cl.draft(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
				EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4),
			}})
			Expect(evictionLimits(d)).To(Equal(map[string]any{"total": int64(20), "node": int64(4)}))
			Expect(d.descheduler().Message).To(ContainSubstring("at most 20 evictions per run (options) and 4 per node (options)"))
			Expect(d.descheduler().Message).NotTo(ContainSubstring("HyperConverged"))
			Expect(d.descheduler().State).To(Equal(advisorv1alpha1.ItemPending), "item message: %s", d.descheduler().Message)
		})

		It("come from the options without a HyperConverged", func() {
			d := cl.draft(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
				EvictionLimitTotal: ptr.To[int32](20), EvictionLimitNode: ptr.To[int32](4),
			}})
			Expect(evictionLimits(d)).To(Equal(map[string]any{"total": int64(20), "node": int64(4)}))
			Expect(d.descheduler().Message).To(ContainSubstring("at most 20 evictions per run (options) and 4 per node (options)"))
		})

		It("take each limit from the options where set and from the HyperConverged otherwise", func() {
			cl.hyperConverged(7, 3)
			d := cl.draft(&advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{
				EvictionLimitTotal: ptr.To[int32](20),
			}})
			Expect(evictionLimits(d)).To(Equal(map[string]any{"total": int64(20), "node": int64(3)}))
			Expect(d.descheduler().Message).To(ContainSubstring(
				"at most 20 evictions per run (options) and 3 per node (" + hco + " parallelOutboundMigrationsPerNode)"))
		})

		It("default to 5 in total and 2 per node without a HyperConverged", func() {
			d := cl.draft(nil)
			Expect(evictionLimits(d)).To(Equal(map[string]any{"total": int64(5), "node": int64(2)}))
			Expect(d.descheduler().Message).To(ContainSubstring("at most 5 evictions per run (default) and 2 per node (default)"))
		})
	})
}
