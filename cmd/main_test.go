package main

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestLeaseDurationsAreValidated(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		lease leaseDurations
		want  string // "" means valid
	}{
		{leaseDurations{15 * s, 10 * s, 2 * s}, ""},
		{leaseDurations{4 * s, 3 * s, s / 2}, ""},
		{leaseDurations{5 * s, 10 * s, 2 * s}, "--leader-elect-lease-duration (5s) must be longer than --leader-elect-renew-deadline (10s)"},
		{leaseDurations{15 * s, 10 * s, 10 * s}, "--leader-elect-renew-deadline (10s) must be longer than --leader-elect-retry-period (10s)"},
		{leaseDurations{15 * s, 10 * s, 0}, "--leader-elect-retry-period must be positive, not 0s"},
	} {
		err := tc.lease.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: refused: %v", tc.lease, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.lease, err, tc.want)
		}
	}
}

func TestTheGarbageCollectionTargetIs50PercentUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // the test starts from Go's default, and restores what it found
	t.Setenv("GOGC", "200")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the manager must leave the target to it: got %d", got)
	}
	if err := os.Unsetenv("GOGC"); err != nil { // restored by t.Setenv
		t.Fatal(err)
	}
	setGCPercent()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC the target must be %d, got %d", gcPercent, got)
	}
}
