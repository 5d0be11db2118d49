// Package controller holds the VirtPlatformConfig state machine: it decides when a plan is
// drafted, reviewed, executed, watched for drift and redrafted. Building desired states
// is the profiles' job; diffing, hashing, applying and keeping the plan in status
// (plan.Ledger) the plan engine's; this package only sequences them and reports every
// decision in status and Events.
//
// A step runs handlers (outcome.go): each returns the handler that goes on in the same
// step, or ends the step with when to look again; none calls another phase's handler.
// Files follow the life cycle: draft.go (drafting and review), forecast.go (what a plan
// does to the nodes), approve.go (what approves a plan), expiry.go (approvals that lapse
// before their execution starts), gate.go (the write gate, the one
// place outside writes pass), execute.go (applying item by item), rollout.go (the batch of
// items that roll out to nodes, and its gates; its rules are in internal/plan's batch.go),
// pause.go (MachineConfigPool pauses), drift.go (watching what was applied), upgrade.go
// (plans of a newer operator version), revert.go (putting back what was applied),
// history.go (the executions status.history keeps), status.go (the status write). What the plans depend on is watched by internal/watches.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/metrics"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/throttle"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
)

const (
	// defaultHealthPollInterval is how often a waiting item's health is checked.
	defaultHealthPollInterval = 10 * time.Second
	// prerequisiteRecheck is how often a config whose prerequisites are missing looks
	// again, besides reacting to CRD events.
	prerequisiteRecheck = 5 * time.Minute
	// maxStepsPerReconcile bounds the steps one reconcile takes in a row, so one config
	// never holds a worker for long; yieldWorker is when it goes on after that.
	maxStepsPerReconcile = 20
	yieldWorker          = 100 * time.Millisecond
)

// VirtPlatformConfigReconciler runs the state machine of VirtPlatformConfigs.
type VirtPlatformConfigReconciler struct {
	// Client writes status and Events; its reads come from the cache.
	Client client.Client
	// APIReader reads uncached: the config at the start of a reconcile and everything a
	// profile renders from.
	APIReader client.Reader
	// Profiles are the profiles this operator ships.
	Profiles *profiles.Registry
	// Engine drafts and applies plans.
	Engine *plan.Engine
	// Recorder records an Event for every transition and decision.
	Recorder events.EventRecorder
	// Version is the operator version recorded in status.operatorVersion.
	Version string
	// HealthPollInterval is how often a waiting item is checked; 0 means 10s.
	HealthPollInterval time.Duration
	// DriftThrottle limits drift corrections in aggressive mode; nil means 5 per minute
	// per target.
	DriftThrottle *throttle.Throttle
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	watches *watches.Watches
	// vmRollouts is what was seen of the VMs while pools rolled out (vmactual.go).
	vmRollouts vmRollouts
}

// +kubebuilder:rbac:groups=advisor.kubevirt.io,resources=virtplatformconfigs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=advisor.kubevirt.io,resources=virtplatformconfigs/status,verbs=get;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusterversions,verbs=get
// +kubebuilder:rbac:groups=config.openshift.io,resources=schedulers,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=machineconfigurations,verbs=get
// The permissions on the kinds a profile reads and writes are declared by the profile; a
// pool's pause is written by the controller for every profile.

// Reconcile takes the config through its state machine, one step after the other, until
// a step waits (for an approval, a rollout, an event). The config is read once, uncached,
// so a step never starts from a status older than the operator's own last write; each
// step's status is written with a patch guarded by the resourceVersion it started from,
// before anything the step authorizes is written outside the config (see writeItem). A
// status (or a pool) written by somebody else meanwhile ends the step: it is taken again
// from a fresh read.
func (r *VirtPlatformConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vpc *advisorv1alpha1.VirtPlatformConfig
	for steps := 0; steps < maxStepsPerReconcile; steps++ {
		if vpc == nil {
			vpc = &advisorv1alpha1.VirtPlatformConfig{}
			err := r.APIReader.Get(ctx, req.NamespacedName, vpc)
			if err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("read VirtPlatformConfig %s: %w", req.Name, err)
			}
			if err != nil || !vpc.DeletionTimestamp.IsZero() {
				// Deleting a config leaves its targets as they are: it never owned them.
				// Only the pauses it holds are given back.
				r.forget(req.Name)
				err := r.releaseDeleted(ctx, req.Name)
				if errors.Is(err, errPoolConflict) {
					vpc = nil
					continue
				}
				return ctrl.Result{}, err
			}
		}
		s := r.newScope(vpc)
		o, err := r.run(ctx, s)
		// A status write refused before an outside write ends the step as it is: nothing
		// was written outside, and nothing is written again before a fresh read.
		if !errors.Is(err, errStatusConflict) && !errors.Is(err, errConfigGone) {
			if perr := r.persist(ctx, s, err == nil); perr != nil {
				err = perr
			}
		}
		if err == nil && !o.next {
			err = r.settlePauses(ctx, s)
		}
		switch {
		case errors.Is(err, errStatusConflict), errors.Is(err, errPoolConflict):
			// The config or a pool changed since it was read: the step is taken again from
			// a fresh read.
			logf.FromContext(ctx).V(1).Info("an object changed since it was read; reading it again", "config", req.Name, "why", err.Error())
			vpc = nil
		case errors.Is(err, errConfigGone):
			r.forget(req.Name)
			return ctrl.Result{}, nil
		case err != nil:
			return ctrl.Result{}, err
		case o.next:
			vpc = s.vpc
		default:
			return ctrl.Result{RequeueAfter: o.after}, nil
		}
	}
	// The config took more steps in a row than one reconcile takes: the worker goes to the
	// other configs, and this one goes on shortly.
	return ctrl.Result{RequeueAfter: yieldWorker}, nil
}

// step dispatches on the phase. Every path ends in exactly one phase.
func (r *VirtPlatformConfigReconciler) step(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	// Every way out of a batch gives its pool pauses back (completion, failure, a
	// withdrawn approval, a redraft, Ignore).
	if res, acted, err := r.releasePauses(ctx, s); acted || err != nil {
		return res, err
	}
	if s.newGeneration {
		// A spec change (DryRun, Ignore, a new approval) gives back what a pool names the
		// config for without it holding or needing it.
		if err := r.releaseUnheld(ctx, s, s.startPools, false); err != nil {
			return outcome{}, err
		}
	}
	if s.vpc.Spec.Action == advisorv1alpha1.ActionIgnore {
		return r.ignore(s)
	}
	switch st.Phase {
	case "":
		s.setPhase(advisorv1alpha1.PhasePending, advisorv1alpha1.ReasonCreated, "drafting the plan")
	case advisorv1alpha1.PhaseIgnored:
		s.setPhase(advisorv1alpha1.PhasePending, advisorv1alpha1.ReasonResumed,
			fmt.Sprintf("spec.action is %s again: drafting a fresh plan", s.vpc.Spec.Action))
	}
	if s.profile == nil {
		s.clearPlan()
		st.PlanSpecHash = s.specHash
		s.setPhase(advisorv1alpha1.PhaseFailed, advisorv1alpha1.ReasonUnknownProfile, fmt.Sprintf(
			"this operator version does not implement profile %s: upgrade the virt advisor operator", s.vpc.Spec.Profile))
		return outcome{}, nil
	}
	// Rule 1: any spec change other than action and approvedPlanHash redrafts the plan,
	// whatever the phase, so a stale plan is never executed.
	if st.Phase == advisorv1alpha1.PhasePending || st.PlanSpecHash != s.specHash {
		cause := draftCause{by: byUser, reason: advisorv1alpha1.ReasonSpecChanged,
			message: "the spec changed: drafting a fresh plan", review: advisorv1alpha1.ReasonAwaitingApproval}
		if st.Phase == advisorv1alpha1.PhasePending {
			cause.reason, cause.message = advisorv1alpha1.ReasonDrafting, "drafting the plan"
		}
		if rc := revertCause(s); rc != nil {
			cause = *rc
		}
		return redraft(cause, nil), nil
	}
	switch st.Phase {
	case advisorv1alpha1.PhaseDrafting:
		// A draft interrupted on its way (an API error, a restart) is drafted again; what
		// approves the plan stays what it was (status.approval).
		return redraft(draftCause{by: resumed, reason: advisorv1alpha1.ReasonDrafting,
			message: "drafting the plan again after an interruption", review: advisorv1alpha1.ReasonAwaitingApproval}, nil), nil
	case advisorv1alpha1.PhasePrerequisiteFailed:
		if hasApplied(st.Items) {
			// A target's kind went away after the plan was applied: see whether it is back.
			return goOn(watchHandler), nil
		}
		return redraft(draftCause{by: resumed, reason: advisorv1alpha1.ReasonPrerequisitesRechecked,
			message: "checking the prerequisites again", review: advisorv1alpha1.ReasonAwaitingApproval}, nil), nil
	case advisorv1alpha1.PhaseReviewRequired:
		return r.awaitReview(ctx, s)
	case advisorv1alpha1.PhaseInProgress:
		return goOn(executeHandler), nil
	case advisorv1alpha1.PhaseFailed:
		return r.retry(ctx, s)
	case advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithErrors,
		advisorv1alpha1.PhaseCompletedWithUpgrade, advisorv1alpha1.PhaseDrifted:
		if s.vpc.Spec.Revert {
			return outcome{}, nil // a revert that ended with errors: its targets are not watched
		}
		return goOn(watchHandler), nil
	}
	return outcome{}, nil
}

// awaitReview waits in ReviewRequired for the approval. A change of what the plan was
// rendered from redrafts it first, so what is approved is what the profile renders now.
func (r *VirtPlatformConfigReconciler) awaitReview(ctx context.Context, s *scope) (outcome, error) {
	if s.vpc.Spec.Revert {
		// A revert plan is drafted from status.replaced, not rendered: a change of its
		// targets makes it stale at approval (rule 4).
		return r.awaitDecision(s)
	}
	if changed, done, err := r.inputsChanged(ctx, s); err != nil || changed {
		if err != nil {
			return outcome{}, err
		}
		return redraftInputs("an object the plan was rendered from changed", done), nil
	}
	// VMs move while the plan waits: what approving it does to them is shown as they run
	// now, without touching the plan or its hash.
	r.refreshVMs(ctx, s)
	if s.approval() == approved {
		return outcome{then: startHandler, lock: true}, nil
	}
	// An approved plan is checked against the annotations by its apply; one waiting for
	// review is redrafted when they change, so the plan shown is the one they ask for.
	for _, it := range s.vpc.Status.Items {
		changed, err := r.Engine.ControlsChanged(ctx, it)
		if meta.IsNoMatchError(err) {
			continue // the kind went away: the redraft at approval reports it
		}
		if err != nil {
			return outcome{}, err
		}
		if changed {
			return redraftInputs(fmt.Sprintf("the user-control annotations of item %s's target changed", it.Name), nil), nil
		}
	}
	return r.awaitDecision(s)
}

// awaitDecision is the part of awaitReview every plan goes through: the approval, or
// what the config shows while it waits for one.
func (r *VirtPlatformConfigReconciler) awaitDecision(s *scope) (outcome, error) {
	if s.approval() == approved {
		return outcome{then: startHandler, lock: true}, nil
	}
	if s.approval() == mismatched {
		if !s.newGeneration && s.before.Status.PlanHash == s.vpc.Status.PlanHash {
			// Neither the pin nor the plan changed since the mismatch was shown (the spec
			// was observed with this plan): what it says, with why the plan changed under
			// the pin, stays as it is.
			return outcome{}, nil
		}
		return r.awaitMatchingPin(s, ""), nil
	}
	if s.newGeneration {
		if why := s.contentNotCovered(); why != "" {
			return r.awaitApproval(s, advisorv1alpha1.ReasonFieldConflicts, why), nil
		}
		// The spec changed without approving (the action is not Apply): say what approves.
		return r.awaitApproval(s, advisorv1alpha1.ReasonAwaitingApproval, "review status.items[].diff"), nil
	}
	return outcome{}, nil
}

func hasApplied(items []advisorv1alpha1.PlanItem) bool {
	for _, it := range items {
		if it.Applied != nil {
			return true
		}
	}
	return false
}

// ignore pauses the config (rule 8): the plan is dropped so nothing can execute it, the
// targets are no longer watched and nothing is written outside the config.
func (r *VirtPlatformConfigReconciler) ignore(s *scope) (outcome, error) {
	if s.vpc.Status.Phase != advisorv1alpha1.PhaseIgnored {
		s.clearPlan()
		s.setPhase(advisorv1alpha1.PhaseIgnored, advisorv1alpha1.ReasonActionIgnore,
			"spec.action is Ignore: no plan, no writes, no drift handling; set it to DryRun to draft a plan")
	}
	return outcome{}, nil
}

func (r *VirtPlatformConfigReconciler) forget(name string) {
	r.watches.Forget(name)
	r.throttle().Forget(name)
	metrics.Forget(name)
}

func (r *VirtPlatformConfigReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *VirtPlatformConfigReconciler) pollInterval() time.Duration {
	if r.HealthPollInterval > 0 {
		return r.HealthPollInterval
	}
	return defaultHealthPollInterval
}

func (r *VirtPlatformConfigReconciler) throttle() *throttle.Throttle {
	if r.DriftThrottle == nil {
		r.DriftThrottle = throttle.New(5, time.Minute, 3)
	}
	return r.DriftThrottle
}

// SetupWithManager registers the controller. Only spec, label and annotation changes of
// a config start a reconcile (its own status writes do not); CRDs the profiles depend on
// wake every config; the ApprovalPolicy wakes the configs that execute a plan; targets
// and inputs are watched as plans name them (see watches).
func (r *VirtPlatformConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.throttle()
	// The VM forecast's kind: its arrival or removal changes what the forecasts can say.
	watchedCRDs := map[string]bool{targets.VirtualMachineInstance.CRD: true}
	for _, p := range r.Profiles.All() {
		for _, crd := range p.WatchedCRDs() {
			watchedCRDs[crd] = true
		}
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&advisorv1alpha1.VirtPlatformConfig{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// The ApprovalPolicy says when approvals lapse (expiry.go).
		Watches(&advisorv1alpha1.ApprovalPolicy{}, handler.EnqueueRequestsFromMapFunc(r.executingConfigs)).
		WatchesMetadata(watches.CRDMetadata(), handler.EnqueueRequestsFromMapFunc(r.allConfigs),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return watchedCRDs[o.GetName()] }))).
		Named("virtplatformconfig").
		Build(r)
	if err != nil {
		return err
	}
	r.watches = watches.New(c, mgr.GetCache(), mgr.GetRESTMapper(), rest.CopyConfig(mgr.GetConfig()), mgr.GetHTTPClient(), mgr.GetScheme(),
		mgr.GetLogger().WithName("watches"))
	if err := mgr.Add(r.watches); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(r.releaseOrphanedPauses))
}

// allConfigs wakes every config: a CRD appeared, changed or went away. Watches on its kinds
// start afresh.
func (r *VirtPlatformConfigReconciler) allConfigs(ctx context.Context, crd client.Object) []reconcile.Request {
	r.watches.CRDChanged(crd.GetName())
	list := &advisorv1alpha1.VirtPlatformConfigList{}
	if err := r.Client.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "list VirtPlatformConfigs for a CRD event")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, vpc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vpc)})
	}
	return out
}

// planSpecHash hashes the spec fields a plan depends on: everything but action,
// approvedPlanHash and approvedContent, with the options defaulted so spelling out a default is no change.
func planSpecHash(spec advisorv1alpha1.VirtPlatformConfigSpec, opts *advisorv1alpha1.ProfileOptions) string {
	return plan.HashJSON(struct {
		Profile              advisorv1alpha1.ProfileName     `json:"profile"`
		FailurePolicy        advisorv1alpha1.FailurePolicy   `json:"failurePolicy"`
		BypassOptimisticLock bool                            `json:"bypassOptimisticLock"`
		WaitTimeout          *metav1.Duration                `json:"waitTimeout"`
		Options              *advisorv1alpha1.ProfileOptions `json:"options"`
		Revert               bool                            `json:"revert,omitempty"`
	}{spec.Profile, spec.FailurePolicy, spec.BypassOptimisticLock, spec.WaitTimeout, opts, spec.Revert})
}
