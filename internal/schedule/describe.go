package schedule

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// String describes the window for messages: "Sat 02:00-06:00 Europe/Berlin",
// "Mon-Fri 22:00-02:00 UTC", "daily 01:30-03:30 UTC" when the schedule is one start time on
// every day of the month and of the year, else the schedule, the duration and the zone:
// `"0 2 1 * *" for 4h, Europe/Berlin`.
func (w Window) String() string {
	zone := w.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	spec, _, _ := w.parsed()
	if s, ok := spec.(*cron.SpecSchedule); ok && w.Duration < 24*time.Hour && w.Duration%time.Minute == 0 {
		if days, ok := dayNames(s.Dow); ok && isStar(s.Dom) && isStar(s.Month) {
			if minute, ok := single(s.Minute); ok {
				if hour, ok := single(s.Hour); ok {
					start := time.Date(2000, time.January, 1, hour, minute, 0, 0, time.UTC)
					return fmt.Sprintf("%s %s-%s %s", days, start.Format("15:04"), start.Add(w.Duration).Format("15:04"), zone)
				}
			}
		}
	}
	return fmt.Sprintf("%q for %s, %s", w.Schedule, exactDuration(w.Duration), zone)
}

// starBit marks a field of a cron.SpecSchedule written as "*" (or "?").
const starBit = 1 << 63

func isStar(field uint64) bool { return field&starBit != 0 }

// single is the one value a field allows, if it allows one.
func single(field uint64) (int, bool) {
	if isStar(field) || bits.OnesCount64(field) != 1 {
		return 0, false
	}
	return bits.TrailingZeros64(field), true
}

// weekdays are the days Monday to Sunday, as the bits of cron's day-of-week field (Sunday is 0).
var weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday,
	time.Saturday, time.Sunday}

// dayNames names the days of a day-of-week field from Monday: "daily", "Sat", "Mon-Fri",
// "Mon,Wed,Fri", "Sat,Sun".
func dayNames(dow uint64) (string, bool) {
	if isStar(dow) {
		return "daily", true
	}
	var runs []string
	for i := 0; i < len(weekdays); {
		if dow&(1<<uint(weekdays[i])) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < len(weekdays) && dow&(1<<uint(weekdays[j+1])) != 0 {
			j++
		}
		first, last := weekdays[i].String()[:3], weekdays[j].String()[:3]
		switch j - i {
		case 0:
			runs = append(runs, first)
		case 1:
			runs = append(runs, first, last)
		default:
			runs = append(runs, first+"-"+last)
		}
		i = j + 1
	}
	return strings.Join(runs, ","), len(runs) > 0
}

// Until is how long from now until t, for messages: "1d2h", "3h", "35m", its two largest units,
// rounded up to the minute ("1m" for 10s); "0m" when t is not after now.
func Until(now, t time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "0m"
	}
	minutes := int64((d + time.Minute - 1) / time.Minute)
	units := []struct {
		n      int64
		suffix string
	}{{minutes / (24 * 60), "d"}, {minutes / 60 % 24, "h"}, {minutes % 60, "m"}}
	for i, u := range units {
		if u.n == 0 {
			continue
		}
		s := fmt.Sprintf("%d%s", u.n, u.suffix)
		if i+1 < len(units) && units[i+1].n != 0 {
			s += fmt.Sprintf("%d%s", units[i+1].n, units[i+1].suffix)
		}
		return s
	}
	return "0m"
}

// exactDuration writes d in days, hours and minutes ("1d6h30m"), or as time.Duration does when
// it is not whole minutes.
func exactDuration(d time.Duration) string {
	if d <= 0 || d%time.Minute != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.suffix)
			d -= n * u.unit
		}
	}
	return b.String()
}
