package controller

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch

// recordApprover copies who requested and who approved the plan, as the operator's
// admission policy recorded them in the config's annotations, into status.approval. When the policy or its binding is missing
// (not installed, turned off) nobody's identity was checked: both show "unverified" and the
// condition ApprovalVerified says why.
func (r *VirtPlatformConfigReconciler) recordApprover(ctx context.Context, s *scope) error {
	missing, err := r.identityPolicyMissing(ctx)
	if err != nil {
		return err
	}
	// approvedAt was set when the approval was observed (approvalObserved).
	a := s.approvalStatus()
	cond := metav1.Condition{
		Type:               advisorv1alpha1.ConditionApprovalVerified,
		Status:             metav1.ConditionTrue,
		Reason:             advisorv1alpha1.ReasonPoliciesInstalled,
		Message:            "who requested and who approved the plan were recorded by the admission policy " + advisorv1alpha1.IdentityPolicyName,
		ObservedGeneration: s.vpc.Generation,
	}
	ann := s.vpc.GetAnnotations()
	a.RequestedBy = orUnverified(ann[advisorv1alpha1.RequestedByAnnotation], missing)
	a.ApprovedBy = orUnverified(ann[advisorv1alpha1.ApprovedByAnnotation], missing)
	a.Via = ""
	if missing == "" {
		a.Via = ann[advisorv1alpha1.ApprovedViaAnnotation]
	}
	if a.ApprovedContentHash != "" {
		// The approver approved content, maybe once for a fleet, not this cluster's plan.
		a.Via = strings.TrimPrefix(a.Via+","+advisorv1alpha1.ViaContent, ",")
	}
	if missing != "" || a.ApprovedBy == advisorv1alpha1.Unverified {
		cond.Status, cond.Reason = metav1.ConditionFalse, advisorv1alpha1.ReasonPoliciesMissing
		if missing == "" {
			missing = "the approval was given before the admission policy " + advisorv1alpha1.IdentityPolicyName + " recorded approvals"
		}
		cond.Message = "who requested and who approved this plan is unverified: " + missing +
			". Install the operator's admission policies (dist/install.yaml, or the chart with policies.identity.enable=true) to record them"
	}
	meta.SetStatusCondition(&s.vpc.Status.Conditions, cond)
	return nil
}

// identityPolicyMissing says why the identity policy is not in force, or "" when its
// MutatingAdmissionPolicy and binding exist.
func (r *VirtPlatformConfigReconciler) identityPolicyMissing(ctx context.Context) (string, error) {
	key := client.ObjectKey{Name: advisorv1alpha1.IdentityPolicyName}
	for _, o := range []struct {
		obj  client.Object
		kind string
	}{
		{&admissionv1.MutatingAdmissionPolicyBinding{}, "MutatingAdmissionPolicyBinding"},
		{&admissionv1.MutatingAdmissionPolicy{}, "MutatingAdmissionPolicy"},
	} {
		err := r.APIReader.Get(ctx, key, o.obj)
		switch {
		case err == nil:
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			return fmt.Sprintf("the %s %s does not exist", o.kind, key.Name), nil
		case apierrors.IsForbidden(err):
			return fmt.Sprintf("the operator may not read the %s %s", o.kind, key.Name), nil
		default:
			return "", err
		}
	}
	return "", nil
}

func orUnverified(user, missing string) string {
	if user == "" || missing != "" {
		return advisorv1alpha1.Unverified
	}
	return user
}

// approvedByNote names the approver in the Event of the execution's start.
func (s *scope) approvedByNote() string {
	a := s.approvalStatus()
	if a.ApprovedBy == "" {
		return ""
	}
	note := "; approved by " + a.ApprovedBy
	if a.Via != "" {
		note += " (via " + a.Via + ")"
	}
	if a.RequestedBy != "" && a.RequestedBy != a.ApprovedBy {
		note += ", requested by " + a.RequestedBy
	}
	return note
}
