package v1alpha1

// Condition reasons. The condition that carries a phase (see the conditions list on
// VirtPlatformConfigStatus) has one of these reasons; conditions that do not hold carry
// the name of the current phase as their reason. The operator never decides anything
// from a reason: what must survive a restart is a typed status field (status.approval,
// status.driftCorrection, status.items[]).
const (
	// ReasonCreated: the config is new; the operator drafts its first plan.
	ReasonCreated = "Created"
	// ReasonResumed: spec.action left Ignore; a fresh plan is drafted.
	ReasonResumed = "Resumed"
	// ReasonDrafting: the plan is being drafted for the current spec.
	ReasonDrafting = "Drafting"
	// ReasonSpecChanged: a spec field other than action and approvedPlanHash changed, so
	// the plan is drafted again (rule 1).
	ReasonSpecChanged = "SpecChanged"
	// ReasonPrerequisitesRechecked: a missing prerequisite may have arrived; the plan is
	// drafted again.
	ReasonPrerequisitesRechecked = "PrerequisitesRechecked"
	// ReasonRetry: the spec was touched after a refused plan; the plan is drafted again.
	ReasonRetry = "Retry"

	// ReasonAwaitingApproval: the plan is shown in status.items and waits for
	// spec.action Apply.
	ReasonAwaitingApproval = "AwaitingApproval"

	// ReasonFieldConflicts: the plan takes over fields another profile of this operator
	// set to other values. Such a plan is never executed on an Apply given before it was
	// shown, even one the config was created with: it waits for an approval given after
	// the review.
	ReasonFieldConflicts = "FieldConflicts"
	// ReasonApprovalMismatch: spec.approvedPlanHash is not status.planHash; the plan shown
	// is not the one that was approved.
	ReasonApprovalMismatch = "ApprovalMismatch"
	// ReasonContentMismatch: spec.approvedContent.hash is not status.contentHash; this
	// cluster's plan would write other content than the approved one, and is not executed.
	ReasonContentMismatch = "ContentMismatch"
	// ReasonPlanStale: a target changed after the plan was reviewed; the plan was drafted
	// again and needs a fresh approval (rule 4).
	ReasonPlanStale = "PlanStale"
	// ReasonInputDependencyDrift: an object the plan was rendered from (not one it
	// writes) changed after the plan was applied or reviewed, and the plan rendered now
	// differs; it needs a fresh approval.
	ReasonInputDependencyDrift = "InputDependencyDrift"
	// ReasonPaused: spec.action was set away from Apply during execution; execution stops
	// before its next step and resumes on Apply.
	ReasonPaused = "Paused"
	// ReasonApprovalExpired: the approval is older than ApprovalPolicy spec.maxApprovalAge
	// and its execution had not started (nothing was applied: a maintenance window, a gate
	// or a busy pool held it); the plan waits for a fresh approval under a new hash.
	ReasonApprovalExpired = "ApprovalExpired"

	// ReasonExecuting: the approved plan is being applied, item by item.
	ReasonExecuting = "Executing"
	// ReasonAwaitingRollout: every target already matches the plan, but a
	// MachineConfigPool does not run it on all its nodes yet: the config waits for the
	// rollout before it says Completed.
	ReasonAwaitingRollout = "AwaitingRollout"
	// ReasonAwaitingMaintenanceWindow: the items that roll out to nodes wait for the next
	// window of spec.maintenanceWindow (its start is in the message).
	ReasonAwaitingMaintenanceWindow = "AwaitingMaintenanceWindow"
	// ReasonAwaitingClusterUpgrade: the items that roll out to nodes wait until the
	// cluster upgrade in flight ends (ClusterVersion version Progressing).
	ReasonAwaitingClusterUpgrade = "AwaitingClusterUpgrade"
	// ReasonAwaitingPool: the items that roll out to nodes wait until a MachineConfigPool
	// they roll out in is no longer Updating or Degraded from another change, or is resumed
	// by whoever paused it.
	ReasonAwaitingPool = "AwaitingPool"
	// ReasonDrainBlocked: the items that roll out to nodes wait because a VM on a node the
	// batch drains would block the drain (status.rollouts[].vms.blocking names them): the
	// batch does not start, or its pools are not resumed, until none blocks.
	ReasonDrainBlocked = "DrainBlocked"
	// ReasonInvalidMaintenanceWindow: spec.maintenanceWindow cannot be read (an unknown
	// time zone, a schedule that never fires).
	ReasonInvalidMaintenanceWindow = "InvalidMaintenanceWindow"
	// ReasonNoChanges: every target already matches the plan; there is nothing to apply.
	ReasonNoChanges = "NoChanges"
	// ReasonApplied: every item was applied and took effect; the targets are watched.
	ReasonApplied = "Applied"
	// ReasonInSync: drifted targets are back as the plan applied them.
	ReasonInSync = "InSync"
	// ReasonItemsFailed: execution finished under failurePolicy Continue with failed items.
	ReasonItemsFailed = "ItemsFailed"

	// ReasonDriftDetected: a field the plan applied was changed out of band (rule 7).
	ReasonDriftDetected = "DriftDetected"
	// ReasonThrashing: drift correction (bypassOptimisticLock) was throttled three times in
	// a row; the operator stopped correcting until the spec changes.
	ReasonThrashing = "Thrashing"

	// ReasonUpgradeAvailable: this operator version renders a different plan than the one
	// an older version applied (rule 10).
	ReasonUpgradeAvailable = "UpgradeAvailable"

	// ReasonPrerequisiteMissing: a CRD the profile needs is not served; the message names
	// the operator to install (rule 9).
	ReasonPrerequisiteMissing = "PrerequisiteMissing"
	// ReasonTargetUnavailable: the kind of an applied target is no longer served (its
	// operator was uninstalled); the message names the operator to reinstall.
	ReasonTargetUnavailable = "TargetUnavailable"

	// ReasonItemFailed: an item failed under failurePolicy Abort; the items after it were
	// not applied.
	ReasonItemFailed = "ItemFailed"
	// ReasonPlanRejected: the API server refused the dry-run of an item; nothing was applied.
	ReasonPlanRejected = "PlanRejected"
	// ReasonInvalidOptions: spec.options break a rule admission cannot check.
	ReasonInvalidOptions = "InvalidOptions"
	// ReasonInvalidPlan: the profile rendered a plan the engine refuses (a defect of the
	// operator, not of the cluster).
	ReasonInvalidPlan = "InvalidPlan"
	// ReasonPlanIntegrity: the plan in status no longer hashes to the approved plan (it was
	// changed outside the operator); nothing more is applied.
	ReasonPlanIntegrity = "PlanIntegrity"
	// ReasonUnknownProfile: this operator version does not implement the profile.
	ReasonUnknownProfile = "UnknownProfile"

	// ReasonRevertRequested: spec.revert is true; the revert plan is drafted.
	ReasonRevertRequested = "RevertRequested"
	// ReasonRevertCancelled: spec.revert went back to false; the profile's plan is drafted
	// again, for review.
	ReasonRevertCancelled = "RevertCancelled"
	// ReasonReverted: the approved revert plan was executed; the targets are as they were
	// before this config's executions and no longer watched.
	ReasonReverted = "Reverted"
	// ReasonNothingToRevert: no execution of this config changed a target that is still
	// there as it left it.
	ReasonNothingToRevert = "NothingToRevert"

	// ReasonActionIgnore: spec.action is Ignore (rule 8).
	ReasonActionIgnore = "ActionIgnore"
)

// Event reasons that are not phase transitions (a transition's Event carries the new phase
// as its reason).
const (
	// EventItemApplied: an item's server-side apply was sent.
	EventItemApplied = "ItemApplied"
	// EventItemAlreadyApplied: after a restart, an item's target already held the approved
	// values; it was recorded as applied without a second write.
	EventItemAlreadyApplied = "ItemAlreadyApplied"
	// EventItemFailed: an item failed.
	EventItemFailed = "ItemFailed"
	// EventItemRejected: the API server refused an item's dry-run.
	EventItemRejected = "ItemRejected"
	// EventItemReverted: a revert item put its target back (or deleted it).
	EventItemReverted = "ItemReverted"
	// EventItemReleased: an item left the plan; its target is left as it is and its fields
	// are handed back.
	EventItemReleased = "ItemReleased"
	// EventFieldConflict: another field manager owns a field the plan sets, with another value.
	EventFieldConflict = "FieldConflict"
	// EventBadAnnotation: a user-control annotation on a target is malformed or forbidden.
	EventBadAnnotation = "BadAnnotation"
	// EventThrottled: a drift correction was held back by the per-target rate limit.
	EventThrottled = "Throttled"
	// EventWriteRefused: the write gate refused to write an item's target; the message
	// names the condition that failed.
	EventWriteRefused = "WriteRefused"
	// EventItemUnmanaged: an item's target carried advisor.kubevirt.io/mode: unmanaged
	// right before its write; it was not written and the item is Skipped.
	EventItemUnmanaged = "ItemUnmanaged"
	// EventPoolPaused: the operator paused a MachineConfigPool to roll a batch out at once.
	EventPoolPaused = "PoolPaused"
	// EventPoolResumed: the operator resumed a MachineConfigPool it paused.
	EventPoolResumed = "PoolResumed"
	// EventVMDrainBlocked: during a pool's rollout, a VM blocks the drain of a node still
	// to be updated; the node stays cordoned until it is migrated, stopped or given
	// another eviction strategy.
	EventVMDrainBlocked = "VMDrainBlocked"
	// EventVMsAsForecast: a pool's rollout did to the VMs what its forecast said.
	EventVMsAsForecast = "VMsAsForecast"
	// EventVMsNotAsForecast: a pool's rollout did not do to the VMs what its forecast
	// said; the message names the VMs that moved more often than forecast.
	EventVMsNotAsForecast = "VMsNotAsForecast"
)
