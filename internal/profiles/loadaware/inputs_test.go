package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// describeReadingInputs specifies what ReadInputs reads from the API server, on a CRD with
// evictionLimits.total and .node. What the plan makes of it is the table in render_test.go;
// how the API server's dry-run takes the plan, per CRD generation, is selection_test.go.
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

	Context("reading whether the worker pool already runs with psi=1", func() {
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
		psiEffective := func(set advisorv1alpha1.LoadAwareOptions) bool {
			in, err := loadaware.ReadInputs(ctx, cl.c, options(set))
			Expect(err).NotTo(HaveOccurred())
			return in.PSIEffective
		}

		It("reads it as effective when the pool's current rendered configuration has psi=1", func() {
			workerPoolRendered("[nosmt, psi=1]")
			Expect(psiEffective(advisorv1alpha1.LoadAwareOptions{})).To(BeTrue())
		})

		It("reads it as not effective when the pool's current rendered configuration lacks psi=1", func() {
			workerPoolRendered("[nosmt]")
			Expect(psiEffective(advisorv1alpha1.LoadAwareOptions{})).To(BeFalse())
		})

		It("reads it as not effective when there is no worker pool", func() {
			Expect(psiEffective(advisorv1alpha1.LoadAwareOptions{})).To(BeFalse())
		})

		It("does not read it when enablePSIMetrics is false", func() {
			workerPoolRendered("[psi=1]")
			Expect(psiEffective(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(false)})).To(BeFalse())
		})
	})
}
