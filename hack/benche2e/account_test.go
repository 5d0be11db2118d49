package main

import (
	"testing"
	"time"
)

func TestAccountGivesEachMomentToTheFirstActivityInFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	reqs := []request{
		// The approval, 0-10 ms; an Event of the plan stage in flight meanwhile.
		{at: ms(0), done: ms(10), verb: "patch", resource: "virtplatformconfigs"},
		{operator: true, at: ms(2), done: ms(12), verb: "create", resource: "events"},
		// A read, then a status write overlapping it, then an apply.
		{operator: true, at: ms(15), done: ms(20), verb: "get", resource: "kubedeschedulers"},
		{operator: true, at: ms(18), done: ms(30), verb: "patch", resource: "virtplatformconfigs", subresource: "status"},
		{operator: true, at: ms(30), done: ms(35), verb: "patch", resource: "kubedeschedulers"},
		{operator: true, at: ms(36), done: ms(38), verb: "patch", resource: "kubedeschedulers", dryRun: true},
		// A watch spans the stage and takes no part in it; a request outside is cut off.
		{operator: true, at: ms(-100), done: ms(100), verb: "watch", resource: "machineconfigs"},
		{operator: true, at: ms(39), done: ms(60), verb: "list", resource: "machineconfigpools"},
	}
	got := account(reqs, ms(0), ms(40))
	want := map[activity]time.Duration{
		benchmark:    10 * time.Millisecond,
		events:       2 * time.Millisecond,
		reads:        3*time.Millisecond + time.Millisecond, // 15-18, 39-40
		statusWrites: 12 * time.Millisecond,
		targetWrites: 5 * time.Millisecond,
		dryRuns:      2 * time.Millisecond,
		idle:         3*time.Millisecond + time.Millisecond + time.Millisecond, // 12-15, 35-36, 38-39
	}
	var sum time.Duration
	for a := range activities {
		if got[a] != want[a] {
			t.Errorf("%s: %v, want %v", activityNames[a], got[a], want[a])
		}
		sum += got[a]
	}
	if sum != 40*time.Millisecond {
		t.Errorf("the activities add up to %v, want the whole stage, 40ms", sum)
	}
}
