package controller

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
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
	// newGeneration is set when the spec changed since the status last reflected it.
	newGeneration bool
	// drafted is set when this reconcile drafted the plan in status: its snapshot is fresh.
	drafted bool

	phaseSet        bool
	reason, message string
	// correcting is set when the phase set is Drifted and the operator re-applies the plan
	// by itself (bypassOptimisticLock): the config is Reconciling, not Stalled.
	correcting bool
	startPhase advisorv1alpha1.Phase
	// startPools are the pools the rollouts named when the step started.
	startPools  []string
	transitions []transition
	notes       []note
	now         metav1.Time
	// ended is set when this step ended the execution status.history lists first: its
	// outcome is the phase the step ends in (see settleHistory).
	ended bool
	// lapseIn is how long the approval of the execution under way has left before it
	// lapses, while nothing of it is applied (0: it does not lapse).
	lapseIn time.Duration
}

type transition struct {
	from, to        advisorv1alpha1.Phase
	reason, message string
}

// note is an Event that is not a phase transition. Its action is the item it is about,
// or its reason: Events are grouped into series by type, reason and action, so Events
// about different items must not share one.
type note struct {
	eventType, reason, action, message string
}

func (r *VirtPlatformConfigReconciler) newScope(vpc *advisorv1alpha1.VirtPlatformConfig) *scope {
	s := &scope{
		vpc:           vpc,
		before:        vpc.DeepCopy(),
		newGeneration: vpc.Generation != vpc.Status.ObservedGeneration,
		startPhase:    vpc.Status.Phase,
		startPools:    poolsOf(&vpc.Status),
		now:           metav1.NewTime(r.now()),
	}
	if p, ok := r.Profiles.Get(vpc.Spec.Profile); ok {
		s.profile = p
		s.opts = p.Defaults(vpc.Spec.Options)
	}
	s.specHash = planSpecHash(vpc.Spec, s.opts)
	return s
}

// profileName is the config's profile as the plan engine names it.
func (s *scope) profileName() string { return string(s.vpc.Spec.Profile) }

// setPhase moves the config to a phase with the reason and message its conditions show.
func (s *scope) setPhase(p advisorv1alpha1.Phase, reason, message string) {
	from := s.vpc.Status.Phase
	if from == advisorv1alpha1.PhaseInProgress && p != advisorv1alpha1.PhaseInProgress {
		s.endExecution(p)
	}
	s.vpc.Status.Phase = p
	s.phaseSet, s.reason, s.message, s.correcting = true, reason, message, false
	if from != p {
		s.transitions = append(s.transitions, transition{from: from, to: p, reason: reason, message: message})
	}
}

// note records an Event that is not a phase transition.
//
//nolint:unparam // every such Event is a Warning so far; the type stays the caller's, as in noteItem.
func (s *scope) note(eventType, reason, format string, args ...any) {
	s.notes = append(s.notes, note{eventType: eventType, reason: reason, action: reason, message: fmt.Sprintf(format, args...)})
}

// noteItem records an Event about one plan item.
func (s *scope) noteItem(item, eventType, reason, format string, args ...any) {
	s.notes = append(s.notes, note{eventType: eventType, reason: reason, action: item, message: fmt.Sprintf(format, args...)})
}

// noteAll records the Events the plan engine asked for.
func (s *scope) noteAll(ns []plan.Note) {
	for _, n := range ns {
		s.noteItem(n.Item, n.Type, n.Reason, "%s", n.Message)
	}
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
				"%s", eventNote(fmt.Sprintf("%s -> %s (%s): %s", from, t.to, t.reason, t.message)))
		}
	}
	// One Event per type, reason and action and reconcile: the Events API folds Events with
	// the same ones into a series and keeps only the first message.
	var order []note
	merged := map[note][]string{}
	for _, n := range s.notes {
		k := note{eventType: n.eventType, reason: n.reason, action: n.action}
		if _, seen := merged[k]; !seen {
			order = append(order, k)
		}
		merged[k] = append(merged[k], n.message)
	}
	for _, k := range order {
		rec.Eventf(s.vpc, nil, k.eventType, k.reason, k.action, "%s", eventNote(strings.Join(merged[k], "; ")))
	}
}

// maxEventNote is the longest note the Events API accepts.
const maxEventNote = 1024

// eventNote cuts a note the Events API would refuse as too long; the whole text is in the
// config's status.
func eventNote(s string) string {
	if len(s) <= maxEventNote {
		return s
	}
	const more = " ... (see the config's status)"
	cut := maxEventNote - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
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
	s.ledger().Clear()
	s.vpc.Status.PlanSpecHash = ""
	if a := s.vpc.Status.Approval; a != nil {
		a.Required, a.Command = false, ""
	}
}

// ledger is the plan in status: the one writer of its items, revision and hash.
func (s *scope) ledger() plan.Ledger { return plan.LedgerOf(&s.vpc.Status, s.now) }
