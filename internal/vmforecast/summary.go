package vmforecast

import (
	"fmt"
	"strings"
)

// summaryNames is how many names a summary line spells out; the rest are counted.
const summaryNames = 3

// Summary says in one line what the roll-out does to the pool's VMs, for example
// "57 VMs live-migrate (67 migrations), 2 restart, 1 blocks the drain (db/pg-0)".
// VMs that may move more often than forecast, and VMs shut down for good, are named too.
func Summary(f PoolForecast) string {
	if f.Migrate+f.Restart+f.Block == 0 {
		return "no VMs run on its nodes"
	}
	var parts []string
	noun := func(n int) string {
		if len(parts) > 0 {
			return fmt.Sprint(n)
		}
		return plural(n, "VM", "VMs")
	}
	if f.Migrate > 0 {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", noun(f.Migrate),
			verb(f.Migrate, "live-migrates", "live-migrate"), plural(f.Migrations, "migration", "migrations")))
	}
	if f.Restart > 0 {
		part := noun(f.Restart) + " " + verb(f.Restart, "restarts", "restart")
		if f.StaysStopped > 0 {
			part += fmt.Sprintf(" (%d %s stopped)", f.StaysStopped, verb(f.StaysStopped, "stays", "stay"))
		}
		parts = append(parts, part)
	}
	if f.Block > 0 {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", noun(f.Block),
			verb(f.Block, "blocks the drain", "block the drain"), spell(f.Blocking)))
	}
	line := strings.Join(parts, ", ")
	if n := f.MayExceed.Len(); n > 0 {
		line += fmt.Sprintf("; %d may move more often (%s)", n, spell(f.MayExceed))
	}
	return line
}

// spell names the first few VMs of the list and counts the others.
func spell(l NameList) string {
	names := l.Names
	more := l.More
	if len(names) > summaryNames {
		more += len(names) - summaryNames
		names = names[:summaryNames]
	}
	s := strings.Join(names, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
