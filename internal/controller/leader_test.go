package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// staleReader answers reads of the config with a copy read earlier, as a deposed leader
// still inside a reconcile holds one.
type staleReader struct {
	client.Reader
	config *advisorv1alpha1.VirtPlatformConfig
}

func (r staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if vpc, ok := obj.(*advisorv1alpha1.VirtPlatformConfig); ok {
		r.config.DeepCopyInto(vpc)
		return nil
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// staleClient is a client whose cache still holds the config as it was read earlier, as
// a deposed leader's cache may, behind the writes of the new leader.
type staleClient struct {
	client.Client
	stale staleReader
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.stale.Get(ctx, key, obj, opts...)
}

var _ = Describe("A deposed leader", func() {
	BeforeEach(resetCluster)

	It("rule 12: never overwrites a newer status: its status write is refused and it requeues once, from a fresh read", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		old := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		By("the new leader moves on: the spec changes and the plan is drafted again")
		patchSpec(`{"options":{"loadAware":{"deschedulingIntervalSeconds":120}}}`)
		Eventually(func() any {
			return desiredSpecField(item(getConfig(), "enable-load-aware-descheduling"), "deschedulingIntervalSeconds")
		}).Should(BeEquivalentTo(120))
		current := waitPhase(advisorv1alpha1.PhaseReviewRequired)

		By("the deposed leader reconciles from the config it read before, about to draft its own plan")
		old.Spec.Options = &advisorv1alpha1.ProfileOptions{LoadAware: &advisorv1alpha1.LoadAwareOptions{DeschedulingIntervalSeconds: ptr.To[int32](300)}}
		stale := staleReader{Reader: k8s, config: old}
		deposed := &controller.VirtPlatformConfigReconciler{
			Client:    staleClient{Client: k8s, stale: stale},
			APIReader: stale,
			Profiles:  registry,
			Engine:    &plan.Engine{Reader: k8s, Writer: k8s},
			Version:   "v0.0.1-deposed",
		}
		res, err := deposed.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: configName}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "a refused status write is retried once, from a fresh read")

		after := getConfig()
		Expect(after.Status.OperatorVersion).To(Equal(operatorVersion), "the deposed leader's status was not written")
		Expect(after.Status.PlanHash).To(Equal(current.Status.PlanHash))
		Expect(after.Status.Items).To(Equal(current.Status.Items))
	})
})
