package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

// scope is what one reconcile of one config works with.
type scope struct {
	vpc    *advisorv1alpha1.VirtPlatformConfig
	before *advisorv1alpha1.VirtPlatformConfig
	// profile is nil when this operator does not implement the config's profile.
	profile profiles.Profile
	// opts are the spec's options with every default filled in.
	opts *advisorv1alpha1.ProfileOptions
	// specHash identifies the spec a plan drafted now depends on.
	specHash string
	// newGeneration is set when the user changed the spec since the last reconcile:
	// with action Apply it is a fresh approval.
	newGeneration bool

	phaseSet        bool
	reason, message string
	startPhase      advisorv1alpha1.Phase
	transitions     []transition
	notes           []note
	now             metav1.Time
}

type transition struct {
	from, to        advisorv1alpha1.Phase
	reason, message string
}

type note struct {
	eventType, reason, message string
}

func (r *VirtPlatformConfigReconciler) newScope(_ context.Context, vpc *advisorv1alpha1.VirtPlatformConfig) *scope {
	s := &scope{
		vpc:           vpc,
		before:        vpc.DeepCopy(),
		newGeneration: vpc.Generation != vpc.Status.ObservedGeneration,
		startPhase:    vpc.Status.Phase,
		now:           metav1.NewTime(r.now()),
	}
	if p, ok := r.Profiles.Get(vpc.Spec.Profile); ok {
		s.profile = p
		s.opts = p.Defaults(vpc.Spec.Options)
	}
	s.specHash = planSpecHash(vpc.Spec, s.opts)
	return s
}

// setPhase moves the config to a phase with the reason and message its conditions show.
func (s *scope) setPhase(p advisorv1alpha1.Phase, reason, message string) {
	from := s.vpc.Status.Phase
	s.vpc.Status.Phase = p
	s.phaseSet, s.reason, s.message = true, reason, message
	if from != p {
		s.transitions = append(s.transitions, transition{from: from, to: p, reason: reason, message: message})
	}
}

// currentReason is the reason of the phase as it stands in this reconcile.
func (s *scope) currentReason() string {
	if s.phaseSet {
		return s.reason
	}
	reason, _ := phaseReason(s.before)
	return reason
}

// note records an Event that is not a phase transition.
func (s *scope) note(eventType, reason, format string, args ...any) {
	s.notes = append(s.notes, note{eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...)})
}

// recordEvents emits an Event per phase transition of this reconcile (none when the
// config ended where it started, as when a recheck of missing prerequisites fails
// again) and the noted ones.
func (s *scope) recordEvents(rec events.EventRecorder) {
	if rec == nil {
		return
	}
	if s.vpc.Status.Phase != s.startPhase {
		for _, t := range s.transitions {
			from := t.from
			if from == "" {
				from = "(new)"
			}
			rec.Eventf(s.vpc, nil, eventTypeOf(t.to), string(t.to), "Transition",
				"%s -> %s (%s): %s", from, t.to, t.reason, t.message)
		}
	}
	for _, n := range s.notes {
		rec.Eventf(s.vpc, nil, n.eventType, n.reason, n.reason, "%s", n.message)
	}
}

func eventTypeOf(p advisorv1alpha1.Phase) string {
	switch p {
	case advisorv1alpha1.PhaseFailed, advisorv1alpha1.PhasePrerequisiteFailed,
		advisorv1alpha1.PhaseDrifted, advisorv1alpha1.PhaseCompletedWithErrors:
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// clearPlan drops the plan: nothing may execute it any more.
func (s *scope) clearPlan() {
	st := &s.vpc.Status
	st.Items = nil
	st.PlanHash = ""
	st.SourceSnapshotHash = ""
	st.PlanSpecHash = ""
}

// setItemState changes an item's state, stamping the transition time when it changes.
func (s *scope) setItemState(i int, state advisorv1alpha1.ItemState, message string) {
	it := &s.vpc.Status.Items[i]
	if it.State != state {
		it.State = state
		t := s.now
		it.LastTransitionTime = &t
	}
	it.Message = message
}
