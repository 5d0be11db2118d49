package main

import (
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
