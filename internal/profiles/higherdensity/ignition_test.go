package higherdensity_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/ignitioncheck"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// TestSwapMachineConfigPassesIgnition renders the profile for every option combination
// that changes or accompanies the swap MachineConfig and checks each MachineConfig with
// the real Ignition 3.2 parser and validator (no warning allowed) and a unit-file parse of
// every systemd unit and drop-in.
func TestSwapMachineConfigPassesIgnition(t *testing.T) {
	labels := []string{"CNV_SWAP", "swap", "VM.swap-1_part", "A23456789012345678901234567890123456"}
	ratios := []int32{100, 120, 150, 300}
	ksms := []*advisorv1alpha1.KSMConfiguration{nil, {Enabled: ptr.To(false)}}
	checked := 0
	for _, label := range labels {
		for _, ratio := range ratios {
			for _, ksm := range ksms {
				for _, version := range []string{"v1", "v1beta1"} {
					name := fmt.Sprintf("label %s, ratio %d, KSM %v, HyperConverged %s", label, ratio, ksm == nil, version)
					t.Run(name, func(t *testing.T) {
						g := NewWithT(t)
						items, err := higherdensity.RenderItems(options(advisorv1alpha1.VirtHigherDensityOptions{
							EnableSwap: ptr.To(true), MemoryToRequestRatio: ptr.To(ratio), SwapPartitionLabel: label, KSMConfiguration: ksm,
						}), onVersion(version))
						g.Expect(err).NotTo(HaveOccurred())
						mcs := 0
						for _, it := range items {
							if it.Desired.GroupVersionKind() != targets.MachineConfig.GVK {
								continue
							}
							mcs++
							g.Expect(ignitioncheck.Check(it.Desired)).To(Succeed(), "MachineConfig %s", it.Desired.GetName())
							g.Expect(it.Desired.GetName()).To(Equal(higherdensity.SwapMachineConfigName))
						}
						g.Expect(mcs).To(Equal(1))
					})
					checked++
				}
			}
		}
	}
	t.Logf("checked the swap MachineConfig of %d option combinations", checked)
}
