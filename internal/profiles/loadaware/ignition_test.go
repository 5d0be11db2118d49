package loadaware_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/ignitioncheck"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// TestPSIMachineConfigPassesIgnition checks the PSI MachineConfig, whether or not psi=1
// is already effective and whatever the descheduler options, with the real Ignition 3.2
// parser and validator (no warning allowed).
func TestPSIMachineConfigPassesIgnition(t *testing.T) {
	s420 := schemaOf(t, "4.20")
	for _, effective := range []bool{false, true} {
		for _, mode := range []advisorv1alpha1.DeschedulerMode{advisorv1alpha1.DeschedulerModeAutomatic, advisorv1alpha1.DeschedulerModePredictive} {
			g := NewWithT(t)
			items, err := loadaware.RenderItems(options(advisorv1alpha1.LoadAwareOptions{EnablePSIMetrics: ptr.To(true), Mode: mode}),
				loadaware.Inputs{Schema: s420, PSIEffective: effective})
			g.Expect(err).NotTo(HaveOccurred())
			mcs := 0
			for _, it := range items {
				if it.Desired.GroupVersionKind() == targets.MachineConfig.GVK {
					mcs++
					g.Expect(ignitioncheck.Check(it.Desired)).To(Succeed(), "MachineConfig %s", it.Desired.GetName())
				}
			}
			g.Expect(mcs).To(Equal(1), "psi=1 effective %v, mode %s", effective, mode)
		}
	}
}
