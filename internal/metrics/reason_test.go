package metrics_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
)

// virt_advisor_config_reason carries, for every phase, the reason the conditions set by
// SetConditions show for that phase (ShownReason): the metric and the status never disagree.
func TestConfigReasonMetricIsTheReasonTheStatusShowsForThePhase(t *testing.T) {
	const name = "metrics-reason-probe"
	t.Cleanup(func() { metrics.Forget(name) })
	phases := []advisorv1alpha1.Phase{
		advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting, advisorv1alpha1.PhaseReviewRequired,
		advisorv1alpha1.PhaseInProgress, advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithErrors,
		advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.PhaseDrifted, advisorv1alpha1.PhaseFailed,
		advisorv1alpha1.PhasePrerequisiteFailed, advisorv1alpha1.PhaseIgnored,
	}
	for _, p := range phases {
		vpc := &advisorv1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: name},
			Status:     advisorv1alpha1.VirtPlatformConfigStatus{Phase: p},
		}
		vpc.Status.SetConditions("ReasonOf"+string(p), "message", advisorv1alpha1.ProgressOf(p, advisorv1alpha1.ActionApply, false))
		want, _ := vpc.Status.ShownReason()
		metrics.Observe(vpc)

		series := reasonSeries(t, name)
		if len(series) != 1 {
			t.Errorf("phase %s: %d virt_advisor_config_reason series of %s, want 1: %v", p, len(series), name, series)
			continue
		}
		if got := series[0]; got["phase"] != string(p) || got["reason"] != want {
			t.Errorf("phase %s: series has phase %q reason %q, want phase %q reason %q", p, got["phase"], got["reason"], p, want)
		}
	}
}

// reasonSeries are the labels of the virt_advisor_config_reason series of one config.
func reasonSeries(t *testing.T, name string) []map[string]string {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range families {
		if f.GetName() != "virt_advisor_config_reason" {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := labelsOf(m); l["name"] == name {
				out = append(out, l)
			}
		}
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}
