import type { TFunction } from 'i18next';
import type { Condition, ItemState, PlanItem, VirtPlatformConfig } from './types';

// What the pages derive from a config's status. Decisions come from typed fields (phase,
// conditions' types and statuses, approval.required), never from reasons or messages.

export const condition = (vpc: VirtPlatformConfig, type: string): Condition | undefined =>
  vpc.status?.conditions?.find((c) => c.type === type);

const phaseCondition: Record<string, string> = {
  Drafting: 'Drafting',
  ReviewRequired: 'ReviewRequired',
  InProgress: 'InProgress',
  Completed: 'Completed',
  CompletedWithErrors: 'Completed',
  CompletedWithUpgrade: 'UpgradeAvailable',
  Drifted: 'Drifted',
  Failed: 'Failed',
  PrerequisiteFailed: 'PrerequisiteFailed',
  Ignored: 'Ignored',
  Reverted: 'Reverted',
};

// activeCondition is the True condition that explains the phase (as the kubectl plugin
// picks it): the phase's own condition, else the first True one but Ready.
export const activeCondition = (vpc: VirtPlatformConfig): Condition | undefined => {
  const own = phaseCondition[vpc.status?.phase ?? ''];
  const byPhase = own ? condition(vpc, own) : undefined;
  if (byPhase?.status === 'True') {
    return byPhase;
  }
  return vpc.status?.conditions?.find((c) => c.status === 'True' && c.type !== 'Ready');
};

export const upgradeAvailable = (vpc: VirtPlatformConfig): boolean =>
  vpc.status?.phase === 'CompletedWithUpgrade' || condition(vpc, 'UpgradeAvailable')?.status === 'True';

export const approvalRequired = (vpc: VirtPlatformConfig): boolean =>
  !!vpc.status?.planHash && !!vpc.status?.approval?.required;

// fresh tells whether the operator has acted on the latest spec.
export const fresh = (vpc: VirtPlatformConfig): boolean =>
  (vpc.status?.observedGeneration ?? 0) >= (vpc.metadata?.generation ?? 0);

export const isRevertItem = (it: PlanItem): boolean => it.action === 'Restore' || it.action === 'Delete';

export const isRevertPlan = (vpc: VirtPlatformConfig): boolean =>
  (vpc.status?.items ?? []).some(isRevertItem) ||
  vpc.status?.phase === 'Reverted' ||
  (!!vpc.spec.revert && fresh(vpc));

// changes tells whether applying an item still changes its target (as the kubectl plugin
// counts them).
export const changes = (it: PlanItem): boolean => {
  if (it.state && it.state !== 'Pending' && it.state !== 'Failed') {
    return false;
  }
  if (it.action === 'Release') {
    return true;
  }
  return it.change === 'Values' || it.change === 'OwnershipOnly';
};

export type StepVariant = 'success' | 'info' | 'pending' | 'danger' | 'warning' | 'default';

export type PhaseStep = {
  id: string;
  title: string;
  variant: StepVariant;
  current: boolean;
  description?: string;
};

// phaseSteps lays the phase out on the path every plan takes: drafted, reviewed and
// approved, rolled out, done.
export const phaseSteps = (t: TFunction, vpc: VirtPlatformConfig): PhaseStep[] => {
  const phase = vpc.status?.phase ?? 'Pending';
  const revert = isRevertPlan(vpc);
  const steps: PhaseStep[] = [
    { id: 'draft', title: revert ? t('Draft the revert plan') : t('Draft the plan'), variant: 'pending', current: false },
    { id: 'review', title: t('Review and approve'), variant: 'pending', current: false },
    { id: 'rollout', title: t('Apply and roll out'), variant: 'pending', current: false },
    { id: 'done', title: revert ? t('Reverted') : t('Completed'), variant: 'pending', current: false },
  ];
  const upTo = (index: number, last: StepVariant, description?: string) => {
    steps.forEach((s, i) => {
      if (i < index) {
        s.variant = 'success';
      } else if (i === index) {
        s.variant = last;
        s.current = true;
        s.description = description;
      }
    });
  };
  switch (phase) {
    case 'Pending':
    case 'Drafting':
      upTo(0, 'info', t(phase));
      break;
    case 'PrerequisiteFailed':
      upTo(0, 'danger', t('Prerequisite missing'));
      break;
    case 'ReviewRequired':
      upTo(1, 'info', t('Waiting for an approval'));
      break;
    case 'InProgress':
      upTo(2, 'info', t('In progress'));
      break;
    case 'Failed':
      upTo((vpc.status?.items ?? []).some((it) => it.state === 'Failed') ? 2 : 0, 'danger', t('Failed'));
      break;
    case 'Completed':
    case 'Reverted':
      upTo(3, 'success');
      break;
    case 'CompletedWithErrors':
      upTo(3, 'warning', t('Completed with errors'));
      break;
    case 'CompletedWithUpgrade':
      upTo(3, 'success', t('Upgrade available'));
      break;
    case 'Drifted':
      upTo(3, 'warning', t('Drifted'));
      break;
    case 'Ignored':
      steps[0].current = true;
      steps[0].variant = 'default';
      steps[0].description = t('Ignored: no plan');
      break;
  }
  return steps;
};

// itemProgress counts the items done against those that apply (all but Skipped).
export const itemProgress = (items: PlanItem[]): { done: number; total: number } => {
  const applying = items.filter((it) => it.state !== 'Skipped');
  return { done: applying.filter((it) => it.state === 'Completed').length, total: applying.length };
};

export const itemStateOrder: ItemState[] = ['Pending', 'InProgress', 'Completed', 'Failed', 'Skipped'];

// executing tells whether the items' states are worth a checklist: the plan runs or ran.
export const executing = (vpc: VirtPlatformConfig): boolean =>
  vpc.status?.phase === 'InProgress' ||
  (vpc.status?.items ?? []).some((it) => it.state === 'InProgress' || it.state === 'Completed' || it.state === 'Failed');
