package plan_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// copyBomb is a patch annotation of a few hundred bytes whose copy operations each copy the
// spec into a new member of itself, doubling it: n copies make the spec 2^n times bigger.
func copyBomb(copies int) string {
	ops := []string{`{"op":"add","path":"/spec/seed","value":"` + strings.Repeat("x", 256) + `"}`}
	for i := range copies {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/c%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// dryRunCounter answers every (dry-run) apply with success and counts them.
type dryRunCounter struct {
	client.Writer
	applies atomic.Int32
	sent    atomic.Pointer[unstructured.Unstructured]
}

func (w *dryRunCounter) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	w.applies.Add(1)
	if u, ok := obj.(interface{ UnstructuredContent() map[string]any }); ok {
		w.sent.Store(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(u.UnstructuredContent())})
	}
	return nil
}

// patchedSizeLimit is the most bytes a patched desired object may have, as
// docs/annotations.md gives it.
const patchedSizeLimit = 32 << 10

// A patch annotation may not grow the desired object past 32 KiB: its item
// would not fit in the config's status (nor a few of them in one request to the API
// server), and copy operations that double the object again and again would exhaust the
// operator's memory first. The item is Skipped as for any bad annotation, before any
// dry-run, and the refusal comes as soon as the copies pass the limit.
func TestDraftSkipsAnItemWhosePatchAnnotationGrowsTheDesiredObjectPastTheLimit(t *testing.T) {
	limit := fmt.Sprintf("the limit of %d bytes", patchedSizeLimit)
	cases := []struct {
		name, patch, fragment string
	}{
		// 2^8 copies of the spec: about 100 KiB.
		{"8 copies that double the spec", copyBomb(8), limit},
		// 2^40 copies of the spec: about 300 TiB, were they made.
		{"40 copies that double the spec", copyBomb(40), limit},
		{"one value bigger than the limit", `[{"op":"add","path":"/spec/notes","value":"` + strings.Repeat("x", patchedSizeLimit) + `"}]`, limit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			target := annotatedDescheduler(map[string]string{plan.PatchAnnotation: tc.patch})
			target.Object["spec"] = map[string]any{"mode": "Automatic"}
			writer := &dryRunCounter{}
			engine := &plan.Engine{Reader: fixedReader{objects: map[string]*unstructured.Unstructured{"cluster": target}}, Writer: writer}
			item := plan.Item{
				Name:    "enable-load-aware-descheduling",
				Desired: annotatedDescheduler(nil),
				Impact:  advisorv1alpha1.ImpactMedium,
			}
			item.Desired.Object["spec"] = map[string]any{"mode": "Automatic", "deschedulingIntervalSeconds": int64(60)}

			p, err := engine.Draft(context.Background(), plan.Request{Profile: "load-aware-rebalancing", Items: []plan.Item{item}})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Items).To(HaveLen(1))
			pi := p.Items[0]
			g.Expect(len(pi.DesiredState.Raw)).To(BeNumerically("<", patchedSizeLimit), "the status holds no oversize patched object")
			g.Expect(pi.State).To(Equal(advisorv1alpha1.ItemSkipped))
			g.Expect(pi.Message).To(HavePrefix("not planned: advisor.kubevirt.io/patch on KubeDescheduler openshift-kube-descheduler-operator/cluster: annotation advisor.kubevirt.io/patch: "))
			g.Expect(pi.Message).To(ContainSubstring(tc.fragment))
			g.Expect(pi.Message).To(HaveSuffix("Fix or remove the annotation; the other items are not affected"))
			g.Expect(p.Notes).To(HaveLen(1))
			g.Expect(p.Notes[0].Reason).To(Equal(advisorv1alpha1.EventBadAnnotation))
			g.Expect(p.Notes[0].Message).To(Equal("item enable-load-aware-descheduling: " + pi.Message))
			g.Expect(writer.applies.Load()).To(BeZero(), "a refused patch is never dry-run")
		})
	}

	t.Run("plans an item whose patch copies within the limit", func(t *testing.T) {
		g := NewWithT(t)
		target := annotatedDescheduler(map[string]string{plan.PatchAnnotation: copyBomb(3)})
		writer := &dryRunCounter{}
		engine := &plan.Engine{Reader: fixedReader{objects: map[string]*unstructured.Unstructured{"cluster": target}}, Writer: writer}
		item := plan.Item{Name: "enable-load-aware-descheduling", Desired: annotatedDescheduler(nil), Impact: advisorv1alpha1.ImpactMedium}
		item.Desired.Object["spec"] = map[string]any{"mode": "Automatic"}

		p, err := engine.Draft(context.Background(), plan.Request{Profile: "load-aware-rebalancing", Items: []plan.Item{item}})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Items[0].State).To(Equal(advisorv1alpha1.ItemPending), p.Items[0].Message)
		g.Expect(p.Notes).To(BeEmpty())
		g.Expect(writer.applies.Load()).To(BeEquivalentTo(1))
		sent := writer.sent.Load()
		g.Expect(sent).NotTo(BeNil())
		g.Expect(sent.Object["spec"]).To(HaveKey("c2"), "the dry-run is sent the patched object")
	})
}
