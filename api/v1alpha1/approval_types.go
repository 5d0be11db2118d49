package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The records of who asked for a plan and who approved it. The operator's admission
// policies write them on the VirtPlatformConfig from the request's userInfo; a user cannot
// set or change them.
const (
	// RequestedByAnnotation is the user who last changed what the plan is drafted from (the
	// spec apart from action and approvedPlanHash; a revert request counts as a change).
	RequestedByAnnotation = "advisor.kubevirt.io/requested-by"
	// ApprovedByAnnotation is the user who last approved: set spec.action to Apply, or
	// changed spec.approvedPlanHash.
	ApprovedByAnnotation = "advisor.kubevirt.io/approved-by"
	// ApprovedViaAnnotation says how the approval was let through: "gitops" for an
	// account ApprovalPolicy.spec.gitOpsApprovers names, which approved its own change.
	ApprovedViaAnnotation = "advisor.kubevirt.io/approved-via"

	// ApprovedViaGitOps is ApprovedViaAnnotation's value for a GitOps approval.
	ApprovedViaGitOps = "gitops"
	// Unverified is what status.approval shows for an identity no policy recorded.
	Unverified = "unverified"
	// ApprovalPolicyName is the name of the one ApprovalPolicy the operator and its
	// admission policies read.
	ApprovalPolicyName = "cluster"
	// MaxHistory is how many executions status.history keeps. An entry takes about 300
	// bytes; ten keep the audit trail to a few kilobytes of a config whose plan (desired
	// states, diffs, what each apply replaced) already makes it large, and every status
	// write and watch event carries the whole object. Older executions are in the Events
	// while they last, and in whatever archives them.
	MaxHistory = 10
)

// ApprovalPolicySpec is how the cluster wants plans approved.
type ApprovalPolicySpec struct {
	// fourEyes refuses an approval by the user who last changed what the plan is drafted
	// from (the requested-by record), unless gitOpsApprovers names that user.
	// +optional
	FourEyes bool `json:"fourEyes,omitempty"`
	// gitOpsApprovers are the accounts (user names, e.g.
	// system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller)
	// that apply both a spec and its approval from Git, where the change was reviewed in a
	// pull request: under fourEyes they may approve their own change, and the approval is
	// recorded as a GitOps one.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	GitOpsApprovers []string `json:"gitOpsApprovers,omitempty"`
	// maxApprovalAge makes an approval lapse when its execution has not started that long
	// after the operator observed it (a maintenance window, a gate or a paused pool held
	// it): the config returns to ReviewRequired, to be approved again.
	// +optional
	MaxApprovalAge *metav1.Duration `json:"maxApprovalAge,omitempty"`
}

// ApprovalPolicy is the cluster's policy for approving VirtPlatformConfig plans. There is
// at most one, named cluster; only a cluster administrator may change it (no role the
// operator ships grants it).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Four-Eyes",type=boolean,JSONPath=`.spec.fourEyes`
// +kubebuilder:printcolumn:name="Max-Approval-Age",type=string,JSONPath=`.spec.maxApprovalAge`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="the ApprovalPolicy must be named cluster: there is one per cluster"
type ApprovalPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata; the name must be cluster.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// spec is the policy.
	// +optional
	Spec ApprovalPolicySpec `json:"spec,omitempty"`
}

// ApprovalPolicyList is a list of ApprovalPolicy.
// +kubebuilder:object:root=true
type ApprovalPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the policies.
	Items []ApprovalPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ApprovalPolicy{}, &ApprovalPolicyList{})
}

// Execution is one execution of a plan, as status.history keeps it.
type Execution struct {
	// planHash is the plan executed.
	PlanHash string `json:"planHash"`
	// profile is the profile the plan was drafted from.
	// +optional
	Profile ProfileName `json:"profile,omitempty"`
	// requestedBy, approvedBy, approvedAt and via are the approval (see ApprovalStatus).
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
	// +optional
	Via string `json:"via,omitempty"`
	// startedAt is when the first item was applied; finishedAt when the execution ended.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// outcome is the phase the execution ended in (Completed, CompletedWithErrors, Failed,
	// ...); empty while it runs.
	// +optional
	Outcome Phase `json:"outcome,omitempty"`
	// reboots is the number of node reboots the execution's rollouts made.
	// +optional
	Reboots int32 `json:"reboots,omitempty"`
	// vmMigrations is the number of VM live migrations its rollouts made, where counted
	// (status.rollouts[].vmsActual).
	// +optional
	VMMigrations *int32 `json:"vmMigrations,omitempty"`
}

// The condition that says whether status.approval's identities were recorded by the
// operator's admission policies.
const (
	// ConditionApprovalVerified is True when the admission policy that records who
	// requested and approved a plan was in place when the operator observed the approval,
	// False (reason PoliciesMissing) when status.approval shows "unverified".
	ConditionApprovalVerified = "ApprovalVerified"
	// ReasonPoliciesInstalled: the identity policy and its binding exist.
	ReasonPoliciesInstalled = "PoliciesInstalled"
	// ReasonPoliciesMissing: the identity policy or its binding is missing (not installed,
	// or turned off), so nobody's identity could be checked.
	ReasonPoliciesMissing = "PoliciesMissing"
	// IdentityPolicyName is the name of the MutatingAdmissionPolicy (and its binding) that
	// records the identities, as dist/install.yaml and the chart install it.
	IdentityPolicyName = "virt-advisor-operator-approval-identity"
)
