package schedule

import (
	"strings"
	"testing"
	"time"

	// The tests read the zones from the embedded database, as the manager can, whatever the
	// host has installed.
	_ "time/tzdata"
)

const (
	weekdayNights = "0 22 * * MON-FRI"
	berlin        = "Europe/Berlin"
	newYork       = "America/New_York"
)

// at parses an RFC 3339 time; the offset says which of a repeated wall-clock time is meant.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustParse(t *testing.T, schedule string, d time.Duration, tz string) Window {
	t.Helper()
	w, err := Parse(schedule, d, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %s, %q): %v", schedule, d, tz, err)
	}
	return w
}

func TestOpenIsTrueOnlyWithinDurationOfAStartAndSaysWhenTheWindowCloses(t *testing.T) {
	for _, c := range []struct {
		name     string
		schedule string
		duration time.Duration
		tz       string
		now      string
		closes   string // empty: closed
	}{
		// Weekday nights 22:00 for 4h: the window crosses midnight.
		{"before a weekday night's window", weekdayNights, 4 * time.Hour, "", "2026-11-25T21:59:59Z", ""},
		{"at the start of a weekday night's window", weekdayNights, 4 * time.Hour, "", "2026-11-25T22:00:00Z", "2026-11-26T02:00:00Z"},
		{"at 23:30 in a weekday night's window", weekdayNights, 4 * time.Hour, "", "2026-11-25T23:30:00Z", "2026-11-26T02:00:00Z"},
		{"at 01:59 the next day, in the window started the day before", weekdayNights, 4 * time.Hour, "", "2026-11-26T01:59:59Z", "2026-11-26T02:00:00Z"},
		{"at 02:00 the next day, when the window closes", weekdayNights, 4 * time.Hour, "", "2026-11-26T02:00:00Z", ""},
		{"on Saturday at 01:00, in Friday night's window", weekdayNights, 4 * time.Hour, "", "2026-11-28T01:00:00Z", "2026-11-28T02:00:00Z"},
		{"on Saturday at 23:30: no window on Saturdays", weekdayNights, 4 * time.Hour, "", "2026-11-28T23:30:00Z", ""},
		{"on Sunday at 01:00: no window started on Saturday", weekdayNights, 4 * time.Hour, "", "2026-11-29T01:00:00Z", ""},
		{"in the zone of the window, not of now", weekdayNights, 4 * time.Hour, berlin, "2026-11-25T21:30:00Z", "2026-11-26T02:00:00+01:00"},

		// A Saturday window seen on Sunday.
		{"on Sunday, in the Saturday night window", "0 22 * * SAT", 6 * time.Hour, berlin, "2026-11-29T03:00:00+01:00", "2026-11-29T04:00:00+01:00"},
		{"on Sunday, after the Saturday window", "0 2 * * SAT", 4 * time.Hour, berlin, "2026-11-29T03:00:00+01:00", ""},
		{"on Saturday, in the Saturday window", "0 2 * * 6", 4 * time.Hour, berlin, "2026-11-28T05:59:00+01:00", "2026-11-28T06:00:00+01:00"},

		// Macros.
		{"@daily, 1h after midnight", "@daily", 2 * time.Hour, "", "2026-11-25T01:00:00Z", "2026-11-25T02:00:00Z"},
		{"@daily, 2h after midnight", "@daily", 2 * time.Hour, "", "2026-11-25T02:00:00Z", ""},
		{"@weekly, on Sunday", "@weekly", 3 * time.Hour, berlin, "2026-11-29T02:59:00+01:00", "2026-11-29T03:00:00+01:00"},
		{"@weekly, on Monday", "@weekly", 3 * time.Hour, berlin, "2026-11-30T00:30:00+01:00", ""},

		// Overlapping windows: the latest start counts.
		{"hourly starts for 90m, 30m past one", "0 * * * *", 90 * time.Minute, "", "2026-11-25T10:30:00Z", "2026-11-25T11:30:00Z"},

		// A week-long window opens again as it closes.
		{"a week-long window, a minute before it starts again", "0 2 * * SAT", MaxDuration, "", "2026-11-28T01:59:00Z", "2026-11-28T02:00:00Z"},

		// Europe/Berlin, 29 March 2026: the clocks go from 02:00 CET to 03:00 CEST.
		{"Berlin spring forward: a 02:00 start begins at 03:00 CEST", "0 2 * * SUN", 4 * time.Hour, berlin, "2026-03-29T03:00:00+02:00", "2026-03-29T07:00:00+02:00"},
		{"Berlin spring forward: a minute before the clocks change", "0 2 * * SUN", 4 * time.Hour, berlin, "2026-03-29T01:59:00+01:00", ""},
		{"Berlin spring forward: a 02:30 start begins at 03:00 CEST", "30 2 * * *", time.Hour, berlin, "2026-03-29T03:59:00+02:00", "2026-03-29T04:00:00+02:00"},
		{"Berlin spring forward: 4h from 01:00 CET end at 06:00 CEST", "0 1 * * *", 4 * time.Hour, berlin, "2026-03-29T05:30:00+02:00", "2026-03-29T06:00:00+02:00"},
		{"Berlin spring forward: the day after, 02:30 is 02:30 again", "30 2 * * *", time.Hour, berlin, "2026-03-30T02:30:00+02:00", "2026-03-30T03:30:00+02:00"},

		// Europe/Berlin, 25 October 2026: the clocks go back from 03:00 CEST to 02:00 CET.
		{"Berlin fall back: 02:30 CEST starts the window", "30 2 * * *", time.Hour, berlin, "2026-10-25T02:45:00+02:00", "2026-10-25T02:30:00+01:00"},
		{"Berlin fall back: the repeated 02:30 CET starts no second window", "30 2 * * *", 30 * time.Minute, berlin, "2026-10-25T02:45:00+01:00", ""},
		{"Berlin fall back: 4h from 00:00 CEST end at 03:00 CET", "@daily", 4 * time.Hour, berlin, "2026-10-25T02:59:00+01:00", "2026-10-25T03:00:00+01:00"},
		{"Berlin fall back: 4h from 00:00 CEST are over at 03:00 CET", "@daily", 4 * time.Hour, berlin, "2026-10-25T03:00:00+01:00", ""},

		// America/New_York, 8 March 2026: the clocks go from 02:00 EST to 03:00 EDT.
		{"New York spring forward: a 02:00 start begins at 03:00 EDT", "0 2 * * SUN", 3 * time.Hour, newYork, "2026-03-08T03:00:00-04:00", "2026-03-08T06:00:00-04:00"},
		{"New York spring forward: 3h from 00:00 EST end at 04:00 EDT", "0 0 * * *", 3 * time.Hour, newYork, "2026-03-08T03:59:00-04:00", "2026-03-08T04:00:00-04:00"},

		// America/New_York, 1 November 2026: the clocks go back from 02:00 EDT to 01:00 EST.
		{"New York fall back: 01:30 EDT starts the window", "30 1 * * *", time.Hour, newYork, "2026-11-01T01:45:00-04:00", "2026-11-01T01:30:00-05:00"},
		{"New York fall back: the window is open through the repeated hour", "30 1 * * *", time.Hour, newYork, "2026-11-01T01:15:00-05:00", "2026-11-01T01:30:00-05:00"},
		{"New York fall back: the repeated 01:30 EST starts no second window", "30 1 * * *", time.Hour, newYork, "2026-11-01T01:45:00-05:00", ""},
		{"New York fall back: Saturday 23:00 for 4h ends at 02:00 EST", "0 23 * * SAT", 4 * time.Hour, newYork, "2026-11-01T01:59:00-05:00", "2026-11-01T02:00:00-05:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := mustParse(t, c.schedule, c.duration, c.tz)
			open, closes := w.Open(at(t, c.now))
			if open != (c.closes != "") {
				t.Fatalf("Open(%s) = %t, want %t", c.now, open, !open)
			}
			if !open {
				if !closes.IsZero() {
					t.Errorf("closed, but closes is %s", closes.Format(time.RFC3339))
				}
				return
			}
			if got := closes.Format(time.RFC3339); got != c.closes {
				t.Errorf("closes %s, want %s", got, c.closes)
			}
		})
	}
}

func TestNextIsTheFirstStartAfterNowInTheWindowsZone(t *testing.T) {
	for _, c := range []struct {
		name     string
		schedule string
		tz       string
		now      string
		next     string
	}{
		{"later the same day", weekdayNights, "", "2026-11-25T12:00:00Z", "2026-11-25T22:00:00Z"},
		{"at a start, the following one", weekdayNights, "", "2026-11-25T22:00:00Z", "2026-11-26T22:00:00Z"},
		{"on Friday night after the window, Monday's", weekdayNights, "", "2026-11-28T03:00:00Z", "2026-11-30T22:00:00Z"},
		{"on Sunday, next Saturday's", "0 2 * * SAT", berlin, "2026-11-29T03:00:00+01:00", "2026-12-05T02:00:00+01:00"},
		{"in the window's zone whatever now's", "0 2 * * SAT", berlin, "2026-11-26T23:00:00Z", "2026-11-28T02:00:00+01:00"},
		{"@daily", "@daily", "", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
		{"the first of the month", "0 3 1 * *", "", "2026-11-25T12:00:00Z", "2026-12-01T03:00:00Z"},
		{"29 February", "0 0 29 2 *", "", "2026-11-25T12:00:00Z", "2028-02-29T00:00:00Z"},
		{"Berlin: a start the clocks skip, when they do", "30 2 * * *", berlin, "2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"},
		{"Berlin: after the repeated hour's first 02:30, the next day's", "30 2 * * *", berlin, "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"},
		{"Berlin: in the repeated hour, the next day's", "30 2 * * *", berlin, "2026-10-25T02:10:00+01:00", "2026-10-26T02:30:00+01:00"},
		{"Berlin: before the repeated hour, its first 02:30", "30 2 * * *", berlin, "2026-10-25T01:59:00+02:00", "2026-10-25T02:30:00+02:00"},
		{"New York: a start the clocks skip, when they do", "0 2 * * SUN", newYork, "2026-03-07T12:00:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"New York: in the repeated hour, the next day's", "30 1 * * *", newYork, "2026-11-01T01:00:00-05:00", "2026-11-02T01:30:00-05:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := mustParse(t, c.schedule, time.Hour, c.tz)
			if got := w.Next(at(t, c.now)).Format(time.RFC3339); got != c.next {
				t.Errorf("Next(%s) = %s, want %s", c.now, got, c.next)
			}
		})
	}
}

func TestParseRefusesWhatIsNotAWindowAndSaysWhatIsExpected(t *testing.T) {
	for _, c := range []struct {
		name     string
		schedule string
		duration time.Duration
		tz       string
		want     []string
	}{
		{"an empty schedule", " ", time.Hour, "", []string{"schedule is empty", `"0 2 * * SAT"`}},
		{"four fields", "0 2 * *", time.Hour, "", []string{`schedule "0 2 * *" is not a cron schedule`, "expected exactly 5 fields, found 4", "minute hour day-of-month month day-of-week"}},
		{"six fields (seconds)", "0 0 2 * * *", time.Hour, "", []string{"expected exactly 5 fields, found 6"}},
		{"a minute out of range", "60 2 * * *", time.Hour, "", []string{"above maximum (59)"}},
		{"an hour out of range", "0 24 * * *", time.Hour, "", []string{"above maximum (23)"}},
		{"day of week 7", "0 2 * * 7", time.Hour, "", []string{"above maximum (6)"}},
		{"an unknown day name", "0 2 * * SATURDAY", time.Hour, "", []string{`schedule "0 2 * * SATURDAY" is not a cron schedule`}},
		{"an unknown macro", "@fortnightly", time.Hour, "", []string{"is not a cron schedule", "@daily or @weekly"}},
		{"an interval", "@every 4h", time.Hour, "", []string{`schedule "@every 4h" is an interval`}},
		{"a time zone in the schedule", "CRON_TZ=Europe/Berlin 0 2 * * *", time.Hour, "", []string{"names a time zone: give it in the time zone field"}},
		{"an empty TZ= prefix", "TZ=", time.Hour, "", []string{"names a time zone"}},
		{"a date that does not exist", "0 2 30 2 *", time.Hour, "", []string{`schedule "0 2 30 2 *" never starts`}},
		{"a zero duration", "@daily", 0, "", []string{"duration must be positive, such as 4h, not 0s"}},
		{"a negative duration", "@daily", -time.Hour, "", []string{"duration must be positive, such as 4h, not -1h0m0s"}},
		{"a duration over a week", "@weekly", MaxDuration + time.Minute, "", []string{"duration 168h1m0s is longer than a week", "set no maintenance window"}},
		{"a misspelt time zone", "@daily", time.Hour, "Europe/Berln", []string{`unknown time zone "Europe/Berln"`, `"Europe/Berlin"`, "empty for UTC"}},
		{"an offset for a time zone", "@daily", time.Hour, "+01:00", []string{`unknown time zone "+01:00"`}},
		{"the operator's local zone", "@daily", time.Hour, "Local", []string{`time zone "Local" is not an IANA name`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := Parse(c.schedule, c.duration, c.tz)
			if err == nil {
				t.Fatalf("Parse(%q, %s, %q) accepted %+v", c.schedule, c.duration, c.tz, w)
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestParseAcceptsTheCronSyntaxAdminsKnow(t *testing.T) {
	for _, c := range []struct {
		schedule string
		duration time.Duration
		tz       string
	}{
		{"0 2 * * 6", time.Hour, ""},
		{"0 2 * * sat", time.Hour, "UTC"},
		{"0 22 * * MON-FRI", 4 * time.Hour, berlin},
		{"*/15 0-5 1,15 JAN-MAR ?", time.Minute, newYork},
		{"30 1 1-7 * SUN", 90 * time.Minute, "Asia/Kolkata"},
		{"  0 2 * * 0  ", time.Second, ""},
		{"@daily", MaxDuration, ""},
		{"@midnight", time.Hour, ""},
		{"@weekly", time.Hour, ""},
		{"@monthly", time.Hour, ""},
		{"@yearly", time.Hour, ""},
		{"0 0 29 2 *", time.Hour, ""},
	} {
		if _, err := Parse(c.schedule, c.duration, c.tz); err != nil {
			t.Errorf("Parse(%q, %s, %q): %v", c.schedule, c.duration, c.tz, err)
		}
	}
}

// The fields of a Window are its whole meaning: one written as a literal behaves as the one
// Parse returns, and one that does not parse is never open.
func TestAWindowWrittenAsALiteralBehavesAsParsed(t *testing.T) {
	now := at(t, "2026-03-29T03:30:00+02:00")
	parsed := mustParse(t, "0 2 * * SUN", 4*time.Hour, berlin)
	literal := Window{Schedule: "0 2 * * SUN", Duration: 4 * time.Hour, TimeZone: berlin}
	po, pc := parsed.Open(now)
	lo, lc := literal.Open(now)
	if po != lo || !pc.Equal(lc) || !parsed.Next(now).Equal(literal.Next(now)) || parsed.String() != literal.String() {
		t.Errorf("literal %v: Open %t %s, Next %s; parsed %v: Open %t %s, Next %s",
			literal, lo, lc, literal.Next(now), parsed, po, pc, parsed.Next(now))
	}
	invalid := Window{Schedule: "0 2 * * SUN", Duration: 4 * time.Hour, TimeZone: "Mars/Olympus_Mons"}
	if open, _ := invalid.Open(now); open || !invalid.Next(now).IsZero() {
		t.Errorf("a window that does not parse is open (%t) or has a next start (%s)", open, invalid.Next(now))
	}
}

func TestStringDescribesTheWindowForMessages(t *testing.T) {
	for _, c := range []struct {
		schedule string
		duration time.Duration
		tz       string
		want     string
	}{
		{"0 2 * * SAT", 4 * time.Hour, berlin, "Sat 02:00-06:00 Europe/Berlin"},
		{"0 22 * * MON-FRI", 4 * time.Hour, "", "Mon-Fri 22:00-02:00 UTC"},
		{"30 1 * * *", 2 * time.Hour, newYork, "daily 01:30-03:30 America/New_York"},
		{"@daily", time.Hour, "", "daily 00:00-01:00 UTC"},
		{"@weekly", 3 * time.Hour, "", "Sun 00:00-03:00 UTC"},
		{"0 3 * * 6,0", time.Hour, "", "Sat,Sun 03:00-04:00 UTC"},
		{"0 3 * * 0,5,6", time.Hour, "", "Fri-Sun 03:00-04:00 UTC"},
		{"0 3 * * 1,3,5", time.Hour, "", "Mon,Wed,Fri 03:00-04:00 UTC"},
		{"0 3 1 * *", 4 * time.Hour, berlin, `"0 3 1 * *" for 4h, Europe/Berlin`},
		{"0 3 * * SAT", 30*time.Hour + 15*time.Minute, "", `"0 3 * * SAT" for 1d6h15m, UTC`},
		{"0 2,14 * * *", 90 * time.Second, "", `"0 2,14 * * *" for 1m30s, UTC`},
	} {
		if got := mustParse(t, c.schedule, c.duration, c.tz).String(); got != c.want {
			t.Errorf("Parse(%q, %s, %q).String() = %q, want %q", c.schedule, c.duration, c.tz, got, c.want)
		}
	}
}

func TestUntilIsAShortDurationRoundedUpToTheMinute(t *testing.T) {
	now := at(t, "2026-11-27T00:00:00+01:00")
	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{26 * time.Hour, "1d2h"},
		{26*time.Hour + 59*time.Minute, "1d2h"},
		{48 * time.Hour, "2d"},
		{24*time.Hour + 5*time.Minute, "1d"},
		{3 * time.Hour, "3h"},
		{3*time.Hour + 20*time.Minute, "3h20m"},
		{35 * time.Minute, "35m"},
		{34*time.Minute + time.Second, "35m"},
		{10 * time.Second, "1m"},
		{0, "0m"},
		{-time.Hour, "0m"},
	} {
		if got := Until(now, now.Add(c.after)); got != c.want {
			t.Errorf("Until(now, now+%s) = %q, want %q", c.after, got, c.want)
		}
	}
}

func TestTheMessageOutsideAWindowNamesTheNextStartAndHowSoon(t *testing.T) {
	w := mustParse(t, "0 2 * * SAT", 4*time.Hour, berlin)
	now := at(t, "2026-11-27T00:00:00+01:00")
	if open, _ := w.Open(now); open {
		t.Fatalf("%s is open at %s", w, now)
	}
	next := w.Next(now)
	got := "outside the maintenance window; the next one starts " + next.Format(time.RFC3339) + " (in " + Until(now, next) + ")"
	want := "outside the maintenance window; the next one starts 2026-11-28T02:00:00+01:00 (in 1d2h)"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
