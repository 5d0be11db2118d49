// Package throttle limits how often aggressive mode re-applies a drifted target, and tells
// when another writer keeps undoing the corrections.
package throttle

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle limits drift corrections in aggressive mode: each target has a token
// bucket (a burst of perWindow re-applies, refilled at perWindow per window).
//
// It counts throttle episodes, not reconciles: an episode starts when a correction is held
// back and lasts until the wait is over, however many watch events arrive meanwhile.
// maxStreak episodes in a row, with no correction holding in between, mean another writer
// keeps undoing the corrections (thrashing). A correction holds when no drift follows it
// for a whole window; the streak starts again from zero then.
type Throttle struct {
	mu        sync.Mutex
	perWindow int
	window    time.Duration
	maxStreak int
	buckets   map[string]*rate.Limiter
	configs   map[string]*correctionHistory
}

// correctionHistory is what the throttle remembers of one config.
type correctionHistory struct {
	// streak counts the throttle episodes since a correction last held.
	streak int
	// episodeEnds is when the current episode's wait is over (zero: no episode).
	episodeEnds time.Time
	// lastCorrection is when a correction was last let through.
	lastCorrection time.Time
}

// Verdict is the throttle's answer to one correction.
type Verdict struct {
	Allowed bool
	// Wait until every target has a token again, when not allowed.
	Wait time.Duration
	// NewEpisode: this hold-back started a throttle episode (Event and metric once).
	NewEpisode bool
	// Streak of episodes without a correction holding.
	Streak int
}

// New allows perWindow re-applies of each target per window and calls
// maxStreak throttle episodes in a row thrashing.
func New(perWindow int, window time.Duration, maxStreak int) *Throttle {
	return &Throttle{
		perWindow: perWindow,
		window:    window,
		maxStreak: maxStreak,
		buckets:   map[string]*rate.Limiter{},
		configs:   map[string]*correctionHistory{},
	}
}

func (t *Throttle) history(config string) *correctionHistory {
	h, ok := t.configs[config]
	if !ok {
		h = &correctionHistory{}
		t.configs[config] = h
	}
	return h
}

// Allow takes one token from each target's bucket if every bucket has one; otherwise it
// takes none and reports the wait and the episode.
func (t *Throttle) Allow(config string, targets []string, now time.Time) Verdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.history(config)
	if !h.lastCorrection.IsZero() && now.Sub(h.lastCorrection) >= t.window && h.episodeEnds.IsZero() {
		// The last correction held for a whole window before this drift.
		h.streak = 0
	}
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
		h.episodeEnds = time.Time{}
		h.lastCorrection = now
		return Verdict{Allowed: true, Streak: h.streak}
	}
	v := Verdict{Wait: wait}
	if h.episodeEnds.IsZero() || !now.Before(h.episodeEnds) {
		h.streak++
		v.NewEpisode = true
	}
	h.episodeEnds = now.Add(wait)
	v.Streak = h.streak
	return v
}

func (t *Throttle) bucket(target string) *rate.Limiter {
	b, ok := t.buckets[target]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(t.perWindow)/t.window.Seconds()), t.perWindow)
		t.buckets[target] = b
	}
	return b
}

// InSync notes that a config's targets are as applied: an ongoing episode is over.
func (t *Throttle) InSync(config string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.configs[config]; ok {
		h.episodeEnds = time.Time{}
	}
}

// Forget drops a config's history (the config was deleted, or the user changed its spec
// after it stopped correcting).
func (t *Throttle) Forget(config string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.configs, config)
}

// String says what the throttle allows.
func (t *Throttle) String() string {
	return fmt.Sprintf("%d re-applies per %s per target", t.perWindow, t.window)
}

// MaxStreak is the number of throttle episodes in a row that means thrashing.
func (t *Throttle) MaxStreak() int { return t.maxStreak }
