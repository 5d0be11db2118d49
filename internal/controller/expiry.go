package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=advisor.kubevirt.io,resources=approvalpolicies,verbs=get;list;watch

// An approval lapses when the cluster's ApprovalPolicy sets spec.maxApprovalAge and the
// execution it approved has applied nothing that long after the operator observed it
// (status.approval.approvedAt): a maintenance window, a gate or a busy pool held it. The
// plan then waits for a fresh approval under a new hash (the one given before approves it
// no more, pinned or not). An execution that applied an item goes on whatever its age; drift
// corrections (bypassOptimisticLock) are approved by the spec, not by a person, and never
// lapse. Without the ApprovalPolicy nothing lapses.

// maxApprovalAge is ApprovalPolicy cluster's spec.maxApprovalAge (0: approvals do not
// lapse).
func (r *VirtPlatformConfigReconciler) maxApprovalAge(ctx context.Context) (time.Duration, error) {
	p := &advisorv1alpha1.ApprovalPolicy{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: advisorv1alpha1.ApprovalPolicyName}, p)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read ApprovalPolicy %s: %w", advisorv1alpha1.ApprovalPolicyName, err)
	}
	if p.Spec.MaxApprovalAge == nil {
		return 0, nil
	}
	return p.Spec.MaxApprovalAge.Duration, nil
}

// expireApproval lapses the approval of the execution under way when it is older than the
// policy allows and nothing of the execution is applied; otherwise it notes when it
// would lapse (see wakeForLapse). It tells whether the approval lapsed: the config then
// waits for a fresh one, and the step ends.
func (r *VirtPlatformConfigReconciler) expireApproval(ctx context.Context, s *scope) (bool, error) {
	st := &s.vpc.Status
	a := st.Approval
	if a == nil || a.CorrectionsOnly || a.ApprovedAt == nil || a.ApprovedPlanHash != st.PlanHash || executionStarted(st) {
		return false, nil
	}
	limit, err := r.maxApprovalAge(ctx)
	if err != nil || limit <= 0 {
		return false, err
	}
	age := s.now.Sub(a.ApprovedAt.Time)
	if age < limit {
		s.lapseIn = limit - age
		return false, nil
	}
	held, _ := s.before.Status.ShownReason()
	approved := st.PlanHash
	// The plan gets a new hash: an approval pinned to the one that lapsed, or an Apply of
	// a spec generation it was shown at, approves it no more.
	s.ledger().Rehash()
	s.reviewBeforeApproval()
	r.awaitApproval(s, advisorv1alpha1.ReasonApprovalExpired, fmt.Sprintf(
		"the approval of plan %s lapsed: it was observed %s ago (%s), and ApprovalPolicy %s allows %s (spec.maxApprovalAge); "+
			"its execution had not started (%s), nothing was applied. Review status.items[].diff and approve again",
		approved, age.Round(time.Second), a.ApprovedAt.UTC().Format(time.RFC3339), advisorv1alpha1.ApprovalPolicyName, limit, held))
	s.note(corev1.EventTypeWarning, advisorv1alpha1.ReasonApprovalExpired, "%s", s.message)
	return true, nil
}

// wakeForLapse makes a step that ends with an execution that applied nothing yet look
// again when its approval lapses, if nothing wakes it before.
func wakeForLapse(s *scope, o outcome) outcome {
	if o.next || s.lapseIn <= 0 || s.vpc.Status.Phase != advisorv1alpha1.PhaseInProgress || executionStarted(&s.vpc.Status) {
		return o
	}
	if o.after == 0 || o.after > s.lapseIn {
		o.after = s.lapseIn
	}
	return o
}

// executingConfigs wakes the configs that execute a plan: the ApprovalPolicy changed, and
// with it when their approvals lapse.
func (r *VirtPlatformConfigReconciler) executingConfigs(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &advisorv1alpha1.VirtPlatformConfigList{}
	if err := r.Client.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "list VirtPlatformConfigs for an ApprovalPolicy event")
		return nil
	}
	var out []reconcile.Request
	for _, vpc := range list.Items {
		if vpc.Status.Phase == advisorv1alpha1.PhaseInProgress {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vpc)})
		}
	}
	return out
}
