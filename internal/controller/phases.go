package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

// Reasons of the ReviewRequired condition.
const (
	reasonAwaitingApproval = "AwaitingApproval"
	reasonApprovalMismatch = "ApprovalMismatch"
	reasonPlanStale        = "PlanStale"
	reasonThrashing        = "Thrashing"
	reasonPlanRejected     = "PlanRejected"
	reasonPaused           = "Paused"
)

// ignore pauses the config (rule 8): the plan is dropped so nothing can execute it, the
// targets are no longer watched and nothing is written outside the config.
func (r *VirtPlatformConfigReconciler) ignore(s *scope) (ctrl.Result, error) {
	if s.vpc.Status.Phase != advisorv1alpha1.PhaseIgnored {
		s.clearPlan()
		s.setPhase(advisorv1alpha1.PhaseIgnored, "ActionIgnore",
			"spec.action is Ignore: no plan, no writes, no drift handling; set it to DryRun to draft a plan")
	}
	return ctrl.Result{}, nil
}

// draft renders and dry-runs a fresh plan, then hands it to review or, when it is
// already approved, to execution. operatorInitiated marks a redraft the user did not ask
// for (a target changed after review): it always needs a fresh approval.
func (r *VirtPlatformConfigReconciler) draft(ctx context.Context, s *scope, reason, message string, operatorInitiated bool) (ctrl.Result, error) {
	st := &s.vpc.Status
	s.setPhase(advisorv1alpha1.PhaseDrafting, reason, message)
	fail := func(phase advisorv1alpha1.Phase, reason, message string) {
		s.clearPlan()
		st.PlanSpecHash = s.specHash
		st.AppliedOptions = s.opts
		s.setPhase(phase, reason, message)
	}
	if err := s.profile.Validate(s.opts); err != nil {
		fail(advisorv1alpha1.PhaseFailed, "InvalidOptions", fmt.Sprintf("%v: fix spec.options", err))
		return ctrl.Result{}, nil
	}
	missing, err := r.missingPrerequisites(ctx, s.profile.Prerequisites(s.opts))
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(missing) > 0 {
		fail(advisorv1alpha1.PhasePrerequisiteFailed, "PrerequisiteMissing", strings.Join(missing, "; "))
		return ctrl.Result{RequeueAfter: prerequisiteRecheck}, nil
	}
	items, err := s.profile.Render(ctx, r.APIReader, s.opts)
	if err != nil {
		if profiles.IsPrerequisiteError(err) {
			fail(advisorv1alpha1.PhasePrerequisiteFailed, "PrerequisiteMissing", err.Error())
			return ctrl.Result{RequeueAfter: prerequisiteRecheck}, nil
		}
		return ctrl.Result{}, fmt.Errorf("render profile %s: %w", s.vpc.Spec.Profile, err)
	}
	drafted, err := r.Engine.Draft(ctx, string(s.vpc.Spec.Profile), items)
	if err != nil {
		if errors.Is(err, plan.ErrInvalidPlan) {
			fail(advisorv1alpha1.PhaseFailed, "InvalidPlan", err.Error())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	st.Items = drafted
	st.PlanHash = plan.PlanHash(drafted)
	st.SourceSnapshotHash = plan.CombinedSnapshotHash(drafted)
	st.PlanSpecHash = s.specHash
	st.AppliedOptions = s.opts
	st.OperatorVersion = r.Version
	for i := range st.Items {
		st.Items[i].LastTransitionTime = &s.now
	}

	var rejected []string
	changes := 0
	for i, it := range st.Items {
		switch {
		case it.State == advisorv1alpha1.ItemFailed:
			rejected = append(rejected, fmt.Sprintf("%s: %s", it.Name, it.Message))
			s.note(corev1.EventTypeWarning, "ItemRejected", "item %s: %s", it.Name, it.Message)
		case it.State == advisorv1alpha1.ItemPending && it.Diff == plan.NoChanges:
			s.setItemState(i, advisorv1alpha1.ItemPending, "already as planned: "+it.Message)
		case it.State == advisorv1alpha1.ItemPending:
			changes++
		}
	}
	if len(rejected) > 0 {
		s.setPhase(advisorv1alpha1.PhaseFailed, reasonPlanRejected,
			"the API server refuses part of the plan, nothing was applied: "+strings.Join(rejected, "; "))
		return ctrl.Result{}, nil
	}
	if changes == 0 {
		// Rule 2: a plan without changes has nothing to review.
		for i, it := range st.Items {
			if it.State == advisorv1alpha1.ItemPending {
				s.setItemState(i, advisorv1alpha1.ItemCompleted, it.Message)
			}
		}
		s.setPhase(advisorv1alpha1.PhaseCompleted, "NoChanges", "every target already matches the plan")
		return ctrl.Result{}, nil
	}
	reviewMessage := fmt.Sprintf("the plan changes %d target(s) (impact %s): review status.items[].diff, then set spec.action to Apply",
		changes, highestImpact(st.Items))
	if operatorInitiated {
		return r.awaitApproval(s, reason, reviewMessage+" again: a target changed after the previous review"), nil
	}
	return r.decide(ctx, s, reasonAwaitingApproval, reviewMessage, false)
}

// decide executes a plan the spec already approves and otherwise waits for review.
func (r *VirtPlatformConfigReconciler) decide(ctx context.Context, s *scope, reason, message string, needsNewGeneration bool) (ctrl.Result, error) {
	switch s.approval(needsNewGeneration) {
	case approved:
		return r.startExecution(ctx, s, true)
	case mismatched:
		return r.awaitApproval(s, reasonApprovalMismatch, fmt.Sprintf(
			"spec.approvedPlanHash %s is not status.planHash %s: the plan changed since it was approved; review it and copy status.planHash into spec.approvedPlanHash",
			s.vpc.Spec.ApprovedPlanHash, s.vpc.Status.PlanHash)), nil
	}
	return r.awaitApproval(s, reason, message), nil
}

func (r *VirtPlatformConfigReconciler) awaitApproval(s *scope, reason, message string) ctrl.Result {
	prevReason, _ := phaseReason(s.before)
	if reason == reasonApprovalMismatch && (s.before.Status.Phase != advisorv1alpha1.PhaseReviewRequired || prevReason != reason) {
		s.note(corev1.EventTypeWarning, reason, "%s", message)
	}
	s.setPhase(advisorv1alpha1.PhaseReviewRequired, reason, message)
	return ctrl.Result{}
}

type approvalState int

const (
	notApproved approvalState = iota
	approved
	mismatched
)

// approval tells whether the spec approves the plan in status. A pinned approval
// (approvedPlanHash) approves exactly one plan. Otherwise action Apply approves, except
// for plans the operator redrafted on its own (needsNewGeneration): those need the user
// to touch the spec again after the redraft.
func (s *scope) approval(needsNewGeneration bool) approvalState {
	spec := s.vpc.Spec
	switch {
	case spec.Action != advisorv1alpha1.ActionApply:
		return notApproved
	case spec.ApprovedPlanHash != "" && spec.ApprovedPlanHash == s.vpc.Status.PlanHash:
		return approved
	case spec.ApprovedPlanHash != "":
		return mismatched
	case needsNewGeneration && !s.newGeneration:
		return notApproved
	}
	return approved
}

// review waits in ReviewRequired for the approval.
func (r *VirtPlatformConfigReconciler) review(ctx context.Context, s *scope) (ctrl.Result, error) {
	reason, message := phaseReason(s.before)
	if reason == reasonApprovalMismatch {
		reason = reasonAwaitingApproval
		message = "review status.items[].diff, then set spec.action to Apply"
	}
	return r.decide(ctx, s, reason, message, reason == reasonPlanStale)
}

// startExecution enters InProgress (rule 4): unless the lock is bypassed, every item about
// to be applied must find its target as it was when the plan was drafted; otherwise the
// plan is redrafted for review. Failed items are retried.
func (r *VirtPlatformConfigReconciler) startExecution(ctx context.Context, s *scope, checkLock bool) (ctrl.Result, error) {
	st := &s.vpc.Status
	for i, it := range st.Items {
		if it.State == advisorv1alpha1.ItemFailed {
			s.setItemState(i, advisorv1alpha1.ItemPending, "retrying: "+it.Message)
		}
	}
	if checkLock && !s.vpc.Spec.BypassOptimisticLock {
		stale, err := r.staleItems(ctx, st.Items)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(stale) > 0 {
			return r.redraftStale(ctx, s, stale)
		}
	}
	s.setPhase(advisorv1alpha1.PhaseInProgress, "Executing", fmt.Sprintf("applying %d item(s) in order", countState(st.Items, advisorv1alpha1.ItemPending)))
	return ctrl.Result{RequeueAfter: nextStep}, nil
}

// staleItems names the Pending items whose target's managed values changed (or which
// appeared or disappeared) since the plan was drafted.
func (r *VirtPlatformConfigReconciler) staleItems(ctx context.Context, items []advisorv1alpha1.PlanItem) ([]string, error) {
	var stale []string
	for _, it := range items {
		if it.State != advisorv1alpha1.ItemPending {
			continue
		}
		current, err := r.Engine.Snapshot(ctx, it)
		if err != nil {
			return nil, err
		}
		if current != it.SnapshotHash {
			stale = append(stale, fmt.Sprintf("%s (%s %s)", it.Name, it.TargetRef.Kind, it.TargetRef.Name))
		}
	}
	return stale, nil
}

func (r *VirtPlatformConfigReconciler) redraftStale(ctx context.Context, s *scope, stale []string) (ctrl.Result, error) {
	msg := fmt.Sprintf("target(s) changed since the plan was reviewed: %s; drafting a fresh plan", strings.Join(stale, ", "))
	s.note(corev1.EventTypeWarning, reasonPlanStale, "%s", msg)
	return r.draft(ctx, s, reasonPlanStale, msg, true)
}

// execute takes one step of the plan (rule 5): apply the first Pending item, or check the
// health of the item being applied (rule 6). Items run strictly in order.
func (r *VirtPlatformConfigReconciler) execute(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.vpc.Status
	i := -1
	for j, it := range st.Items {
		if it.State == advisorv1alpha1.ItemPending || it.State == advisorv1alpha1.ItemInProgress {
			i = j
			break
		}
	}
	if i < 0 {
		return r.finishExecution(s), nil
	}
	if s.vpc.Spec.Action != advisorv1alpha1.ActionApply {
		// The approval was withdrawn: stop before anything else is written.
		r.awaitApproval(s, reasonPaused, fmt.Sprintf(
			"spec.action is %s: execution paused at item %s with %d of %d items completed; set spec.action to Apply to resume",
			s.vpc.Spec.Action, st.Items[i].Name, countState(st.Items, advisorv1alpha1.ItemCompleted), len(st.Items)))
		return ctrl.Result{}, nil
	}
	item := &st.Items[i]
	if item.State == advisorv1alpha1.ItemPending {
		out, err := r.Engine.ApplyItem(ctx, *item, !s.vpc.Spec.BypassOptimisticLock)
		if err != nil {
			if plan.IsPermanent(err) {
				metrics.Applied(false)
				return r.failItem(s, i, plan.FailureMessage(*item, err)), nil
			}
			return ctrl.Result{}, err
		}
		if out.Stale {
			return r.redraftStale(ctx, s, []string{fmt.Sprintf("%s (%s %s)", item.Name, item.TargetRef.Kind, item.TargetRef.Name)})
		}
		if out.Applied {
			metrics.Applied(true)
			s.note(corev1.EventTypeNormal, "ItemApplied", "applied item %s to %s %s", item.Name, item.TargetRef.Kind, item.TargetRef.Name)
		}
		item.HealthBaseline = out.HealthBaseline
		item.SnapshotHash = out.SnapshotHash
		s.setItemState(i, advisorv1alpha1.ItemInProgress, "applied; checking that it took effect")
	}
	var timeout time.Duration
	if s.vpc.Spec.WaitTimeout != nil {
		timeout = s.vpc.Spec.WaitTimeout.Duration
	}
	since := item.LastTransitionTime.Time
	h, err := r.Engine.CheckHealth(ctx, *item, since, timeout, s.now.Time)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch h.State {
	case plan.Healthy:
		metrics.ItemSettled(s.now.Sub(since).Seconds())
		s.setItemState(i, advisorv1alpha1.ItemCompleted, h.Message)
		return ctrl.Result{RequeueAfter: nextStep}, nil
	case plan.Unhealthy:
		metrics.ItemSettled(s.now.Sub(since).Seconds())
		return r.failItem(s, i, h.Message), nil
	}
	item.Message = h.Message
	wait := r.pollInterval()
	if timeout > 0 {
		if left := since.Add(timeout).Sub(s.now.Time); left < wait {
			wait = max(left, nextStep)
		}
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// failItem fails item i; under Abort the plan stops there, under Continue it goes on.
func (r *VirtPlatformConfigReconciler) failItem(s *scope, i int, message string) ctrl.Result {
	it := s.vpc.Status.Items[i]
	s.setItemState(i, advisorv1alpha1.ItemFailed, message)
	s.note(corev1.EventTypeWarning, "ItemFailed", "item %s failed: %s", it.Name, message)
	if s.vpc.Spec.FailurePolicy == advisorv1alpha1.FailurePolicyContinue {
		return ctrl.Result{RequeueAfter: nextStep}
	}
	s.setPhase(advisorv1alpha1.PhaseFailed, "ItemFailed", fmt.Sprintf(
		"item %s failed: %s. The items after it were not applied (failurePolicy Abort). "+
			"Fix the cause, then approve again: set spec.action to DryRun and back to Apply", it.Name, message))
	return ctrl.Result{}
}

func (r *VirtPlatformConfigReconciler) finishExecution(s *scope) ctrl.Result {
	var failed []string
	for _, it := range s.vpc.Status.Items {
		if it.State == advisorv1alpha1.ItemFailed {
			failed = append(failed, it.Name)
		}
	}
	if len(failed) > 0 {
		s.setPhase(advisorv1alpha1.PhaseCompletedWithErrors, "ItemsFailed", fmt.Sprintf(
			"%d of %d item(s) failed: %s; see their messages", len(failed), len(s.vpc.Status.Items), strings.Join(failed, ", ")))
		return ctrl.Result{}
	}
	s.setPhase(advisorv1alpha1.PhaseCompleted, "Applied", "every item is applied and took effect; watching the targets for drift")
	return ctrl.Result{}
}

// retry leaves Failed when the user approves again. A plan the API server refused is
// drafted afresh; a plan that failed while executing resumes with its failed item, after
// the optimistic lock.
func (r *VirtPlatformConfigReconciler) retry(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.newGeneration {
		return ctrl.Result{}, nil
	}
	if reason, _ := phaseReason(s.before); reason != "ItemFailed" {
		return r.draft(ctx, s, "Retry", "the spec was touched: drafting a fresh plan", false)
	}
	if s.approval(true) != approved {
		return ctrl.Result{}, nil
	}
	return r.startExecution(ctx, s, true)
}

// watchCompleted keeps a completed plan in place: it offers the plan of a newer operator
// version (rule 10), detects drift and its reversal (rule 7), and applies approved or
// aggressive corrections.
func (r *VirtPlatformConfigReconciler) watchCompleted(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.vpc.Status
	switch st.Phase {
	case advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithErrors:
		if st.OperatorVersion != r.Version {
			return r.checkUpgrade(ctx, s)
		}
	case advisorv1alpha1.PhaseCompletedWithUpgrade:
		if s.approval(true) == approved {
			return r.startExecution(ctx, s, true)
		}
		return ctrl.Result{}, nil
	}
	return r.watchCompletedTargets(ctx, s)
}

// watchCompletedTargets handles drift of a completed plan.
func (r *VirtPlatformConfigReconciler) watchCompletedTargets(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.vpc.Status
	drifted, err := r.refreshDrift(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(drifted) == 0 {
		if st.Phase == advisorv1alpha1.PhaseDrifted {
			r.throttle().calm(s.vpc.Name)
			if countState(st.Items, advisorv1alpha1.ItemFailed) > 0 {
				s.setPhase(advisorv1alpha1.PhaseCompletedWithErrors, "InSync", "the drifted fields are back as planned; some items had failed")
			} else {
				s.setPhase(advisorv1alpha1.PhaseCompleted, "InSync", "the drifted fields are back as planned")
			}
		}
		return ctrl.Result{}, nil
	}
	if st.Phase != advisorv1alpha1.PhaseDrifted {
		metrics.DriftDetected()
		s.setPhase(advisorv1alpha1.PhaseDrifted, "DriftDetected", driftMessage(drifted, s.vpc.Spec.BypassOptimisticLock))
	}
	if s.vpc.Spec.BypassOptimisticLock && s.vpc.Spec.Action == advisorv1alpha1.ActionApply {
		return r.correctDrift(ctx, s, drifted)
	}
	if s.approval(true) == approved {
		return r.startExecution(ctx, s, true)
	}
	return ctrl.Result{}, nil
}

// refreshDrift rechecks every applied item. A drifted item goes back to Pending with the
// correction as its diff; an item whose drift was reverted is Completed again. It returns
// the drifted items' descriptions.
func (r *VirtPlatformConfigReconciler) refreshDrift(ctx context.Context, s *scope) ([]string, error) {
	st := &s.vpc.Status
	var drifted []string
	changed := false
	for i, it := range st.Items {
		if it.State != advisorv1alpha1.ItemCompleted && it.State != advisorv1alpha1.ItemPending {
			continue
		}
		c, err := r.Engine.Recheck(ctx, it)
		if err != nil {
			return nil, err
		}
		item := &st.Items[i]
		if c.Diff == plan.NoChanges {
			if it.State == advisorv1alpha1.ItemPending {
				item.Diff, item.SnapshotHash = c.Diff, c.SnapshotHash
				s.setItemState(i, advisorv1alpha1.ItemCompleted, "back in sync: the out-of-band change was reverted")
				changed = true
			}
			continue
		}
		what := fmt.Sprintf("%s (%s %s: %s)", it.Name, it.TargetRef.Kind, it.TargetRef.Name, strings.Join(c.ChangedPaths, ", "))
		drifted = append(drifted, what)
		if it.State == advisorv1alpha1.ItemCompleted || item.Diff != c.Diff {
			item.Diff, item.SnapshotHash = c.Diff, c.SnapshotHash
			s.setItemState(i, advisorv1alpha1.ItemPending, fmt.Sprintf(
				"drifted: %s changed out of band; the diff shows the correction", strings.Join(c.ChangedPaths, ", ")))
			changed = true
		}
	}
	if changed {
		// The plan shown is now the correction: approving it pins these diffs.
		st.PlanHash = plan.PlanHash(st.Items)
		st.SourceSnapshotHash = plan.CombinedSnapshotHash(st.Items)
	}
	return drifted, nil
}

func driftMessage(drifted []string, aggressive bool) string {
	msg := "drifted from the plan: " + strings.Join(drifted, "; ")
	if aggressive {
		return msg + ". Re-applying (bypassOptimisticLock)"
	}
	return msg + ". Revert the change, or review the correction in status.items[].diff and approve it by setting spec.action to DryRun and back to Apply"
}

// correctDrift re-applies drifted items in aggressive mode, at most as often as each
// target's token bucket allows. Throttled three times in a row, it stops (Thrashing)
// until the user changes the spec.
func (r *VirtPlatformConfigReconciler) correctDrift(ctx context.Context, s *scope, drifted []string) (ctrl.Result, error) {
	reason, message := phaseReason(s.before)
	if reason == reasonThrashing && !s.newGeneration {
		s.setPhase(advisorv1alpha1.PhaseDrifted, reasonThrashing, message)
		return ctrl.Result{}, nil
	}
	if s.newGeneration {
		r.throttle().calm(s.vpc.Name)
	}
	var targets []string
	for _, it := range s.vpc.Status.Items {
		if it.State == advisorv1alpha1.ItemPending {
			targets = append(targets, targetKeyOf(it.TargetRef).String())
		}
	}
	ok, wait, streak := r.throttle().allow(s.vpc.Name, targets, s.now.Time)
	if ok {
		return r.startExecution(ctx, s, false)
	}
	metrics.Throttled()
	if streak >= r.throttle().maxStreak {
		msg := fmt.Sprintf("stopped correcting drift: it was throttled %d times in a row, so something keeps changing %s. "+
			"Find and stop the other writer, then change the spec to resume", streak, strings.Join(drifted, "; "))
		s.setPhase(advisorv1alpha1.PhaseDrifted, reasonThrashing, msg)
		s.note(corev1.EventTypeWarning, reasonThrashing, "%s", msg)
		return ctrl.Result{}, nil
	}
	s.note(corev1.EventTypeWarning, "Throttled", "re-apply of %s held back by the rate limit (%s); retrying in %s",
		strings.Join(targets, ", "), r.throttle().describe(), wait.Round(time.Second))
	return ctrl.Result{RequeueAfter: wait}, nil
}

// checkUpgrade compares what this operator version renders for a completed config with
// what an older version applied (rule 10). Only desired content counts: a new impact or
// message text is no upgrade.
func (r *VirtPlatformConfigReconciler) checkUpgrade(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.vpc.Status
	items, err := s.profile.Render(ctx, r.APIReader, s.opts)
	if profiles.IsPrerequisiteError(err) {
		// The cluster lost something the profile needs; the drift check will show what
		// it means for the targets. The upgrade check runs again on the next event.
		return r.watchCompletedTargets(ctx, s)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("render profile %s for the upgrade check: %w", s.vpc.Spec.Profile, err)
	}
	drafted, err := r.Engine.Draft(ctx, string(s.vpc.Spec.Profile), items)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan.DesiredHash(drafted) == plan.DesiredHash(st.Items) {
		st.OperatorVersion = r.Version
		return ctrl.Result{}, nil
	}
	old := map[string]advisorv1alpha1.PlanItem{}
	for _, it := range st.Items {
		old[it.Name] = it
	}
	var changed []string
	for i, it := range drafted {
		prev, ok := old[it.Name]
		if ok && prev.State == advisorv1alpha1.ItemCompleted && plan.DesiredHash([]advisorv1alpha1.PlanItem{prev}) == plan.DesiredHash([]advisorv1alpha1.PlanItem{it}) {
			drafted[i] = prev
			continue
		}
		drafted[i].LastTransitionTime = &s.now
		if it.State == advisorv1alpha1.ItemPending {
			changed = append(changed, it.Name)
		}
	}
	st.Items = drafted
	st.PlanHash = plan.PlanHash(drafted)
	st.SourceSnapshotHash = plan.CombinedSnapshotHash(drafted)
	st.OperatorVersion = r.Version
	msg := fmt.Sprintf("operator %s plans differently for %s: review status.items[].diff, then approve by setting spec.action to DryRun and back to Apply",
		r.Version, strings.Join(changed, ", "))
	s.setPhase(advisorv1alpha1.PhaseCompletedWithUpgrade, "UpgradeAvailable", msg)
	return ctrl.Result{}, nil
}

// missingPrerequisites reads each prerequisite CRD and says what to install for the
// missing ones.
func (r *VirtPlatformConfigReconciler) missingPrerequisites(ctx context.Context, prereqs []profiles.Prerequisite) ([]string, error) {
	var missing []string
	for _, p := range prereqs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Name: p.CRD}, crd)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, fmt.Sprintf("CRD %s is missing: install %s", p.CRD, p.Operator))
		case err != nil:
			return nil, fmt.Errorf("read CRD %s: %w", p.CRD, err)
		}
	}
	return missing, nil
}

func countState(items []advisorv1alpha1.PlanItem, state advisorv1alpha1.ItemState) int {
	n := 0
	for _, it := range items {
		if it.State == state {
			n++
		}
	}
	return n
}

func highestImpact(items []advisorv1alpha1.PlanItem) advisorv1alpha1.ImpactSeverity {
	st := advisorv1alpha1.VirtPlatformConfigStatus{Items: items}
	summarize(&st)
	return st.ImpactSeverity
}
