package throttle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestThrottleCountsEpisodesNotReconciles(t *testing.T) {
	g := NewWithT(t)
	th := New(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue(), "the first correction has a token")
	first := th.Allow("c", target, now.Add(time.Second))
	g.Expect(first.Allowed).To(BeFalse())
	g.Expect(first.NewEpisode).To(BeTrue())
	g.Expect(first.Streak).To(Equal(1))

	// Two more watch events while the same wait lasts: still the first episode.
	for _, d := range []time.Duration{2 * time.Second, 3 * time.Second} {
		v := th.Allow("c", target, now.Add(d))
		g.Expect(v.Allowed).To(BeFalse())
		g.Expect(v.NewEpisode).To(BeFalse(), "an event during a throttle wait starts no new episode")
		g.Expect(v.Streak).To(Equal(1), "reconciles are not episodes")
	}
}

func TestThrottleStreakOfCorrectionsThatDoNotHold(t *testing.T) {
	g := NewWithT(t)
	th := New(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue())
	for episode := 1; episode <= 3; episode++ {
		v := th.Allow("c", target, now.Add(time.Second))
		g.Expect(v.Allowed).To(BeFalse())
		g.Expect(v.Streak).To(Equal(episode))
		// The wait ends, the correction goes through and is undone at once.
		now = now.Add(time.Second + v.Wait)
		g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue())
	}
}

func TestThrottleResetsTheStreakWhenACorrectionHolds(t *testing.T) {
	g := NewWithT(t)
	th := New(1, time.Minute, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := []string{"KubeDescheduler cluster"}

	g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue())
	v := th.Allow("c", target, now.Add(time.Second))
	g.Expect(v.Streak).To(Equal(1))
	now = now.Add(time.Second + v.Wait)
	g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue())
	th.InSync("c")

	// The correction held for a whole window before the next drift: a fresh start.
	now = now.Add(2 * time.Minute)
	g.Expect(th.Allow("c", target, now).Allowed).To(BeTrue())
	v = th.Allow("c", target, now.Add(time.Second))
	g.Expect(v.Allowed).To(BeFalse())
	g.Expect(v.Streak).To(Equal(1), "the streak starts again after a correction held")
}
