package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
)

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
	r.watches.Track(s.vpc)
	metrics.Observe(s.vpc)
	observePauses(s.vpc)
	return nil
}

// writeStatus persists the status as the step has it so far, before a write it
// authorizes (see writeItem). The Events of what it persists are recorded with it: a
// later status write of the step that is refused (the config changed meanwhile) ends the
// step, and the next one starts from what was persisted here, so it would not note them
// again.
func (r *VirtPlatformConfigReconciler) writeStatus(ctx context.Context, s *scope) error {
	if err := r.finishStatus(ctx, s, true); err != nil {
		return err
	}
	s.recordEvents(r.Recorder)
	s.startPhase, s.transitions, s.notes = s.vpc.Status.Phase, nil, nil
	return nil
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
	s.settleHistory()
	reason, message, correcting := s.reason, s.message, s.correcting
	if !s.phaseSet {
		// The phase did not move: it keeps what it shows, including whether it corrects.
		reason, message = s.before.Status.ShownReason()
		correcting = vpc.Status.Phase == advisorv1alpha1.PhaseDrifted &&
			meta.IsStatusConditionTrue(s.before.Status.Conditions, advisorv1alpha1.ConditionReconciling)
	}
	vpc.Status.SetConditions(reason, message, advisorv1alpha1.ProgressOf(vpc.Status.Phase, vpc.Spec.Action, correcting))
	vpc.Status.Summarize()
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
