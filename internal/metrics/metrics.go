// Package metrics exposes the operator's Prometheus metrics (prefix virt_advisor_) on the
// controller-runtime registry, which the manager serves on its secure metrics endpoint.
package metrics

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// configReasonHelp is the help text of virt_advisor_config_reason.
const configReasonHelp = "Always 1: one series per VirtPlatformConfig, labelled with its status.phase and the reason " +
	"of the condition that describes that phase (e.g. phase Drifted, reason Thrashing)."

// rolloutVMsHelp is the help text of virt_advisor_rollout_vms.
const rolloutVMsHelp = "What a VirtPlatformConfig's rollout of a MachineConfigPool does to the VMs on its nodes: count is " +
	"migrations, restarts or blocked; source is forecast (before the rollout) or actual (after it)."

// poolPausedSinceHelp is the help text of virt_advisor_pool_paused_since_timestamp_seconds.
const poolPausedSinceHelp = "Unix time at which the operator paused a MachineConfigPool to roll out a batch of " +
	"changes together; a pool has a series only while the operator holds it paused."

var (
	configPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_config_phase",
		Help: "1 for the phase each VirtPlatformConfig is in, 0 for the others.",
	}, []string{"name", "profile", "phase"})

	configCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_config_condition",
		Help: "1 for the status each condition of a VirtPlatformConfig has, 0 for the others.",
	}, []string{"name", "profile", "type", "status"})

	configReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_config_reason",
		Help: configReasonHelp,
	}, []string{"name", "profile", "phase", "reason"})

	planItems = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_plan_items",
		Help: "Number of plan items of a VirtPlatformConfig in each state.",
	}, []string{"name", "profile", "state"})

	driftDetected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "virt_advisor_drift_detected_total",
		Help: "Times a completed VirtPlatformConfig was found drifted from its plan.",
	})

	applyTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "virt_advisor_apply_total",
		Help: "Real server-side applies of plan items, by result (success or failure).",
	}, []string{"result"})

	applyDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "virt_advisor_apply_duration_seconds",
		Help:    "Time from the apply of a plan item until it is healthy or failed (MachineConfig items include the pool rollout).",
		Buckets: []float64{0.1, 1, 10, 60, 300, 900, 1800, 3600, 7200, 14400},
	})

	throttled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "virt_advisor_throttled_total",
		Help: "Drift corrections held back by the per-target rate limit.",
	})

	// rolloutVMs is what the last rollout of each pool did to the VMs, forecast beside
	// actual, from status.rollouts[].vms and vmsActual.
	rolloutVMs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_rollout_vms",
		Help: rolloutVMsHelp,
	}, []string{"name", "pool", "count", "source"})

	// poolPausedSince is a timestamp rather than a duration, so that the alert on a pause held
	// too long measures it in Prometheus, and a restarted operator reports the same pause.
	poolPausedSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "virt_advisor_pool_paused_since_timestamp_seconds",
		Help: poolPausedSinceHelp,
	}, []string{"pool"})
)

func init() {
	metrics.Registry.MustRegister(configPhase, configCondition, configReason, planItems, driftDetected, applyTotal, applyDuration,
		throttled, poolPausedSince, rolloutVMs)
}

var (
	allPhases = []advisorv1alpha1.Phase{
		advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting, advisorv1alpha1.PhaseReviewRequired,
		advisorv1alpha1.PhaseInProgress, advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithErrors,
		advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.PhaseDrifted, advisorv1alpha1.PhaseFailed,
		advisorv1alpha1.PhasePrerequisiteFailed, advisorv1alpha1.PhaseIgnored, advisorv1alpha1.PhaseReverted,
	}
	allItemStates = []advisorv1alpha1.ItemState{
		advisorv1alpha1.ItemPending, advisorv1alpha1.ItemInProgress, advisorv1alpha1.ItemCompleted,
		advisorv1alpha1.ItemFailed, advisorv1alpha1.ItemSkipped,
	}
	conditionStatuses = []string{"True", "False", "Unknown"}
)

// Observe sets the gauges of one config from its status.
func Observe(vpc *advisorv1alpha1.VirtPlatformConfig) {
	name, profile := vpc.Name, string(vpc.Spec.Profile)
	for _, p := range allPhases {
		configPhase.WithLabelValues(name, profile, string(p)).Set(oneIf(vpc.Status.Phase == p))
	}
	for _, c := range vpc.Status.Conditions {
		for _, s := range conditionStatuses {
			configCondition.WithLabelValues(name, profile, c.Type, s).Set(oneIf(string(c.Status) == s))
		}
	}
	observeReason(vpc)
	counts := map[advisorv1alpha1.ItemState]int{}
	for _, it := range vpc.Status.Items {
		counts[it.State]++
	}
	for _, s := range allItemStates {
		planItems.WithLabelValues(name, profile, string(s)).Set(float64(counts[s]))
	}
	observeVMs(vpc)
}

// observeVMs sets the series of rolloutVMs of a config: the forecast of each pool whose
// VMs are known, and its actual once recorded.
func observeVMs(vpc *advisorv1alpha1.VirtPlatformConfig) {
	type series struct {
		pool, count, source string
		value               float64
	}
	var want []series
	for _, ro := range vpc.Status.Rollouts {
		if f := ro.VMs; f != nil && f.UnknownReason == "" {
			want = append(want, series{ro.Pool, "migrations", "forecast", float64(f.Migrations)},
				series{ro.Pool, "restarts", "forecast", float64(f.Restart)},
				series{ro.Pool, "blocked", "forecast", float64(f.Block)})
		}
		if a := ro.VMsActual; a != nil && a.UnknownReason == "" {
			want = append(want, series{ro.Pool, "migrations", "actual", float64(a.Migrations)},
				series{ro.Pool, "blocked", "actual", float64(a.Blocked)})
			if a.Restarts != nil {
				want = append(want, series{ro.Pool, "restarts", "actual", float64(*a.Restarts)})
			}
		}
	}
	vmsMu.Lock()
	defer vmsMu.Unlock()
	kept := map[[3]string]bool{}
	for _, w := range want {
		rolloutVMs.WithLabelValues(vpc.Name, w.pool, w.count, w.source).Set(w.value)
		kept[[3]string{w.pool, w.count, w.source}] = true
	}
	for _, old := range vmSeries[vpc.Name] {
		if !kept[old] {
			rolloutVMs.DeleteLabelValues(vpc.Name, old[0], old[1], old[2])
		}
	}
	vmSeries[vpc.Name] = slices.Collect(maps.Keys(kept))
}

var (
	// vmsMu guards vmSeries, the label values (pool, count, source) of each config's
	// rolloutVMs series.
	vmsMu    sync.Mutex
	vmSeries = map[string][][3]string{}
)

// Forget removes the series of a deleted config.
func Forget(name string) {
	reasonMu.Lock()
	defer reasonMu.Unlock()
	delete(reasonLabels, name)
	vmsMu.Lock()
	delete(vmSeries, name)
	vmsMu.Unlock()
	for _, v := range []*prometheus.GaugeVec{configPhase, configCondition, configReason, planItems, rolloutVMs} {
		v.DeletePartialMatch(prometheus.Labels{"name": name})
	}
}

var (
	// reasonMu guards reasonLabels and the replacement of a config's configReason series.
	reasonMu sync.Mutex
	// reasonLabels are the label values (name, profile, phase, reason) of each config's
	// configReason series.
	reasonLabels = map[string][]string{}
)

// observeReason keeps exactly one configReason series per config. A new label set is set
// before the old one is deleted, and an unchanged one is left alone: a scrape never misses
// the series of a config whose phase and reason did not change (a missing series would
// reset the `for` of the alerts on it). A config without a phase has no series.
func observeReason(vpc *advisorv1alpha1.VirtPlatformConfig) {
	reasonMu.Lock()
	defer reasonMu.Unlock()
	name := vpc.Name
	prev, had := reasonLabels[name]
	var cur []string
	if p := vpc.Status.Phase; p != "" {
		cur = []string{name, string(vpc.Spec.Profile), string(p), conditionReason(vpc)}
		configReason.WithLabelValues(cur...).Set(1)
	}
	if had && !slices.Equal(prev, cur) {
		configReason.DeleteLabelValues(prev...)
	}
	if cur == nil {
		delete(reasonLabels, name)
		return
	}
	reasonLabels[name] = cur
}

// conditionReason is the reason of the condition that describes the config's phase (the
// condition of the same name, Completed for CompletedWithErrors, UpgradeAvailable for
// CompletedWithUpgrade, Ready for Pending), as the controller sets the conditions; empty
// when the config does not have that condition.
func conditionReason(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	t := string(vpc.Status.Phase)
	switch vpc.Status.Phase {
	case advisorv1alpha1.PhaseCompletedWithErrors:
		t = advisorv1alpha1.ConditionCompleted
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		t = advisorv1alpha1.ConditionUpgradeAvailable
	case advisorv1alpha1.PhasePending:
		t = advisorv1alpha1.ConditionReady
	}
	for _, c := range vpc.Status.Conditions {
		if c.Type == t {
			return c.Reason
		}
	}
	return ""
}

// DriftDetected counts a config found drifted.
func DriftDetected() { driftDetected.Inc() }

// Applied counts a real apply by its result.
func Applied(success bool) {
	if success {
		applyTotal.WithLabelValues("success").Inc()
		return
	}
	applyTotal.WithLabelValues("failure").Inc()
}

// ItemSettled records the time from an item's apply until it became healthy or failed.
func ItemSettled(seconds float64) { applyDuration.Observe(seconds) }

// Throttled counts a drift correction held back by the rate limit.
func Throttled() { throttled.Inc() }

// PoolPaused records that the operator holds a MachineConfigPool paused, since the time it
// paused it. Give the time recorded with the pause, not the time of the call, so that an
// operator that restarts reports the pause as old as it is.
func PoolPaused(pool string, since time.Time) {
	poolPausedSince.WithLabelValues(pool).Set(float64(since.Unix()))
}

// PoolResumed removes the series of a MachineConfigPool the operator no longer holds paused.
func PoolResumed(pool string) { poolPausedSince.DeleteLabelValues(pool) }

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
