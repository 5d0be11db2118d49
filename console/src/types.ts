import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';

// The VirtPlatformConfig as the plugin reads it: the fields of advisor.kubevirt.io/v1alpha1
// (api/v1alpha1/virtplatformconfig_types.go) that the pages show or write.

export type Action = 'DryRun' | 'Apply' | 'Ignore';

export type Phase =
  | 'Pending'
  | 'Drafting'
  | 'ReviewRequired'
  | 'InProgress'
  | 'Completed'
  | 'CompletedWithErrors'
  | 'CompletedWithUpgrade'
  | 'Drifted'
  | 'Failed'
  | 'PrerequisiteFailed'
  | 'Ignored'
  | 'Reverted';

export type ImpactSeverity = 'Low' | 'Medium' | 'High';

export type ItemState = 'Pending' | 'InProgress' | 'Completed' | 'Failed' | 'Skipped';

export type ItemAction = 'Apply' | 'Release' | 'Restore' | 'Delete';

export type TargetReference = {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
};

export type FieldConflict = {
  path: string;
  manager: string;
  liveValue?: string;
  plannedValue?: string;
};

export type PlanItem = {
  name: string;
  targetRef: TargetReference;
  impactSeverity?: ImpactSeverity;
  diff?: string;
  change?: 'None' | 'OwnershipOnly' | 'Values';
  state?: ItemState;
  message?: string;
  lastTransitionTime?: string;
  action?: ItemAction;
  components?: string[];
  conflicts?: FieldConflict[];
  managedFields?: string[];
};

export type PoolRollout = {
  pool: string;
  items?: string[];
  nodes?: number;
  maxUnavailable?: string;
  waves?: number;
  reboot?: boolean;
  reasons?: string[];
  pause?: boolean;
  estimatedDuration?: string;
  pauseState?: string;
  pausedAt?: string;
  rolloutStartedAt?: string;
  secondsPerNode?: number;
};

export type Condition = {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
};

export type ApprovalStatus = {
  required?: boolean;
  command?: string;
  cause?: string;
  approvedPlanHash?: string;
  approvedGeneration?: number;
};

export type VirtPlatformConfig = K8sResourceCommon & {
  spec: {
    profile: string;
    action?: Action;
    approvedPlanHash?: string;
    revert?: boolean;
    bypassOptimisticLock?: boolean;
    failurePolicy?: 'Abort' | 'Continue';
  };
  status?: {
    phase?: Phase;
    observedGeneration?: number;
    conditions?: Condition[];
    impactSeverity?: ImpactSeverity;
    planHash?: string;
    planRevision?: number;
    approval?: ApprovalStatus;
    itemsSummary?: string;
    items?: PlanItem[];
    disruption?: string;
    rollouts?: PoolRollout[];
    operatorVersion?: string;
  };
};

// An Event of events.k8s.io/v1 about a config (regarding.uid is the config's uid).
export type ConfigEvent = K8sResourceCommon & {
  regarding?: { uid?: string; kind?: string; name?: string };
  reason?: string;
  note?: string;
  type?: 'Normal' | 'Warning';
  eventTime?: string;
  deprecatedLastTimestamp?: string;
  deprecatedFirstTimestamp?: string;
  deprecatedCount?: number;
  series?: { count: number; lastObservedTime: string };
  reportingController?: string;
};
