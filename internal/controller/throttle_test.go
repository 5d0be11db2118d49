package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestDriftThrottleCountsEpisodesNotReconciles(t *testing.T) {
	g := NewWithT(t)
	th := NewDriftThrottle(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.allow("c", target, now).allowed).To(BeTrue(), "the first correction has a token")
	first := th.allow("c", target, now.Add(time.Second))
	g.Expect(first.allowed).To(BeFalse())
	g.Expect(first.newEpisode).To(BeTrue())
	g.Expect(first.streak).To(Equal(1))

	// Two more watch events while the same wait lasts: still the first episode.
	for _, d := range []time.Duration{2 * time.Second, 3 * time.Second} {
		v := th.allow("c", target, now.Add(d))
		g.Expect(v.allowed).To(BeFalse())
		g.Expect(v.newEpisode).To(BeFalse(), "an event during a throttle wait starts no new episode")
		g.Expect(v.streak).To(Equal(1), "reconciles are not episodes")
	}
}

func TestDriftThrottleStreakOfCorrectionsThatDoNotHold(t *testing.T) {
	g := NewWithT(t)
	th := NewDriftThrottle(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.allow("c", target, now).allowed).To(BeTrue())
	for episode := 1; episode <= 3; episode++ {
		v := th.allow("c", target, now.Add(time.Second))
		g.Expect(v.allowed).To(BeFalse())
		g.Expect(v.streak).To(Equal(episode))
		// The wait ends, the correction goes through and is undone at once.
		now = now.Add(time.Second + v.wait)
		g.Expect(th.allow("c", target, now).allowed).To(BeTrue())
	}
}

func TestDriftThrottleResetsTheStreakWhenACorrectionHolds(t *testing.T) {
	g := NewWithT(t)
	th := NewDriftThrottle(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.allow("c", target, now).allowed).To(BeTrue())
	v := th.allow("c", target, now.Add(time.Second))
	g.Expect(v.streak).To(Equal(1))
	now = now.Add(time.Second + v.wait)
	g.Expect(th.allow("c", target, now).allowed).To(BeTrue())
	th.inSync("c", now.Add(time.Second))

	// The correction held for a whole window before the next drift: a fresh start.
	now = now.Add(2 * time.Minute)
	g.Expect(th.allow("c", target, now).allowed).To(BeTrue())
	v = th.allow("c", target, now.Add(time.Second))
	g.Expect(v.allowed).To(BeFalse())
	g.Expect(v.streak).To(Equal(1), "the streak starts again after a correction held")
}
