// Package schedule reads maintenance windows: a cron schedule of start times, a duration and a
// time zone, and says whether a window is open at a given time and when the next one starts.
//
// The schedule is the five-field cron syntax of Kubernetes CronJobs (minute, hour,
// day-of-month, month, day-of-week, with ranges, lists, steps and names such as SAT, or a
// macro such as @daily), parsed by github.com/robfig/cron/v3, the parser CronJobs use.
//
// Start times are matched against the wall clock of the time zone, so a window starts once per
// matching day, daylight saving time or not: a start time that the clocks skip when they go
// forward starts the window when they do (02:30 in Europe/Berlin on the last Sunday of March
// starts at 03:00 CEST), and a start time that the clocks repeat when they go back starts the
// window at its first occurrence. The duration is elapsed time: a 4h window that spans a
// change of the clocks ends at a wall-clock time an hour earlier or later than on other days.
//
// The time zone is loaded from the system's zoneinfo or from the database embedded by
// time/tzdata, which the manager's main package imports so that the operator does not depend on
// its image shipping one.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxDuration is the longest window: a week. A longer one would overlap the next start of a
// weekly schedule and never close; an always-open window is no window at all.
const MaxDuration = 7 * 24 * time.Hour

// Window is a maintenance window: it opens at each start time of Schedule in TimeZone and
// stays open for Duration. Make one with Parse.
type Window struct {
	// Schedule is the five-field cron schedule of the start times, e.g. "0 2 * * SAT".
	Schedule string
	// Duration is how long each window stays open.
	Duration time.Duration
	// TimeZone is the IANA name of the zone the schedule is read in; empty means UTC.
	TimeZone string

	// spec and loc are Schedule and TimeZone parsed.
	spec cron.Schedule
	loc  *time.Location
}

// Parse checks a maintenance window and returns it. Its errors say what is wrong and what is
// expected, to be shown to whoever wrote the window.
func Parse(schedule string, d time.Duration, tz string) (Window, error) {
	spec, err := parseSchedule(schedule)
	if err != nil {
		return Window{}, err
	}
	switch {
	case d <= 0:
		return Window{}, fmt.Errorf("duration must be positive, such as 4h, not %s", d)
	case d > MaxDuration:
		return Window{}, fmt.Errorf("duration %s is longer than a week (168h); to allow rollouts at any time, "+
			"set no maintenance window", d)
	}
	loc, err := loadZone(tz)
	if err != nil {
		return Window{}, err
	}
	return Window{Schedule: schedule, Duration: d, TimeZone: tz, spec: spec, loc: loc}, nil
}

// scheduleFormat is how a schedule is written, for error messages.
const scheduleFormat = `five fields "minute hour day-of-month month day-of-week" (day-of-week 0-6 or SUN-SAT) ` +
	`such as "0 2 * * SAT" (Saturdays at 02:00) or "0 22 * * MON-FRI", or a macro such as @daily or @weekly`

// neverBefore is the time from which Parse looks for a first start: a schedule with none in
// the five years after it (such as 30 February) never starts.
var neverBefore = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

func parseSchedule(schedule string) (cron.Schedule, error) {
	s := strings.TrimSpace(schedule)
	switch {
	case s == "":
		return nil, fmt.Errorf("schedule is empty: give %s", scheduleFormat)
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return nil, fmt.Errorf("schedule %q names a time zone: give it in the time zone field instead, "+
			"and the schedule as %s", schedule, scheduleFormat)
	case strings.HasPrefix(s, "@every"):
		return nil, fmt.Errorf("schedule %q is an interval, not times of the day: give %s", schedule, scheduleFormat)
	}
	spec, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a cron schedule (%v): give %s", schedule, err, scheduleFormat)
	}
	if spec.Next(neverBefore).IsZero() {
		return nil, fmt.Errorf("schedule %q never starts: no date has that day of the month in that month", schedule)
	}
	return spec, nil
}

func loadZone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if tz == "Local" {
		// time.LoadLocation("Local") is the operator's own zone, which the admin does not choose.
		return nil, errors.New(`time zone "Local" is not an IANA name: give one such as "Europe/Berlin" or ` +
			`"America/New_York", or leave it empty for UTC`)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: give an IANA name such as \"Europe/Berlin\" or "+
			"\"America/New_York\", or leave it empty for UTC", tz)
	}
	return loc, nil
}

// parsed is the window's schedule and zone; a Window not made by Parse parses them now, and
// one that does not parse never opens.
func (w Window) parsed() (cron.Schedule, *time.Location, bool) {
	if w.spec != nil && w.loc != nil {
		return w.spec, w.loc, true
	}
	p, err := Parse(w.Schedule, w.Duration, w.TimeZone)
	if err != nil {
		return nil, nil, false
	}
	return p.spec, p.loc, true
}

// Open says whether now is inside a window, that is whether a window started at most Duration
// before now, and when the latest such window closes, in the window's time zone. A window
// starting before that one closes (overlapping windows) keeps it open past closes: Open at
// closes says so.
func (w Window) Open(now time.Time) (open bool, closes time.Time) {
	spec, loc, ok := w.parsed()
	if !ok {
		return false, time.Time{}
	}
	// Cron only finds the start after a time: walk the starts after now-Duration up to now.
	// A start time on the wall clock at or before that of now-Duration starts no later than
	// now-Duration itself, so no window open at now is missed.
	var latest time.Time
	from := now.Add(-w.Duration)
	for wall := wallClock(from, loc); ; {
		wall = spec.Next(wall)
		if wall.IsZero() {
			break
		}
		start := instant(wall, loc)
		if start.After(now) {
			break
		}
		if start.After(from) {
			latest = start
		}
	}
	if latest.IsZero() {
		return false, time.Time{}
	}
	return true, latest.Add(w.Duration).In(loc)
}

// Next is the start of the first window after now, in the window's time zone; the zero time
// when the schedule has no start in the five years after now (such as 29 February around 2100).
func (w Window) Next(now time.Time) time.Time {
	spec, loc, ok := w.parsed()
	if !ok {
		return time.Time{}
	}
	for wall := wallClock(now, loc); ; {
		wall = spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		// A start in the hour the clocks repeat can be before now although its wall-clock
		// time is after now's.
		if start := instant(wall, loc); start.After(now) {
			return start
		}
	}
}

// wallClock is the wall-clock time of t in loc, as a UTC time: cron then steps through wall
// clock times, each exactly once, free of the zone's changes of offset.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant is the first time whose wall clock in loc is wall (a UTC time), or, for a wall-clock
// time the clocks skip, the time they skip it at.
func instant(wall time.Time, loc *time.Location) time.Time {
	// A wall-clock time has at most the offsets in effect a day before and a day after it.
	_, before := wall.Add(-24 * time.Hour).In(loc).Zone()
	_, after := wall.Add(24 * time.Hour).In(loc).Zone()
	var first time.Time
	for _, offset := range []int{before, after} {
		t := wall.Add(-time.Duration(offset) * time.Second).In(loc)
		if wallClock(t, loc).Equal(wall) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if !first.IsZero() {
		return first
	}
	// Skipped: read with the later (greater) offset, wall is a time before the clocks went
	// forward; the period of that offset ends when they did.
	_, end := wall.Add(-time.Duration(max(before, after)) * time.Second).In(loc).ZoneBounds()
	return end.In(loc)
}
