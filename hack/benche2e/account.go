package main

import (
	"sort"
	"time"
)

// activity is what a moment of a stage was spent on, judged from the requests in flight
// at the API server then. When several are in flight, the first of these classes counts.
type activity int

const (
	// statusWrites: the manager writes the status of the VirtPlatformConfig.
	statusWrites activity = iota
	// targetWrites: the manager applies to a target (or writes any other object).
	targetWrites
	// dryRuns: the manager's server-side apply dry-runs.
	dryRuns
	// reads: the manager's GETs and LISTs (watches are left out).
	reads
	// benchmark: the benchmark's own requests: the sample, the approval, and the simulated
	// Machine Config Operator rolling out to the pool.
	benchmark
	// events: the manager records Events (sent in the background: the manager waits for
	// none of them).
	events
	// idle: no request in flight: the manager computing, a watch event on its way, or the
	// manager waiting for the pool.
	idle
	activities
)

var activityNames = [activities]string{
	"status_writes", "target_writes", "dry_runs", "reads", "benchmark", "events", "no_request",
}

// classify is the activity of one request; ok is false for requests that span the stage
// rather than take part in it (watches).
func classify(r request) (activity, bool) {
	switch {
	case r.verb == "watch":
		return 0, false
	case !r.operator:
		return benchmark, true
	case r.resource == "events":
		return events, true
	case writeVerbs[r.verb] && r.dryRun:
		return dryRuns, true
	case writeVerbs[r.verb] && r.resource == "virtplatformconfigs" && r.subresource == "status":
		return statusWrites, true
	case writeVerbs[r.verb]:
		return targetWrites, true
	}
	return reads, true
}

// account splits [from, to) among the activities: each moment goes to the first activity
// (in the order above) with a request in flight then, or to idle.
func account(reqs []request, from, to time.Time) [activities]time.Duration {
	type edge struct {
		at    time.Time
		class activity
		delta int
	}
	var edges []edge
	for _, r := range reqs {
		class, ok := classify(r)
		if !ok || r.done.IsZero() {
			continue
		}
		start, end := r.at, r.done
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if !start.Before(end) {
			continue
		}
		edges = append(edges, edge{start, class, 1}, edge{end, class, -1})
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].at.Before(edges[j].at) })
	var out [activities]time.Duration
	var inFlight [activities]int
	at := from
	current := func() activity {
		for a := range idle {
			if inFlight[a] > 0 {
				return a
			}
		}
		return idle
	}
	for _, e := range edges {
		out[current()] += e.at.Sub(at)
		at = e.at
		inFlight[e.class] += e.delta
	}
	out[current()] += to.Sub(at)
	return out
}
