package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// printTables writes every run's figures, the medians per case and stage, the idle
// windows and the memory, then the reboot scenarios, the node-scale cases, the VM cases,
// and a summary of the medians and the budgets.
func printTables(out io.Writer, opts *options, res *results) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }

	if len(res.runs) > 0 {
		p("End-to-end figures of the manager: %d run(s) per profile case, each on a fresh control plane.\n", opts.runs)
	} else {
		p("End-to-end figures of the manager, each case on a fresh control plane.\n")
	}
	p("Pool simulator (test/poolsim): render delay %s (%s in the reboot scenarios), reboot %s per node; "+
		"idle window %s after Completed.\n", opts.renderDelay, opts.scenarioRenderDelay, opts.rebootTime, opts.idle)
	if len(res.runs) > 0 {
		printRuns(p, opts, res.runs)
		printIdle(p, opts, res.runs)
	}
	if len(res.scenarios) > 0 {
		printScenarios(p, opts, res.scenarios)
	}
	if len(res.nodeScale) > 0 {
		printNodeScale(p, opts, res.nodeScale)
	}
	if len(res.vmRollouts) > 0 {
		printVMRollouts(p, opts, res.vmRollouts)
	}
	if len(res.vmiMemory) > 0 {
		printVMIMemory(p, opts, res.vmiMemory)
	}
	printSummary(p, opts, res)
}

type printer func(format string, args ...any)

func printRuns(p printer, opts *options, runs []runResult) {
	p("\ncase\trun\tstage\ttime_s\trequests\twrites\tdryruns\t409s\n")
	for _, r := range runs {
		for _, s := range r.stages {
			p("%s\t%d\t%s\t%.3f\t%d\t%d\t%d\t%d\n",
				r.name, r.run, s.name, s.seconds, s.requests, s.writes, s.dryRuns, s.conflicts)
		}
	}

	p("\nMedians over the runs (requests count a watch once)\n\n")
	p("case\tstage\tmedian_s\truns_s\trequests\twrites\tdryruns\t409s\n")
	for _, pc := range opts.profiles {
		cr := runsOf(runs, pc.name)
		if len(cr) == 0 {
			continue
		}
		for i, s := range cr[0].stages {
			stage := func(f func(stageResult) float64) []float64 {
				var out []float64
				for _, r := range cr {
					out = append(out, f(r.stages[i]))
				}
				return out
			}
			secs := stage(func(s stageResult) float64 { return s.seconds })
			p("%s\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\n", pc.name, s.name, median(secs), join(secs, 3),
				num(median(stage(func(s stageResult) float64 { return float64(s.requests) }))),
				num(median(stage(func(s stageResult) float64 { return float64(s.writes) }))),
				num(median(stage(func(s stageResult) float64 { return float64(s.dryRuns) }))),
				num(median(stage(func(s stageResult) float64 { return float64(s.conflicts) }))))
		}
	}
}

// printIdle writes the manager's requests in the idle window of every run: the budget is
// no write and no request but its watches.
func printIdle(p printer, opts *options, runs []runResult) {
	p("\nIdle window of %s after Completed (budget: 0 writes, 0 requests other than watches)\n\n", opts.idle)
	p("case\trun\twrites\trequests_not_watch\twatches\twrites_after_1s\trequests_not_watch_after_1s\tbudget\twhat\n")
	for _, r := range runs {
		what := r.idleRequests
		if what == "" {
			what = "-"
		}
		p("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.name, r.run, r.idle.writes+r.idle.dryRuns,
			r.idle.requests-r.idle.watches, r.idle.watches, r.idleAfter1s.writes+r.idleAfter1s.dryRuns,
			r.idleAfter1s.requests-r.idleAfter1s.watches, verdict(idleWithinBudget(r)), what)
	}
}

func idleWithinBudget(r runResult) bool {
	return r.idle.writes+r.idle.dryRuns == 0 && r.idle.requests == r.idle.watches
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "EXCEEDED"
}

func printScenarios(p printer, opts *options, scs []scenarioResult) {
	p("\nReboots and waves: %d workers (maxUnavailable 1) and %d masters with Node Feature Discovery labels, "+
		"render delay %s; each scenario runs once, whatever -runs says\n\n", scenarioWorkers, scenarioMasters,
		opts.scenarioRenderDelay)
	p("scenario\tconfigs\tapprovals\tapprovals_within_s\tcompleted_after_s\t" +
		"reboots_per_worker_min\treboots_per_worker_max\treboots_per_master_min\treboots_per_master_max\t" +
		"worker_rollouts\tworker_waves\tmaster_rollouts\tmaster_waves\n")
	for _, s := range scs {
		p("%s\t%d\t%d\t%.2f\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.name, s.configs, s.approvals, s.spreadSeconds,
			s.seconds, s.workerRebootsMin, s.workerRebootsMax, s.masterRebootsMin, s.masterRebootsMax,
			s.workerRollouts, s.workerWaves, s.masterRollouts, s.masterWaves)
	}
}

// nodeBudgetKiB is the most memory the manager may take per worker Node.
const nodeBudgetKiB = 4.0

func printNodeScale(p printer, opts *options, ns []nodeScaleResult) {
	p("\nManager memory for a platform-baseline plan as worker Nodes grow "+
		"(each case runs once; RSS %s after ReviewRequired, heap in use after a garbage collection then)\n\n", opts.rssSettle)
	p("workers\tlabels_per_node\tlabel_and_annotation_bytes_per_node\tReviewRequired_s\t" +
		"peak_rss_mib\trss_after_mib\theap_inuse_mib\n")
	for _, n := range ns {
		p("%d\t%d\t%d\t%.2f\t%.1f\t%.1f\t%.1f\n", n.workers, n.labelsPerNode, n.metadataBytesPerNode, n.planSeconds,
			n.peakRSSMiB, n.rssAfterMiB, n.heapInuseMiB)
	}
	if len(ns) < 2 {
		return
	}
	first, last := ns[0], ns[len(ns)-1]
	nodes := float64(last.workers - first.workers)
	perNode := func(a, b float64) float64 { return (b - a) * 1024 / nodes }
	p("\nper worker Node, from %d to %d workers\tpeak_rss_kib\trss_after_kib\theap_inuse_kib\tbudget (< %.0f KiB)\n",
		first.workers, last.workers, nodeBudgetKiB)
	peak, after, heap := perNode(first.peakRSSMiB, last.peakRSSMiB), perNode(first.rssAfterMiB, last.rssAfterMiB),
		perNode(first.heapInuseMiB, last.heapInuseMiB)
	p("\t%.1f\t%.1f\t%.1f\t%s\n", peak, after, heap, verdict(peak < nodeBudgetKiB && after < nodeBudgetKiB))
}

// printSummary is the table make bench ends with: per case the medians of the stages'
// times, requests and writes, of the idle window and of the memory; the reboots of each
// scenario; the memory per worker Node.
func printSummary(p printer, opts *options, res *results) {
	p("\nSummary\n")
	if len(res.runs) > 0 {
		printCaseSummary(p, opts, res.runs)
	}
	if len(res.scenarios) > 0 {
		p("\nscenario (once)\tapprovals\treboots_per_worker\treboots_per_master\tworker_waves\tmaster_waves\t" +
			"reboots_per_worker_one_rollout_per_item\n")
		for _, s := range res.scenarios {
			p("%s\t%d\t%s\t%s\t%d\t%d\t%d\n", s.name, s.approvals, span(s.workerRebootsMin, s.workerRebootsMax),
				span(s.masterRebootsMin, s.masterRebootsMax), s.workerWaves, s.masterWaves, s.perItemWorkerReboots)
		}
	}
	if len(res.vmRollouts) > 0 {
		p("\nVM rollout (once)\tvms\tmigrations_forecast/actual\trestarts_forecast/actual\tforecast_equals_actual\t" +
			"vmsActual_asForecast\trollout_s\tpeak_rss_mib\n")
		for _, r := range res.vmRollouts {
			p("%s\t%d\t%d/%d\t%d/%d\t%s\t%s\t%.1f\t%.1f\n", r.name, r.vms, r.forecast.migrations, r.actual.migrations,
				r.forecast.restarts, r.actual.restarts, yesNo(r.equal()), recordedAsForecast(r.recorded),
				r.rolloutSeconds, r.peakRSSMiB)
		}
	}
	if len(res.nodeScale) > 0 {
		p("\nworkers (once)\tpeak_rss_mib\trss_after_mib\theap_inuse_mib\n")
		for _, n := range res.nodeScale {
			p("%d\t%.1f\t%.1f\t%.1f\n", n.workers, n.peakRSSMiB, n.rssAfterMiB, n.heapInuseMiB)
		}
	}
	printBudgets(p, res)
}

// printCaseSummary writes per case the medians of the stages' times, requests and writes,
// of the idle window and of the memory.
func printCaseSummary(p printer, opts *options, runs []runResult) {
	p("\ncase (medians of %d run(s); idle requests exclude watches)\tReviewRequired_s\tCompleted_s\t"+
		"plan_requests\tplan_writes\tapply_requests\tapply_writes\tidle_requests\tidle_writes\t"+
		"peak_rss_mib\trss_after_mib\n", opts.runs)
	for _, pc := range opts.profiles {
		cr := runsOf(runs, pc.name)
		if len(cr) == 0 {
			continue
		}
		m := func(f func(runResult) float64) float64 {
			var v []float64
			for _, r := range cr {
				v = append(v, f(r))
			}
			return median(v)
		}
		stage := func(name string, f func(stageResult) float64) float64 {
			return m(func(r runResult) float64 {
				for _, s := range r.stages {
					if s.name == name {
						return f(s)
					}
				}
				return 0
			})
		}
		secs := func(s stageResult) float64 { return s.seconds }
		reqs := func(s stageResult) float64 { return float64(s.requests) }
		writes := func(s stageResult) float64 { return float64(s.writes) }
		p("%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\n", pc.name,
			stage(stagePlan, secs), stage(stageApply, secs),
			num(stage(stagePlan, reqs)), num(stage(stagePlan, writes)),
			num(stage(stageApply, reqs)), num(stage(stageApply, writes)),
			num(m(func(r runResult) float64 { return float64(r.idle.requests - r.idle.watches) })),
			num(m(func(r runResult) float64 { return float64(r.idle.writes + r.idle.dryRuns) })),
			m(func(r runResult) float64 { return r.peakRSSMiB }), m(func(r runResult) float64 { return r.rssAfterMiB }))
	}
}

// printBudgets says whether the idle windows and the memory per worker Node kept to their
// budgets.
func printBudgets(p printer, res *results) {
	var budgets []string
	idleOK := true
	for _, r := range res.runs {
		idleOK = idleOK && idleWithinBudget(r)
	}
	if len(res.runs) > 0 {
		budgets = append(budgets, "idle window: 0 writes, 0 requests other than watches: "+verdict(idleOK))
	}
	if n := len(res.nodeScale); n >= 2 {
		first, last := res.nodeScale[0], res.nodeScale[n-1]
		nodes := float64(last.workers - first.workers)
		peak := (last.peakRSSMiB - first.peakRSSMiB) * 1024 / nodes
		after := (last.rssAfterMiB - first.rssAfterMiB) * 1024 / nodes
		budgets = append(budgets, fmt.Sprintf("memory per worker Node < %.0f KiB: peak %.1f KiB, after %.1f KiB: %s",
			nodeBudgetKiB, peak, after, verdict(peak < nodeBudgetKiB && after < nodeBudgetKiB)))
	}
	if len(res.vmRollouts) > 0 {
		equal := true
		for _, r := range res.vmRollouts {
			equal = equal && r.equal()
		}
		budgets = append(budgets, "VM forecast equals what the rollouts did: "+verdict(equal))
	}
	if n := len(res.vmiMemory); n >= 2 {
		without, with := res.vmiMemory[0], res.vmiMemory[n-1]
		peak := perVMIKiB(without.peakRSSMiB, with.peakRSSMiB, with.vmis)
		after := perVMIKiB(without.rssAfterMiB, with.rssAfterMiB, with.vmis)
		budgets = append(budgets, fmt.Sprintf(
			"memory per VirtualMachineInstance < %.0f KiB: peak %.2f KiB, after %.2f KiB: %s",
			vmiBudgetKiB, peak, after, verdict(peak < vmiBudgetKiB && after < vmiBudgetKiB)))
	}
	if len(budgets) > 0 {
		p("\nbudget\n")
		for _, b := range budgets {
			p("%s\n", b)
		}
	}
}

// printVMRollouts sets the VM forecast of each rollout case beside what the pool simulator
// did, and beside what the rollout's status recorded; every difference is listed.
func printVMRollouts(p printer, opts *options, rs []vmRolloutResult) {
	p("\nVMs: forecast (status.rollouts[].vms at ReviewRequired) against actual (the pool simulator's migrations and "+
		"shut-downs) of a load-aware-rebalancing rollout of the workers; cluster eviction strategy LiveMigrate, "+
		"a few VMs with None; live migration %s, at most %d at once per node; reboot %s; each case runs once\n\n",
		opts.migrationTime, vmMigrationsPerNode, opts.rebootTime)
	p("case\tvms\tmaxUnavailable\twaves\tmigrations_forecast\tmigrations_actual\t" +
		"mean_per_migrated_vm_forecast\tmean_per_migrated_vm_actual\tmax_per_vm_forecast\tmax_per_vm_actual\t" +
		"restarts_forecast\trestarts_actual\tequal\trollout_s\tpeak_rss_mib\n")
	for _, r := range rs {
		p("%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%s\t%.1f\t%.1f\n", r.name, r.vms, r.maxUnavailable,
			r.waves, r.forecast.migrations, r.actual.migrations, r.forecast.meanPerVM(), r.actual.meanPerVM(),
			r.forecast.maxPerVM, r.actual.maxPerVM, r.forecast.restarts, r.actual.restarts, yesNo(r.equal()),
			r.rolloutSeconds, r.peakRSSMiB)
	}
	p("\ncase\tforecast\tmigrated_vms_forecast/actual\tvms_per_migration_count_actual\tshutdowns_actual\t" +
		"blocked_forecast/actual\tmemory_to_migrate_forecast/actual_gib\tapprovals\n")
	for _, r := range rs {
		p("%s\t%s\t%d/%d\t%s\t%d\t%d/%d\t%s/%s\t%d\n", r.name, r.forecastSummary, r.forecast.liveMigrate,
			r.actual.liveMigrate, r.perVM, r.shutdowns, r.forecast.blocked, r.actual.blocked,
			gib(r.forecast.memoryToMigrate), gib(r.actual.memoryToMigrate), r.approvals)
	}
	p("\ncase\tvmsActual: migrations\tmigratedVMs\tmaxPerVM\trestarts\tblocked\tmovedMore\tduration\tasForecast\t" +
		"equals_simulator\n")
	for _, r := range rs {
		a := r.recorded
		if a == nil {
			p("%s\tabsent\t-\t-\t-\t-\t-\t-\t-\t-\n", r.name)
			continue
		}
		restarts, duration, moved := "-", "-", "0"
		if a.Restarts != nil {
			restarts = strconv.Itoa(int(*a.Restarts))
		}
		if a.Duration != nil {
			duration = a.Duration.Duration.String()
		}
		if a.MovedMore != nil {
			moved = strconv.Itoa(len(a.MovedMore.Names) + int(a.MovedMore.More))
		}
		p("%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", r.name, a.Migrations, a.MigratedVMs, a.MaxPerVM, restarts,
			a.Blocked, moved, duration, yesNo(a.AsForecast), yesNo(len(r.recordedDifferences) == 0))
	}
	for _, r := range rs {
		if !r.equal() {
			p("\n%s: THE FORECAST DIFFERS FROM WHAT THE ROLLOUT DID: %s\n", r.name, strings.Join(r.differences, "; "))
		}
		if len(r.recordedDifferences) > 0 {
			p("\n%s: status.rollouts[].vmsActual differs from the simulator's count: %s\n", r.name,
				strings.Join(r.recordedDifferences, "; "))
		}
		if r.recorded != nil && r.recorded.Summary != "" {
			p("%s: vmsActual summary: %s\n", r.name, r.recorded.Summary)
		}
	}
}

// vmiBudgetKiB is the most memory the manager may take per VirtualMachineInstance.
const vmiBudgetKiB = 2.0

// printVMIMemory writes the manager's memory for a plan draining workers without and with
// VirtualMachineInstances, and the difference per instance.
func printVMIMemory(p printer, opts *options, rs []vmiMemoryResult) {
	p("\nManager memory with many VirtualMachineInstances: a load-aware-rebalancing plan draining the workers, "+
		"whose VM forecast reads every instance (RSS %s after ReviewRequired, "+
		"heap in use after a garbage collection then)\n\n",
		opts.rssSettle)
	p("vmis\tworkers\tcreated_s\tforecast_vms\tReviewRequired_s\tpeak_rss_mib\trss_after_mib\theap_inuse_mib\n")
	for _, r := range rs {
		p("%d\t%d\t%.1f\t%d\t%.2f\t%.1f\t%.1f\t%.1f\n", r.vmis, r.workers, r.createSeconds, r.forecastVMs,
			r.planSeconds, r.peakRSSMiB, r.rssAfterMiB, r.heapInuseMiB)
	}
	if len(rs) < 2 {
		return
	}
	without, with := rs[0], rs[len(rs)-1]
	peak := perVMIKiB(without.peakRSSMiB, with.peakRSSMiB, with.vmis)
	after := perVMIKiB(without.rssAfterMiB, with.rssAfterMiB, with.vmis)
	heap := perVMIKiB(without.heapInuseMiB, with.heapInuseMiB, with.vmis)
	p("\nper VirtualMachineInstance, %d against %d\tpeak_rss_kib\trss_after_kib\theap_inuse_kib\tbudget (< %.0f KiB)\n",
		with.vmis, without.vmis, vmiBudgetKiB)
	p("\t%.2f\t%.2f\t%.2f\t%s\n", peak, after, heap, verdict(peak < vmiBudgetKiB && after < vmiBudgetKiB))
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// recordedAsForecast is vmsActual.asForecast, or "absent".
func recordedAsForecast(a *advisorv1alpha1.VMActual) string {
	if a == nil {
		return "absent"
	}
	return yesNo(a.AsForecast)
}

// gib formats bytes in GiB.
func gib(bytes int64) string { return strconv.FormatFloat(float64(bytes)/(1<<30), 'f', -1, 64) }

// span is "low" or "low-high".
func span(low, high int) string {
	if low == high {
		return strconv.Itoa(low)
	}
	return fmt.Sprintf("%d-%d", low, high)
}

func runsOf(results []runResult, name string) []runResult {
	var out []runResult
	for _, r := range results {
		if r.name == name {
			out = append(out, r)
		}
	}
	return out
}

// median of the values: the middle one, or the mean of the two middle ones.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// join formats the values with the given decimals, separated by spaces.
func join(values []float64, decimals int) string {
	parts := make([]string, 0, len(values))
	for _, v := range values {
		parts = append(parts, strconv.FormatFloat(v, 'f', decimals, 64))
	}
	return strings.Join(parts, " ")
}

// num formats a count: a whole number, or .5 for the median of an even number of runs.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
