package plan_test

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// gaugeCRD is a cluster-scoped kind of its own, so switching its version off disturbs no
// other spec.
const gaugeCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.served.advisor.test
spec:
  group: served.advisor.test
  scope: Cluster
  names: {plural: gauges, singular: gauge, kind: Gauge, listKind: GaugeList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func gauge(name string, size int) plan.Item {
	return plan.Item{
		Name: "size-" + name,
		Desired: object(`
			apiVersion: served.advisor.test/v1
			kind: Gauge
			metadata: {name: ` + name + `}
			spec: {size: ` + strconv.Itoa(size) + `}`),
		Impact:  advisorv1alpha1.ImpactLow,
		Message: "Gauge " + name + " is sized",
	}
}

// serveGauges switches the Gauge version on or off.
func serveGauges(served bool) {
	GinkgoHelper()
	patch := `[{"op":"replace","path":"/spec/versions/0/served","value":false}]`
	if served {
		patch = `[{"op":"replace","path":"/spec/versions/0/served","value":true}]`
	}
	crd := object(gaugeCRD)
	Expect(k8sClient.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, []byte(patch)))).To(Succeed())
}

var _ = Describe("A kind the API server does not serve", func() {
	It("is never taken for a missing target: drafting, checking drift and applying fail with a passing error, and nothing is written", func() {
		crd := object(gaugeCRD)
		Expect(k8sClient.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, object(gaugeCRD)))).To(Succeed()) })
		present := gauge("present", 1).Desired
		Eventually(func() error { return k8sClient.Create(ctx, present.DeepCopy(), client.FieldOwner(otherManager)) }).Should(Succeed())

		// The engine's own client: it maps Gauge from its first read on, as the manager's
		// client keeps mapping a kind whose version was just switched off.
		c, err := client.New(env.Config, client.Options{Scheme: testenv.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		e := &plan.Engine{Reader: c, Writer: c}
		items, err := draft(e, gauge("present", 2), gauge("absent", 3))
		Expect(err).NotTo(HaveOccurred())
		Expect(items[0].Diff).To(ContainSubstring("+  size: 2"))
		Expect(items[1].Diff).To(HavePrefix("--- /dev/null"), "a missing object of a served kind is drafted as a creation")

		By("the version is switched off: the API server answers 404 for the resource itself")
		serveGauges(false)
		Eventually(func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(present.GroupVersionKind())
			return c.Get(ctx, client.ObjectKeyFromObject(present), u)
		}).Should(SatisfyAll(
			WithTransform(apierrors.IsNotFound, BeTrue()),
			MatchError(ContainSubstring("the server could not find the requested resource"))))

		expectPassing := func(err error) {
			GinkgoHelper()
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsNotFound(err)).To(BeFalse(), "%v", err)
			Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "%v", err)
			Expect(plan.IsPermanent(err)).To(BeFalse(), "retried, not refused: %v", err)
		}
		_, err = draft(e, gauge("present", 2))
		expectPassing(err)
		_, err = draft(e, gauge("absent", 3))
		expectPassing(err)
		_, err = e.CheckDrift(ctx, testProfile, items[0])
		expectPassing(err)
		out, err := apply(e, items[0], true)
		expectPassing(err)
		Expect(out.Applied).To(BeFalse())

		By("served again: the target is there as it was, untouched")
		serveGauges(true)
		Eventually(func(g Gomega) {
			again, err := draft(e, gauge("present", 2), gauge("absent", 3))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again[0].Diff).To(Equal(items[0].Diff))
			g.Expect(again[1].Diff).To(HavePrefix("--- /dev/null"))
		}).Should(Succeed())
		size, _, _ := unstructured.NestedInt64(live(present).Object, "spec", "size")
		Expect(size).To(BeEquivalentTo(1))
	})
})
