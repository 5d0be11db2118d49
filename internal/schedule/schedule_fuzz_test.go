package schedule

import (
	"testing"
	"time"
)

// fuzzZones are the zones FuzzWindow picks from: with and without daylight saving time, north
// and south, with a 30-minute change (Australia/Lord_Howe) and a skipped day (Pacific/Apia).
var fuzzZones = []string{"", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe",
	"Pacific/Apia", "Asia/Kolkata"}

// FuzzWindow checks that Parse never panics, and that what Open and Next say of an accepted
// window agrees: the next start opens a window that closes Duration later, and an open window
// started at most Duration ago.
func FuzzWindow(f *testing.F) {
	f.Add("0 2 * * SAT", int64(240), uint8(1), int64(1795000000))
	f.Add("30 2 * * *", int64(60), uint8(1), int64(1774745400)) // 2026-03-29, Berlin springs forward
	f.Add("30 1 * * *", int64(60), uint8(2), int64(1793511000)) // 2026-11-01, New York falls back
	f.Add("0 22 * * MON-FRI", int64(240), uint8(0), int64(1795000000))
	f.Add("*/15 0-5 1,15 JAN-MAR ?", int64(1), uint8(4), int64(1775000000))
	f.Add("@weekly", int64(7*24*60), uint8(3), int64(1775000000))
	f.Add("0 0 30 12 *", int64(24*60), uint8(5), int64(1325156400)) // Samoa skipped 2011-12-30
	f.Add("TZ=", int64(60), uint8(0), int64(0))
	f.Fuzz(func(t *testing.T, schedule string, minutes int64, zone uint8, unix int64) {
		w, err := Parse(schedule, time.Duration(minutes)*time.Minute, fuzzZones[int(zone)%len(fuzzZones)])
		if err != nil {
			return
		}
		// Between 1970 and 2200.
		now := time.Unix(unix%(230*365*24*3600), 0).UTC()
		if now.Unix() < 0 {
			now = now.Add(230 * 365 * 24 * time.Hour)
		}
		if open, closes := w.Open(now); open {
			if !closes.After(now) || closes.Add(-w.Duration).After(now) {
				t.Fatalf("%v at %s: open until %s", w, now, closes)
			}
			if o, _ := w.Open(closes.Add(-w.Duration)); !o {
				t.Fatalf("%v at %s: open until %s, but not at its start", w, now, closes)
			}
		}
		next := w.Next(now)
		if next.IsZero() {
			return
		}
		if !next.After(now) {
			t.Fatalf("%v at %s: next start %s is not after now", w, now, next)
		}
		if open, closes := w.Open(next); !open || !closes.Equal(next.Add(w.Duration)) {
			t.Fatalf("%v: at its start %s, open %t until %s", w, next, open, closes)
		}
	})
}
