package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ProfileName names a tuning profile. A VirtPlatformConfig is named after its profile.
// +kubebuilder:validation:Enum=load-aware-rebalancing;virt-higher-density;platform-baseline
type ProfileName string

// The profiles this operator knows.
const (
	ProfileLoadAwareRebalancing ProfileName = "load-aware-rebalancing"
	ProfileVirtHigherDensity    ProfileName = "virt-higher-density"
	ProfilePlatformBaseline     ProfileName = "platform-baseline"
)

// Action is what the operator may do with the plan.
// +kubebuilder:validation:Enum=DryRun;Apply;Ignore
type Action string

const (
	// ActionDryRun drafts the plan and shows it in status; nothing outside the
	// VirtPlatformConfig is written.
	ActionDryRun Action = "DryRun"
	// ActionApply executes the plan (the approval of the plan shown in status).
	ActionApply Action = "Apply"
	// ActionIgnore pauses all work on this config: no plan, no writes, no drift handling.
	ActionIgnore Action = "Ignore"
)

// FailurePolicy decides what happens to the remaining items when one fails.
// +kubebuilder:validation:Enum=Abort;Continue
type FailurePolicy string

const (
	// FailurePolicyAbort stops at the first failed item; later items stay Pending.
	FailurePolicyAbort FailurePolicy = "Abort"
	// FailurePolicyContinue goes on with the next item; the config ends CompletedWithErrors.
	FailurePolicyContinue FailurePolicy = "Continue"
)

// VirtPlatformConfigSpec is what the administrator asks for: a profile, its options, and
// whether the plan may be executed.
// +kubebuilder:validation:XValidation:rule="!has(self.options) || !has(self.options.loadAware) || self.profile == 'load-aware-rebalancing'",message="options.loadAware may only be set when spec.profile is load-aware-rebalancing"
// +kubebuilder:validation:XValidation:rule="!has(self.options) || !has(self.options.virtHigherDensity) || self.profile == 'virt-higher-density'",message="options.virtHigherDensity may only be set when spec.profile is virt-higher-density"
// +kubebuilder:validation:XValidation:rule="!has(self.options) || !has(self.options.platformBaseline) || self.profile == 'platform-baseline'",message="options.platformBaseline may only be set when spec.profile is platform-baseline"
// +kubebuilder:validation:XValidation:rule="!has(self.approvedPlanHash) || !has(self.approvedContent)",message="set spec.approvedPlanHash (this plan on this cluster) or spec.approvedContent (any plan with this content), not both"
type VirtPlatformConfigSpec struct {
	// profile selects the set of changes this config plans and applies. It cannot be
	// changed: delete the config and create the one named after the other profile.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.profile is immutable: delete this VirtPlatformConfig and create the one named after the other profile"
	Profile ProfileName `json:"profile"`

	// action is DryRun (draft and show the plan, change nothing), Apply (execute the plan
	// shown in status) or Ignore (pause: no plan work, no writes, no drift handling).
	// Changing only the action never redrafts the plan.
	// +optional
	// +kubebuilder:default=DryRun
	Action Action `json:"action,omitempty"`

	// approvedPlanHash pins the approval to one exact plan: when set, Apply executes only
	// if it equals status.planHash; otherwise the config stays in ReviewRequired with
	// reason ApprovalMismatch. Copy it from status.planHash after reviewing the diffs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-f0-9]{64}$')",message="spec.approvedPlanHash must be the 64-character lowercase hex value of status.planHash"
	ApprovedPlanHash string `json:"approvedPlanHash,omitempty"`

	// approvedContent pins the approval to a plan's content instead of one plan: with Apply,
	// any plan whose status.contentHash equals approvedContent.hash executes, on this
	// cluster or any other, through the same gate, stale-plan check, batching, gates and
	// forecast as a local approval; a drift correction, which restores exactly that content,
	// needs no new approval. A plan with other content waits in ReviewRequired with reason
	// ContentMismatch; with approvedContent.items (copy the whole status.content of the
	// reviewed cluster) its message names the items that differ. A plan with field
	// conflicts still needs a local approval (spec.approvedPlanHash). Not together with
	// approvedPlanHash.
	// +optional
	ApprovedContent *PlanContent `json:"approvedContent,omitempty"`

	// failurePolicy decides what a failed item does to the rest of the plan: Abort stops
	// (later items stay Pending, phase Failed); Continue goes on (phase CompletedWithErrors).
	// +optional
	// +kubebuilder:default=Abort
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// bypassOptimisticLock is the aggressive mode: the plan is applied even when a target
	// changed since review, and drift is corrected by re-applying, throttled per target.
	// +optional
	// +kubebuilder:default=false
	BypassOptimisticLock bool `json:"bypassOptimisticLock,omitempty"`

	// waitTimeout bounds how long one item may wait to become healthy after it is applied
	// (for a MachineConfig: the rollout of its MachineConfigPool), between 1m and 168h,
	// e.g. "90m". When unset the operator waits until the rollout finishes or degrades.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="spec.waitTimeout must be a duration between 1m and 168h, such as 45m or 2h30m"
	WaitTimeout *metav1.Duration `json:"waitTimeout,omitempty"`

	// options tunes the selected profile. Only the block named after spec.profile may be
	// set; fields left out take their defaults.
	// +optional
	Options *ProfileOptions `json:"options,omitempty"`

	// maintenanceWindow, when set, lets the items that roll out to nodes (MachineConfigs
	// and KubeletConfigs: drains and reboots) start only inside a window. The items before
	// them are not held; a rollout that started runs to its end.
	// +optional
	MaintenanceWindow *MaintenanceWindow `json:"maintenanceWindow,omitempty"`

	// revert, when true, asks for the revert plan instead of the profile's plan: it puts
	// back what this config's executions changed (status.replaced), deletes the objects
	// they created and hands back the fields they own. The revert plan is shown for review
	// like any plan and runs only on an approval given after it was shown. Setting it back
	// to false drafts the profile's plan again, for review.
	// +optional
	// +kubebuilder:default=false
	Revert bool `json:"revert,omitempty"`
}

// MaintenanceWindow is a recurring time span in which disruptive changes may start.
type MaintenanceWindow struct {
	// schedule is when each window starts, in the five-field cron syntax (minute hour
	// day-of-month month day-of-week, e.g. "0 22 * * 1-5" for weekdays at 22:00) or a
	// macro such as @daily or @weekly.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ ]+( +[^ ]+){4})$')",message="spec.maintenanceWindow.schedule must be five cron fields (minute hour day-of-month month day-of-week), e.g. \"0 22 * * 1-5\", or a macro such as @daily"
	Schedule string `json:"schedule"`

	// duration is how long each window stays open after it starts, between 1m and 168h,
	// e.g. "4h".
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="spec.maintenanceWindow.duration must be a duration between 1m and 168h, such as 4h"
	Duration metav1.Duration `json:"duration"`

	// timeZone is the IANA time zone the schedule is read in, e.g. "Europe/Berlin".
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// Phase is where a config is in its life cycle.
// +kubebuilder:validation:Enum=Pending;Drafting;ReviewRequired;InProgress;Completed;CompletedWithErrors;CompletedWithUpgrade;Drifted;Failed;PrerequisiteFailed;Ignored;Reverted
type Phase string

// The phases of a VirtPlatformConfig.
const (
	PhasePending              Phase = "Pending"
	PhaseDrafting             Phase = "Drafting"
	PhaseReviewRequired       Phase = "ReviewRequired"
	PhaseInProgress           Phase = "InProgress"
	PhaseCompleted            Phase = "Completed"
	PhaseCompletedWithErrors  Phase = "CompletedWithErrors"
	PhaseCompletedWithUpgrade Phase = "CompletedWithUpgrade"
	PhaseDrifted              Phase = "Drifted"
	PhaseFailed               Phase = "Failed"
	PhasePrerequisiteFailed   Phase = "PrerequisiteFailed"
	PhaseIgnored              Phase = "Ignored"
	PhaseReverted             Phase = "Reverted"
)

// ImpactSeverity rates the disruption of a change: Low (no workload effect), Medium
// (components restart or workloads move), High (nodes reboot).
// +kubebuilder:validation:Enum=Low;Medium;High
type ImpactSeverity string

// The impact severities, from least to most disruptive.
const (
	ImpactLow    ImpactSeverity = "Low"
	ImpactMedium ImpactSeverity = "Medium"
	ImpactHigh   ImpactSeverity = "High"
)

// ItemAction is what executing an item does to its target.
// +kubebuilder:validation:Enum=Apply;Release;Restore;Delete
type ItemAction string

// ChangeKind is what applying an item changes on its target.
// +kubebuilder:validation:Enum=None;OwnershipOnly;Values
type ChangeKind string

const (
	// ChangeNone: the target already holds the planned values, owned by the profile.
	ChangeNone ChangeKind = "None"
	// ChangeOwnershipOnly: the target holds the planned values; applying only makes the
	// profile a co-owner of them.
	ChangeOwnershipOnly ChangeKind = "OwnershipOnly"
	// ChangeValues: applying changes values of the target (or creates it).
	ChangeValues ChangeKind = "Values"
)

const (
	// ItemActionApply server-side applies the item's desired state.
	ItemActionApply ItemAction = "Apply"
	// ItemActionRelease hands back the fields an earlier plan applied to a target that is no
	// longer part of the plan: the target keeps its values, the operator stops managing and
	// watching it.
	ItemActionRelease ItemAction = "Release"
	// ItemActionRestore (revert plans) puts back the values an execution replaced on a
	// target that existed before it (status.replaced), removes the fields it added, and
	// hands back the profile's fields.
	ItemActionRestore ItemAction = "Restore"
	// ItemActionDelete (revert plans) deletes a target an execution created, when no other
	// field manager shares the fields the profile set on it.
	ItemActionDelete ItemAction = "Delete"
)

// ItemState is how far one plan item got.
// +kubebuilder:validation:Enum=Pending;InProgress;Completed;Failed;Skipped
type ItemState string

// The states of a plan item.
const (
	ItemPending    ItemState = "Pending"
	ItemInProgress ItemState = "InProgress"
	ItemCompleted  ItemState = "Completed"
	ItemFailed     ItemState = "Failed"
	ItemSkipped    ItemState = "Skipped"
)

// Condition types. Exactly the conditions that hold are True; Ready is the summary.
const (
	ConditionDrafting           = "Drafting"
	ConditionReviewRequired     = "ReviewRequired"
	ConditionInProgress         = "InProgress"
	ConditionCompleted          = "Completed"
	ConditionDrifted            = "Drifted"
	ConditionFailed             = "Failed"
	ConditionPrerequisiteFailed = "PrerequisiteFailed"
	ConditionIgnored            = "Ignored"
	ConditionUpgradeAvailable   = "UpgradeAvailable"
	ConditionReverted           = "Reverted"
	ConditionReady              = "Ready"
	// ConditionReconciling (kstatus) is True while the operator moves the config on by
	// itself: drafting, executing, correcting drift.
	ConditionReconciling = "Reconciling"
	// ConditionStalled (kstatus) is True while the config cannot move on until someone acts:
	// a plan waits for approval under action Apply, an item or the plan failed, a
	// prerequisite is missing, or drift waits for an approved correction.
	ConditionStalled = "Stalled"
)

// TargetReference identifies the object a plan item writes.
type TargetReference struct {
	// apiVersion of the target, e.g. operator.openshift.io/v1.
	APIVersion string `json:"apiVersion"`
	// kind of the target, e.g. KubeDescheduler.
	Kind string `json:"kind"`
	// name of the target.
	Name string `json:"name"`
	// namespace of the target; empty for cluster-scoped kinds.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// PlanItem is one change of the plan: one target object, what will be applied to it and
// how far it got.
type PlanItem struct {
	// name identifies the item within the plan, e.g. enable-load-aware-descheduling.
	Name string `json:"name"`
	// targetRef is the object this item writes.
	TargetRef TargetReference `json:"targetRef"`
	// impactSeverity is the disruption applying this item causes.
	// +optional
	ImpactSeverity ImpactSeverity `json:"impactSeverity,omitempty"`
	// diff is the unified diff between the live object and the server-side-apply dry-run
	// of desiredState ("--- /dev/null" when the object will be created; "(no changes)"
	// when it already matches).
	// +optional
	Diff string `json:"diff,omitempty"`
	// change says what applying the item changes on its target: None (the target already
	// holds the planned values, owned by this profile), OwnershipOnly (the values are as
	// planned; applying makes this profile a co-owner of them), or Values.
	// +optional
	Change ChangeKind `json:"change,omitempty"`
	// desiredState is the exact object that is applied (server-side apply, field manager
	// virt-advisor-operator): only the fields the operator manages.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	DesiredState *runtime.RawExtension `json:"desiredState,omitempty"`
	// managedFields lists the paths desiredState sets, e.g. spec.profiles. Drift and the
	// optimistic lock look only at these.
	// +optional
	// +listType=atomic
	ManagedFields []string `json:"managedFields,omitempty"`
	// snapshotHash is the SHA-256 of the target's values at managedFields when the plan
	// was drafted (or as this item left them after applying): execution refuses the item
	// if somebody changed the target since.
	// +optional
	SnapshotHash string `json:"snapshotHash,omitempty"`
	// state is how far this item got: Pending, InProgress (applied, waiting to become
	// healthy), Completed, Failed or Skipped.
	// +optional
	State ItemState `json:"state,omitempty"`
	// message explains the state in words: what will change, what is awaited, what failed
	// and what to do about it.
	// +optional
	Message string `json:"message,omitempty"`
	// healthBaseline is what operators before the content-based rollout check recorded
	// before an apply (the rendered configuration each pool targeted then). It is no longer
	// written: a rollout is judged by what the pool's nodes run (see status.rollouts).
	// +optional
	HealthBaseline string `json:"healthBaseline,omitempty"`
	// lastTransitionTime is when state last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// action is Apply (the default: server-side apply desiredState) or Release (the item
	// left the plan: approving it hands back the fields an earlier plan applied, leaving
	// their values as they are).
	// +optional
	Action ItemAction `json:"action,omitempty"`
	// components are the parts of the profile whose changes this item carries, when
	// several write the same target (one item per target).
	// +optional
	// +listType=atomic
	Components []string `json:"components,omitempty"`
	// targetHash is the SHA-256 of the values at managedFields that applying the item leaves
	// on the target (from the dry-run). A target that already holds them needs no write.
	// +optional
	TargetHash string `json:"targetHash,omitempty"`
	// controlsHash is the SHA-256 of the target's user-control annotations
	// (advisor.kubevirt.io/mode, ignore-fields, patch) when the item was drafted: changing
	// them redrafts the plan.
	// +optional
	ControlsHash string `json:"controlsHash,omitempty"`
	// conflicts are fields the item sets that another field manager (another controller, a
	// GitOps tool, another profile) owns with a different value. Applying the approved plan
	// takes them over; nothing is taken before that approval.
	// +optional
	// +listType=atomic
	Conflicts []FieldConflict `json:"conflicts,omitempty"`
	// conflictsFoundOn is the resourceVersion of the target the conflicts were found on.
	// An apply to that same version takes over exactly those fields.
	// +optional
	ConflictsFoundOn string `json:"conflictsFoundOn,omitempty"`
	// ignoredFields are the JSON pointers the target's advisor.kubevirt.io/ignore-fields
	// annotation hands to the user: left out of desiredState's managed paths, the diff and
	// drift.
	// +optional
	// +listType=atomic
	IgnoredFields []string `json:"ignoredFields,omitempty"`
	// applied records what the item last applied to its target; drift is judged against
	// it in every phase after an apply.
	// +optional
	Applied *AppliedRecord `json:"applied,omitempty"`
	// waitingSince is when the current wait for the item to take effect began: its apply,
	// or the resume of a paused execution. waitTimeout counts from here.
	// +optional
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`
}

// FieldConflict is a field the plan sets that another field manager owns with another value.
type FieldConflict struct {
	// path of the field, e.g. spec.mode.
	Path string `json:"path"`
	// manager is the field manager that owns it, e.g. argocd-controller.
	Manager string `json:"manager"`
	// liveValue is the field's current value, as JSON.
	// +optional
	LiveValue string `json:"liveValue,omitempty"`
	// plannedValue is the value the plan sets, as JSON.
	// +optional
	PlannedValue string `json:"plannedValue,omitempty"`
}

// AppliedRecord is what one item left on its target.
type AppliedRecord struct {
	// fields are the managed paths the apply set.
	// +listType=atomic
	Fields []string `json:"fields"`
	// hash is the SHA-256 of the values at fields right after the apply.
	Hash string `json:"hash"`
	// planHash is the status.planHash of the approved plan the apply belonged to.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// desiredHash is the SHA-256 of the desired state that was applied: a plan item whose
	// desired state hashes differently proposes a change (an upgrade or input change).
	// +optional
	DesiredHash string `json:"desiredHash,omitempty"`
	// time is when the apply happened.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// ApprovalStatus records what approves the plan in status and what approved the execution.
// The operator decides from these fields only, never from a condition's reason.
type ApprovalStatus struct {
	// required is true while the plan in status waits for an approval.
	// +optional
	Required bool `json:"required,omitempty"`
	// minGeneration is the lowest metadata.generation whose spec.action Apply approves the
	// plan in status. A plan the operator drafted on its own (a target changed after review,
	// drift, an input change, an operator upgrade, the retry of a failed item) is approved
	// only by a spec change made after it was shown. spec.approvedPlanHash equal to
	// status.planHash approves exactly that plan.
	// +optional
	MinGeneration int64 `json:"minGeneration,omitempty"`
	// operatorDrafted is true when the operator drafted the plan in status on its own; when it
	// is shown, minGeneration moves past the generation it is shown at, so only an approval
	// given after it was shown approves it, however long its draft took.
	// +optional
	OperatorDrafted bool `json:"operatorDrafted,omitempty"`
	// cause is why the operator drafted the plan on its own (PlanStale, DriftDetected,
	// InputDependencyDrift, UpgradeAvailable, ItemFailed), shown as the reason of the
	// condition that asks for the approval, also when the draft was interrupted.
	// +optional
	Cause string `json:"cause,omitempty"`
	// command is the exact command that approves the plan shown, when one is required.
	// +optional
	Command string `json:"command,omitempty"`
	// approvedPlanHash is the planHash the current (or last) execution was approved for.
	// +optional
	ApprovedPlanHash string `json:"approvedPlanHash,omitempty"`
	// approvedContentHash is the content hash spec.approvedContent approved the current (or
	// last) execution with; empty for an approval of the plan itself.
	// +optional
	ApprovedContentHash string `json:"approvedContentHash,omitempty"`
	// approvedGeneration is the metadata.generation whose spec gave that approval.
	// +optional
	ApprovedGeneration int64 `json:"approvedGeneration,omitempty"`
	// correctionsOnly is true when the current (or last) execution was started by
	// spec.bypassOptimisticLock to correct drift, not by a review: it writes only items that
	// restore exactly what an earlier approved execution applied, never an item that
	// proposes something new (an operator upgrade, a retry of a failed item).
	// +optional
	CorrectionsOnly bool `json:"correctionsOnly,omitempty"`
	// requestedBy is the user who last changed what the approved plan was drafted from, as
	// the operator's admission policy recorded it; "unverified" when none did.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// approvedBy is the user who approved the current (or last) execution, as the
	// operator's admission policy recorded it; "unverified" when none did.
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`
	// approvedAt is when the operator observed that approval (its own clock).
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
	// via is "gitops" for an approval by an account ApprovalPolicy.spec.gitOpsApprovers names,
	// "content" for an approval of the plan's content (spec.approvedContent), which may
	// have been given once for a fleet; "gitops,content" for both.
	// +optional
	Via string `json:"via,omitempty"`
}

// DriftCorrectionStatus is the state of automatic drift correction (bypassOptimisticLock).
type DriftCorrectionStatus struct {
	// stoppedAtGeneration is set when corrections were throttled three times in a row
	// (Thrashing): they stay stopped while metadata.generation is this one.
	// +optional
	StoppedAtGeneration int64 `json:"stoppedAtGeneration,omitempty"`
	// message says what kept changing.
	// +optional
	Message string `json:"message,omitempty"`
}

// InputReference names an object a plan was rendered from without writing it, such as
// the HyperConverged whose live-migration limits cap the descheduler's evictions.
type InputReference struct {
	// apiVersion of the input.
	APIVersion string `json:"apiVersion"`
	// kind of the input.
	Kind string `json:"kind"`
	// namespace of the input; empty for cluster-scoped kinds or a list across namespaces.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the input; empty when the plan read every object of the kind.
	// +optional
	Name string `json:"name,omitempty"`
}

// VirtPlatformConfigStatus is what the operator planned, did and observes.
type VirtPlatformConfigStatus struct {
	// phase is where the config is in its life cycle.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// observedGeneration is the metadata.generation the operator last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Drafting, ReviewRequired, InProgress, Completed, Drifted, Failed,
	// PrerequisiteFailed, Ignored, UpgradeAvailable, Reverted, the Ready summary (True iff
	// the plan is completed and the targets are in sync), and the kstatus pair read by Flux
	// and other kstatus clients: Reconciling (True while the operator moves the config on by
	// itself) and Stalled (True while it waits for someone: an approval under action Apply,
	// a failure, a missing prerequisite, drift without an approved correction).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// impactSeverity is the highest impact of the plan's items.
	// +optional
	ImpactSeverity ImpactSeverity `json:"impactSeverity,omitempty"`
	// planHash is the SHA-256 of the plan's revision, desired states and diffs; copy it into
	// spec.approvedPlanHash to pin an approval to this exact plan.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// planRevision counts the plans drafted for this config; every plan shown has its own,
	// so an approval pinned to one plan never approves a later one.
	// +optional
	PlanRevision int64 `json:"planRevision,omitempty"`
	// contentHash is the SHA-256 of what the plan would write, independent of this cluster
	// (status.content.hash, see PlanContent): clusters whose plans have the same content
	// hash can share one approval through spec.approvedContent, while planHash stays this
	// cluster's own.
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
	// content is that content item by item: copy it into spec.approvedContent of the
	// clusters to approve it on, so that one whose plan differs names the items that do.
	// +optional
	Content *PlanContent `json:"content,omitempty"`
	// history is the last executions, newest first: one entry per execution that applied
	// something, added when it applies its first item and completed when it ends. At most
	// 10 (an entry is about 300 bytes, and the whole object travels with every status
	// write and watch event). Not part of the plan or its hash.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []Execution `json:"history,omitempty"`
	// approval records what approves the plan shown and what approved the execution.
	// +optional
	Approval *ApprovalStatus `json:"approval,omitempty"`
	// fieldManager is the server-side-apply field manager of this profile: it owns exactly
	// the fields the plan applies.
	// +optional
	FieldManager string `json:"fieldManager,omitempty"`
	// inputs are the objects the plan was rendered from without writing them; a change of
	// one that changes the plan redrafts it (reason InputDependencyDrift).
	// +optional
	// +listType=atomic
	Inputs []InputReference `json:"inputs,omitempty"`
	// inputsHash is the SHA-256 of what the plan read from its inputs (and of the
	// user-control annotations of its targets).
	// +optional
	InputsHash string `json:"inputsHash,omitempty"`
	// driftCorrection is the state of automatic drift correction (bypassOptimisticLock).
	// +optional
	DriftCorrection *DriftCorrectionStatus `json:"driftCorrection,omitempty"`
	// sourceSnapshotHash is the SHA-256 of the live values the plan would change (absent
	// targets and fields included) when it was drafted: the optimistic lock.
	// +optional
	SourceSnapshotHash string `json:"sourceSnapshotHash,omitempty"`
	// planSpecHash is the SHA-256 of the spec the plan was drafted from, leaving out
	// action, approvedPlanHash and approvedContent: any other spec change redrafts the plan.
	// +optional
	PlanSpecHash string `json:"planSpecHash,omitempty"`
	// operatorVersion is the version of the operator that drafted the plan.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// appliedOptions are the profile options the plan was drafted with, defaults filled in.
	// +optional
	AppliedOptions *ProfileOptions `json:"appliedOptions,omitempty"`
	// itemsSummary counts completed items against the items that apply (all but the
	// Skipped ones), e.g. 2/3.
	// +optional
	ItemsSummary string `json:"itemsSummary,omitempty"`
	// items are the plan's changes, one per name, executed in this order except that the
	// items that roll out to nodes run together as one batch (see rollouts).
	// +optional
	// +listType=map
	// +listMapKey=name
	Items []PlanItem `json:"items,omitempty"`
	// disruption sums up rollouts for humans: which nodes reboot how often, in how many
	// waves, e.g. "reboots 6 worker nodes once, in 6 waves".
	// +optional
	Disruption string `json:"disruption,omitempty"`
	// rollouts forecast, per MachineConfigPool, what approving the plan does to the pool's
	// nodes, and track the pool's batch while the plan executes.
	// +optional
	// +listType=map
	// +listMapKey=pool
	Rollouts []PoolRollout `json:"rollouts,omitempty"`
	// replaced records, per target, what the executions of this config replaced: written
	// before each apply, from the target as the operator read it. A revert plan is drafted
	// from it.
	// +optional
	// +listType=atomic
	Replaced []ReplacedRecord `json:"replaced,omitempty"`
}

// ReplacedRecord is what the executions of a config replaced on one target.
type ReplacedRecord struct {
	// targetRef is the target.
	TargetRef TargetReference `json:"targetRef"`
	// created is true when the target did not exist right before a write of this config,
	// which creates it (also after an object recorded here before was deleted: its
	// absence is what a revert goes back to). The revert deletes the object uid names
	// (or, when another field manager shares its fields, hands it back), and no other.
	// +optional
	Created bool `json:"created,omitempty"`
	// uid is the UID of the object a write of this config created. Unset while no write
	// is known to have created it (the write may have been lost, refused, or cut off by
	// a restart): an object found there later counts as created by this profile's write
	// only when no other field manager owns a field of it; any other object was created
	// by someone else, and the record becomes that of a target that existed, with the
	// values the object holds then.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// fields are the managed paths the applies set on a target that existed, each with the
	// value it had before the first apply that set it.
	// +optional
	// +listType=atomic
	Fields []ReplacedField `json:"fields,omitempty"`
}

// ReplacedField is the value a managed path had before the profile first set it.
type ReplacedField struct {
	// path is the managed path, e.g. spec.profiles.
	Path string `json:"path"`
	// value is the previous value as JSON; unset when the field was absent.
	// +optional
	Value string `json:"value,omitempty"`
	// absent is true when the target had no such field: the revert removes it.
	// +optional
	Absent bool `json:"absent,omitempty"`
	// managers are the field managers that owned the field before.
	// +optional
	// +listType=atomic
	Managers []string `json:"managers,omitempty"`
	// appliedHash is the SHA-256 of the value the last apply set: a field whose value
	// hashes differently was changed since, and its revert is shown as a conflict.
	// +optional
	AppliedHash string `json:"appliedHash,omitempty"`
}

// PauseState is how a batch holds a MachineConfigPool's pause.
// +kubebuilder:validation:Enum=Pausing;Paused;Shared;External;Resuming;Resumed
type PauseState string

const (
	// PausePausing: the operator is about to pause the pool (recorded before the write).
	PausePausing PauseState = "Pausing"
	// PausePaused: the operator paused the pool for this batch.
	PausePaused PauseState = "Paused"
	// PauseShared: the pool was paused by the operator for another config's batch; this
	// batch holds the pause too.
	PauseShared PauseState = "Shared"
	// PauseExternal: somebody else paused the pool; the operator never resumes it, and the
	// rollout waits until it is resumed.
	PauseExternal PauseState = "External"
	// PauseResuming: the operator is about to resume the pool (recorded before the write).
	PauseResuming PauseState = "Resuming"
	// PauseResumed: the batch no longer holds the pool's pause.
	PauseResumed PauseState = "Resumed"
)

// PoolRollout is the disruption forecast of one MachineConfigPool, and its batch.
type PoolRollout struct {
	// pool is the MachineConfigPool.
	Pool string `json:"pool"`
	// items are the plan's items that make this pool render a new configuration.
	// +optional
	// +listType=atomic
	Items []string `json:"items,omitempty"`
	// nodes is the pool's machine count when the plan was drafted.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// maxUnavailable is the pool's maxUnavailable (default 1).
	// +optional
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
	// waves is how many rounds of at most maxUnavailable nodes the rollout takes.
	// +optional
	Waves int32 `json:"waves,omitempty"`
	// reboot tells whether the pool's nodes reboot; reasons say why (or why not).
	// +optional
	Reboot bool `json:"reboot,omitempty"`
	// reasons say what the change does on the nodes, e.g. "kernel arguments change".
	// +optional
	// +listType=atomic
	Reasons []string `json:"reasons,omitempty"`
	// pause tells whether the operator pauses the pool while it applies the items, so
	// that the pool rolls them out once (approved with the plan).
	// +optional
	Pause bool `json:"pause,omitempty"`
	// estimatedDuration is the time the rollout is expected to take, from the time per
	// node measured in an earlier rollout of this pool, or "unknown".
	// +optional
	EstimatedDuration string `json:"estimatedDuration,omitempty"`
	// pauseState is how the executing batch holds the pool's pause.
	// +optional
	PauseState PauseState `json:"pauseState,omitempty"`
	// pausedAt is when the operator paused the pool for this batch.
	// +optional
	PausedAt *metav1.Time `json:"pausedAt,omitempty"`
	// rolloutStartedAt is when the pool started rolling the batch out (its resume).
	// +optional
	RolloutStartedAt *metav1.Time `json:"rolloutStartedAt,omitempty"`
	// secondsPerNode is the time per node measured when the batch's rollout finished.
	// +optional
	SecondsPerNode int64 `json:"secondsPerNode,omitempty"`
	// vms is what draining the pool's nodes does to the virtual machines on them; absent
	// when the rollout drains no node. Refreshed as VMs move, and not part of
	// status.planHash.
	// +optional
	VMs *VMForecast `json:"vms,omitempty"`
	// vmsActual is what the rollout did to the virtual machines, recorded when it
	// finished, beside what vms forecast.
	// +optional
	VMsActual *VMActual `json:"vmsActual,omitempty"`
}

// VirtPlatformConfig turns on one tuning profile of OpenShift Virtualization safely: the
// operator drafts a plan of server-side-apply changes with real diffs, executes it when
// spec.action is Apply, and watches the targets for drift. Its name is its profile.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=vpc
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profile`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Impact",type=string,JSONPath=`.status.impactSeverity`
// +kubebuilder:printcolumn:name="Items",type=string,JSONPath=`.status.itemsSummary`
// +kubebuilder:printcolumn:name="Disruption",type=string,JSONPath=`.status.disruption`
// +kubebuilder:printcolumn:name="Approved-By",type=string,JSONPath=`.status.approval.approvedBy`,priority=1
// +kubebuilder:printcolumn:name="Content",type=string,JSONPath=`.status.contentHash`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.profile",message="metadata.name must equal spec.profile: there is one VirtPlatformConfig per profile, named after it"
type VirtPlatformConfig struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata; the name must equal spec.profile.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired profile, its options and the action.
	// +required
	Spec VirtPlatformConfigSpec `json:"spec"`

	// status is the plan and its progress. Only the operator writes it; the API server
	// records one field owner for the whole status (an atomic struct) instead of one per
	// field and condition, which makes every write of the config cheaper to process.
	// +optional
	// +structType=atomic
	Status VirtPlatformConfigStatus `json:"status,omitempty"`
}

// VirtPlatformConfigList is a list of VirtPlatformConfig.
// +kubebuilder:object:root=true
type VirtPlatformConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the configs.
	Items []VirtPlatformConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VirtPlatformConfig{}, &VirtPlatformConfigList{})
}
