package controller

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DriftThrottle limits drift corrections in aggressive mode: each target has a token
// bucket (a burst of `perWindow` re-applies, refilled at `perWindow` per window). A config
// whose corrections are held back maxStreak times in a row, each within a window of the
// previous one, is thrashing against another writer.
type DriftThrottle struct {
	mu        sync.Mutex
	perWindow int
	window    time.Duration
	maxStreak int
	buckets   map[string]*rate.Limiter
	streaks   map[string]throttleStreak
}

type throttleStreak struct {
	count int
	last  time.Time
}

// NewDriftThrottle allows perWindow re-applies of each target per window and calls
// maxStreak consecutive throttles thrashing.
func NewDriftThrottle(perWindow int, window time.Duration, maxStreak int) *DriftThrottle {
	return &DriftThrottle{
		perWindow: perWindow,
		window:    window,
		maxStreak: maxStreak,
		buckets:   map[string]*rate.Limiter{},
		streaks:   map[string]throttleStreak{},
	}
}

// allow takes one token from each target's bucket if every bucket has one. Otherwise it
// takes none and returns how long until they all have one, and the config's streak of
// consecutive throttles.
func (t *DriftThrottle) allow(config string, targets []string, now time.Time) (bool, time.Duration, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, target := range targets {
		b := t.bucket(target)
		if tokens := b.TokensAt(now); tokens < 1 {
			need := time.Duration((1 - tokens) / float64(b.Limit()) * float64(time.Second))
			wait = max(wait, need)
		}
	}
	if wait == 0 {
		for _, target := range targets {
			t.bucket(target).AllowN(now, 1)
		}
		return true, 0, t.streaks[config].count
	}
	s := t.streaks[config]
	if s.count == 0 || now.Sub(s.last) > t.window {
		s.count = 0
	}
	s.count++
	s.last = now
	t.streaks[config] = s
	return false, wait, s.count
}

func (t *DriftThrottle) bucket(target string) *rate.Limiter {
	b, ok := t.buckets[target]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(t.perWindow)/t.window.Seconds()), t.perWindow)
		t.buckets[target] = b
	}
	return b
}

// calm ends a config's streak: its targets are in sync, or the user changed the spec.
func (t *DriftThrottle) calm(config string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.streaks, config)
}

// forget drops a deleted config's streak.
func (t *DriftThrottle) forget(config string) { t.calm(config) }

func (t *DriftThrottle) describe() string {
	return fmt.Sprintf("%d re-applies per %s per target", t.perWindow, t.window)
}
