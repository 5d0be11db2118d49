package controller

import (
	"time"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/schedule"
)

// windowOpen tells whether now is inside a window of w, and when the next one starts.
func windowOpen(w *advisorv1alpha1.MaintenanceWindow, now time.Time) (bool, time.Time, error) {
	win, err := schedule.Parse(w.Schedule, w.Duration.Duration, w.TimeZone)
	if err != nil {
		return false, time.Time{}, err
	}
	if open, _ := win.Open(now); open {
		return true, now, nil
	}
	return false, win.Next(now), nil
}

func untilText(now, t time.Time) string { return schedule.Until(now, t) }
