package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/metrics"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// allConditionTypes are set on every config, so `kubectl wait --for=condition=X` works
// for each of them and exactly the ones that hold are True.
var allConditionTypes = []string{
	advisorv1alpha1.ConditionDrafting,
	advisorv1alpha1.ConditionReviewRequired,
	advisorv1alpha1.ConditionInProgress,
	advisorv1alpha1.ConditionCompleted,
	advisorv1alpha1.ConditionDrifted,
	advisorv1alpha1.ConditionFailed,
	advisorv1alpha1.ConditionPrerequisiteFailed,
	advisorv1alpha1.ConditionIgnored,
	advisorv1alpha1.ConditionUpgradeAvailable,
	advisorv1alpha1.ConditionReverted,
	advisorv1alpha1.ConditionReady,
}

// primaryCondition is the condition that carries the reason and message of a phase; Ready
// for a phase that has none of its own.
func primaryCondition(p advisorv1alpha1.Phase) string {
	if c := advisorv1alpha1.PhaseCondition(p); c != "" {
		return c
	}
	return advisorv1alpha1.ConditionReady
}

// trueConditions tells which conditions are True in a phase.
func trueConditions(p advisorv1alpha1.Phase) map[string]bool {
	h := map[string]bool{primaryCondition(p): true}
	switch p {
	case advisorv1alpha1.PhasePending:
		h = map[string]bool{}
	case advisorv1alpha1.PhaseCompleted:
		h[advisorv1alpha1.ConditionReady] = true
	case advisorv1alpha1.PhaseCompletedWithErrors:
		h[advisorv1alpha1.ConditionFailed] = true
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		// The targets are as approved; a newer plan waits for review.
		h[advisorv1alpha1.ConditionCompleted] = true
		h[advisorv1alpha1.ConditionReady] = true
	}
	return h
}

// syncConditions derives every condition from the phase and its reason and message.
func syncConditions(vpc *advisorv1alpha1.VirtPlatformConfig, reason, message string) {
	st := &vpc.Status
	phase := st.Phase
	if phase == "" {
		return
	}
	isTrue := trueConditions(phase)
	primary := primaryCondition(phase)
	for _, t := range allConditionTypes {
		c := metav1.Condition{
			Type:               t,
			Status:             metav1.ConditionFalse,
			Reason:             string(phase),
			ObservedGeneration: st.ObservedGeneration,
		}
		if isTrue[t] {
			c.Status = metav1.ConditionTrue
			c.Reason, c.Message = reason, message
			if t != primary {
				c.Reason, c.Message = secondaryReason(phase, t), message
			}
		} else if t == advisorv1alpha1.ConditionReady {
			c.Message = message
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// secondaryReason is the reason of a True condition that is not the phase's primary one.
func secondaryReason(p advisorv1alpha1.Phase, condType string) string {
	switch {
	case p == advisorv1alpha1.PhaseCompletedWithErrors && condType == advisorv1alpha1.ConditionFailed:
		return advisorv1alpha1.ReasonItemsFailed
	case p == advisorv1alpha1.PhaseCompletedWithUpgrade && condType == advisorv1alpha1.ConditionCompleted:
		return advisorv1alpha1.ReasonApplied
	}
	return string(p)
}

// shownText returns the reason and message the current phase's condition shows, so a
// reconcile that does not move the config keeps showing them. Display only: nothing is
// decided from them.
func shownText(vpc *advisorv1alpha1.VirtPlatformConfig) (string, string) {
	c := meta.FindStatusCondition(vpc.Status.Conditions, primaryCondition(vpc.Status.Phase))
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// summarize fills the fields derived from the items: the highest impact and
// "completed/applicable".
func summarize(st *advisorv1alpha1.VirtPlatformConfigStatus) {
	if len(st.Items) == 0 {
		st.ImpactSeverity, st.ItemsSummary = "", ""
		return
	}
	rank := map[advisorv1alpha1.ImpactSeverity]int{advisorv1alpha1.ImpactLow: 1, advisorv1alpha1.ImpactMedium: 2, advisorv1alpha1.ImpactHigh: 3}
	impact := advisorv1alpha1.ImpactLow
	done, applicable := 0, 0
	for _, it := range st.Items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		applicable++
		if rank[it.ImpactSeverity] > rank[impact] {
			impact = it.ImpactSeverity
		}
		if it.State == advisorv1alpha1.ItemCompleted {
			done++
		}
	}
	st.ImpactSeverity = impact
	// Skipped items are not counted: a completed plan reads n/n.
	st.ItemsSummary = fmt.Sprintf("%d/%d", done, applicable)
}

// errStatusConflict: the status write found the config changed since it was read.
var errStatusConflict = errors.New("the VirtPlatformConfig changed since it was read")

// errConfigGone: the status write found the config deleted.
var errConfigGone = errors.New("the VirtPlatformConfig was deleted")

// persist writes what a step did (see writeStatus), then records the Events of its
// transitions and updates the watches and metrics. A failed step does not advance
// observedGeneration, so the next attempt still sees the spec change as new.
func (r *VirtPlatformConfigReconciler) persist(ctx context.Context, s *scope, stepSucceeded bool) error {
	if err := r.finishStatus(ctx, s, stepSucceeded); err != nil {
		// A config deleted meanwhile gets no Event: nothing is written for it any more.
		return err
	}
	s.recordEvents(r.Recorder)
	r.watches.track(s.vpc)
	metrics.Observe(s.vpc)
	observePauses(s.vpc)
	return nil
}

// writeStatus persists the status as the step has it so far, before a write it
// authorizes (see writeItem).
func (r *VirtPlatformConfigReconciler) writeStatus(ctx context.Context, s *scope) error {
	return r.finishStatus(ctx, s, true)
}

// finishStatus fills the derived status fields (observed generation, conditions, summary)
// and writes the status with one merge patch guarded by the resourceVersion it was read
// at, so a deposed leader or a stale read never overwrites a newer status. Nothing is
// written when nothing changed.
func (r *VirtPlatformConfigReconciler) finishStatus(ctx context.Context, s *scope, stepSucceeded bool) error {
	vpc := s.vpc
	if stepSucceeded {
		vpc.Status.ObservedGeneration = vpc.Generation
	}
	reason, message := s.reason, s.message
	if !s.phaseSet {
		reason, message = shownText(s.before)
	}
	syncConditions(vpc, reason, message)
	summarize(&vpc.Status)
	if equality.Semantic.DeepEqual(s.before.Status, vpc.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, vpc, patch); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return errConfigGone
		case apierrors.IsConflict(err):
			return errStatusConflict
		}
		return fmt.Errorf("patch status of VirtPlatformConfig %s: %w", vpc.Name, err)
	}
	s.before = vpc.DeepCopy()
	return nil
}
