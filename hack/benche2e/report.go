package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// printTables writes every run's figures, then the medians per profile and stage, then the
// manager's peak RSS.
func printTables(out io.Writer, opts *options, results []runResult) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()

	_, _ = fmt.Fprintf(tw, "End-to-end latency of the manager: %d run(s) per profile, each on a fresh control plane\n\n",
		opts.runs)
	_, _ = fmt.Fprintln(tw, "profile\trun\tstage\ttime_s\trequests\twrites\tdryruns\t409s")
	for _, r := range results {
		for _, s := range r.stages {
			_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%d\t%d\t%d\t%d\n",
				r.profile, r.run, s.name, s.seconds, s.requests, s.writes, s.dryRuns, s.conflicts)
		}
	}

	_, _ = fmt.Fprintln(tw, "\nprofile\tstage\tmedian_s\truns_s\trequests\twrites\tdryruns\t409s")
	for _, pc := range opts.profiles {
		runs := runsOf(results, pc.name)
		if len(runs) == 0 {
			continue
		}
		for i, s := range runs[0].stages {
			var secs, reqs, writes, dry, conflicts []float64
			for _, r := range runs {
				st := r.stages[i]
				secs = append(secs, st.seconds)
				reqs = append(reqs, float64(st.requests))
				writes = append(writes, float64(st.writes))
				dry = append(dry, float64(st.dryRuns))
				conflicts = append(conflicts, float64(st.conflicts))
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\n", pc.name, s.name, median(secs), join(secs, 3),
				num(median(reqs)), num(median(writes)), num(median(dry)), num(median(conflicts)))
		}
	}

	printSpent(tw, opts, results)

	_, _ = fmt.Fprintln(tw, "\nprofile\tpeak_rss_mib (median)\truns_mib")
	for _, pc := range opts.profiles {
		var rss []float64
		for _, r := range runsOf(results, pc.name) {
			rss = append(rss, r.peakRSSMiB)
		}
		if len(rss) > 0 {
			_, _ = fmt.Fprintf(tw, "%s\t%.1f\t%s\n", pc.name, median(rss), join(rss, 1))
		}
	}
}

func runsOf(results []runResult, profile string) []runResult {
	var out []runResult
	for _, r := range results {
		if r.profile == profile {
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

// printSpent writes where the time of the plan and apply stages went, from the API
// server's audit log: each moment counts for the first activity with a request in flight
// (status writes, target writes, dry runs, reads, the benchmark's own requests, Events),
// or for no_request. Medians over the runs, in milliseconds; they need not add up.
func printSpent(tw io.Writer, opts *options, results []runResult) {
	_, _ = fmt.Fprint(tw, "\nWhere the time of a stage went, by the API request in flight (median ms)\n\n")
	_, _ = fmt.Fprint(tw, "profile\tstage")
	for _, name := range activityNames {
		_, _ = fmt.Fprintf(tw, "\t%s", name)
	}
	_, _ = fmt.Fprintln(tw)
	for _, pc := range opts.profiles {
		runs := runsOf(results, pc.name)
		if len(runs) == 0 {
			continue
		}
		for i, s := range runs[0].stages {
			if s.name == stageStartup {
				continue
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s", pc.name, s.name)
			for a := range activities {
				var ms []float64
				for _, r := range runs {
					ms = append(ms, float64(r.stages[i].spent[a].Microseconds())/1000)
				}
				_, _ = fmt.Fprintf(tw, "\t%.1f", median(ms))
			}
			_, _ = fmt.Fprintln(tw)
		}
	}
}
