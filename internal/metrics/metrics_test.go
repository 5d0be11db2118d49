package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

const reasonMetric = "virt_advisor_config_reason"

// config is a VirtPlatformConfig in phase with the condition of that phase carrying reason,
// and a False Ready condition carrying the phase's name, as the controller sets them.
func config(name string, phase advisorv1alpha1.Phase, condType, reason string) *advisorv1alpha1.VirtPlatformConfig {
	return &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: advisorv1alpha1.ProfileName(name)},
		Status: advisorv1alpha1.VirtPlatformConfigStatus{
			Phase: phase,
			Conditions: []metav1.Condition{
				{Type: condType, Status: metav1.ConditionTrue, Reason: reason},
				{Type: advisorv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(phase)},
			},
		},
	}
}

// exposition is the text format of the virt_advisor_config_reason family with one series per
// element of series (name, phase, reason; the profile is the name).
func exposition(series ...[3]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", reasonMetric, configReasonHelp, reasonMetric)
	for _, s := range series {
		fmt.Fprintf(&b, "%s{name=%q,phase=%q,profile=%q,reason=%q} 1\n", reasonMetric, s[0], s[1], s[0], s[2])
	}
	return b.String()
}

// expectScrape checks what the controller-runtime registry, which the manager serves,
// exposes of virt_advisor_config_reason.
func expectScrape(t *testing.T, step string, series ...[3]string) {
	t.Helper()
	if err := testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(exposition(series...)), reasonMetric); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}

func TestConfigReasonHasOneSeriesPerConfigWithThePhaseAndItsConditionsReason(t *testing.T) {
	const name, other = "load-aware-rebalancing", "virt-higher-density"
	t.Cleanup(func() { Forget(name); Forget(other) })

	Observe(config(other, advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.ConditionReviewRequired, advisorv1alpha1.ReasonAwaitingApproval))

	Observe(config(name, advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ConditionDrifted, advisorv1alpha1.ReasonThrashing))
	expectScrape(t, "Drifted with reason Thrashing",
		[3]string{name, "Drifted", "Thrashing"}, [3]string{other, "ReviewRequired", "AwaitingApproval"})

	Observe(config(name, advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ConditionDrifted, advisorv1alpha1.ReasonThrashing))
	expectScrape(t, "observed again unchanged",
		[3]string{name, "Drifted", "Thrashing"}, [3]string{other, "ReviewRequired", "AwaitingApproval"})

	Observe(config(name, advisorv1alpha1.PhaseCompleted, advisorv1alpha1.ConditionCompleted, advisorv1alpha1.ReasonInSync))
	expectScrape(t, "Completed with reason InSync replaces the Drifted series",
		[3]string{name, "Completed", "InSync"}, [3]string{other, "ReviewRequired", "AwaitingApproval"})

	Forget(name)
	expectScrape(t, "forgotten", [3]string{other, "ReviewRequired", "AwaitingApproval"})
}

// The phases whose condition has another name take the reason of that condition.
func TestConfigReasonOfPhasesDescribedByAnotherCondition(t *testing.T) {
	const name = "load-aware-rebalancing"
	t.Cleanup(func() { Forget(name) })
	for _, c := range []struct {
		phase    advisorv1alpha1.Phase
		condType string
		reason   string
	}{
		{advisorv1alpha1.PhaseCompletedWithErrors, advisorv1alpha1.ConditionCompleted, advisorv1alpha1.ReasonItemsFailed},
		{advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.ConditionUpgradeAvailable, advisorv1alpha1.ReasonUpgradeAvailable},
		{advisorv1alpha1.PhasePending, advisorv1alpha1.ConditionReady, string(advisorv1alpha1.PhasePending)},
	} {
		vpc := config(name, c.phase, c.condType, c.reason)
		if c.phase == advisorv1alpha1.PhasePending {
			// Nothing holds while Pending: Ready is False and carries the phase's name.
			vpc.Status.Conditions = vpc.Status.Conditions[1:]
		}
		Observe(vpc)
		expectScrape(t, string(c.phase), [3]string{name, string(c.phase), c.reason})
	}
}

// A config without a phase (not reconciled yet) has no condition to take a reason from: it
// has no series, and one it had is removed.
func TestConfigReasonHasNoSeriesWithoutAPhase(t *testing.T) {
	const name = "load-aware-rebalancing"
	t.Cleanup(func() { Forget(name) })
	Observe(config(name, advisorv1alpha1.PhaseDrifted, advisorv1alpha1.ConditionDrifted, advisorv1alpha1.ReasonDriftDetected))
	expectScrape(t, "Drifted", [3]string{name, "Drifted", "DriftDetected"})
	Observe(&advisorv1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name}})
	expectScrape(t, "no phase")
}

const poolPausedMetric = "virt_advisor_pool_paused_since_timestamp_seconds"

// expectPausedPools checks what the registry exposes of
// virt_advisor_pool_paused_since_timestamp_seconds: one series per pool, with its value.
func expectPausedPools(t *testing.T, step string, pools ...string) {
	t.Helper()
	var b strings.Builder
	if len(pools) > 0 {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", poolPausedMetric, poolPausedSinceHelp, poolPausedMetric)
	}
	for i := 0; i+1 < len(pools); i += 2 {
		fmt.Fprintf(&b, "%s{pool=%q} %s\n", poolPausedMetric, pools[i], pools[i+1])
	}
	if err := testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(b.String()), poolPausedMetric); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}

func TestPoolPausedSinceIsTheUnixTimeOfThePauseWhileTheOperatorHoldsThePool(t *testing.T) {
	t.Cleanup(func() { PoolResumed("worker"); PoolResumed("infra") })
	paused := time.Date(2026, time.November, 28, 2, 0, 0, 0, time.UTC) // Unix 1795831200
	expectPausedPools(t, "nothing paused")

	PoolPaused("worker", paused)
	// Whole seconds: 1795831290.5 is exposed as 1795831290.
	PoolPaused("infra", paused.Add(90*time.Second+500*time.Millisecond))
	expectPausedPools(t, "two pools paused", "infra", "1795831290", "worker", "1795831200")

	// A restarted operator reports the pause it recorded, not the time it restarted.
	PoolPaused("worker", paused)
	expectPausedPools(t, "reported again", "infra", "1795831290", "worker", "1795831200")

	PoolResumed("worker")
	expectPausedPools(t, "worker resumed", "infra", "1795831290")
	PoolResumed("infra")
	PoolResumed("never-paused")
	expectPausedPools(t, "all resumed")
}

const rolloutVMsMetric = "virt_advisor_rollout_vms"

// expectRolloutVMs checks what the registry exposes of virt_advisor_rollout_vms: series are
// name, pool, count, source and value.
func expectRolloutVMs(t *testing.T, step string, series ...[5]string) {
	t.Helper()
	var b strings.Builder
	if len(series) > 0 {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", rolloutVMsMetric, rolloutVMsHelp, rolloutVMsMetric)
	}
	for _, s := range series {
		fmt.Fprintf(&b, "%s{count=%q,name=%q,pool=%q,source=%q} %s\n", rolloutVMsMetric, s[2], s[0], s[1], s[3], s[4])
	}
	if err := testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(b.String()), rolloutVMsMetric); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}

func TestRolloutVMsSetsTheForecastBeforeTheRolloutAndTheActualBesideItAfter(t *testing.T) {
	const name = "load-aware-rebalancing"
	t.Cleanup(func() { Forget(name) })
	vpc := config(name, advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.ConditionReviewRequired, advisorv1alpha1.ReasonAwaitingApproval)
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{
		{Pool: "master", VMs: &advisorv1alpha1.VMForecast{UnknownReason: "the cluster serves no VirtualMachineInstances"}},
		{Pool: "worker", VMs: &advisorv1alpha1.VMForecast{LiveMigrate: 57, Migrations: 65, Restart: 2, Block: 1}},
	}
	Observe(vpc)
	expectRolloutVMs(t, "forecast",
		[5]string{name, "worker", "blocked", "forecast", "1"},
		[5]string{name, "worker", "migrations", "forecast", "65"},
		[5]string{name, "worker", "restarts", "forecast", "2"})

	two := int32(2)
	vpc.Status.Rollouts[1].VMs.Block = 0
	vpc.Status.Rollouts[1].VMsActual = &advisorv1alpha1.VMActual{Migrations: 66, Restarts: &two, Blocked: 0}
	Observe(vpc)
	expectRolloutVMs(t, "after the rollout",
		[5]string{name, "worker", "blocked", "actual", "0"},
		[5]string{name, "worker", "blocked", "forecast", "0"},
		[5]string{name, "worker", "migrations", "actual", "66"},
		[5]string{name, "worker", "migrations", "forecast", "65"},
		[5]string{name, "worker", "restarts", "actual", "2"},
		[5]string{name, "worker", "restarts", "forecast", "2"})

	vpc.Status.Rollouts = nil
	Observe(vpc)
	expectRolloutVMs(t, "a new plan without rollouts")
	Observe(vpc)
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{{Pool: "worker", VMs: &advisorv1alpha1.VMForecast{Migrations: 3}}}
	Observe(vpc)
	Forget(name)
	expectRolloutVMs(t, "a deleted config")
}
