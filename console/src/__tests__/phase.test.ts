import i18n from 'i18next';
import { activeCondition, approvalRequired, executing, phaseSteps, upgradeAvailable } from '../phase';
import { reviewConfig } from './fixtures';

const t = i18n.getFixedT('en', 'plugin__virt-advisor-plugin');

const variants = (vpc: ReturnType<typeof reviewConfig>) =>
  phaseSteps(t, vpc).map((s) => `${s.id}:${s.variant}${s.current ? '*' : ''}`);

describe('the phase stepper', () => {
  it('waits at the review step while the plan waits for an approval', () => {
    expect(variants(reviewConfig())).toEqual(['draft:success', 'review:info*', 'rollout:pending', 'done:pending']);
  });

  it('shows the rollout as the current step while the plan executes', () => {
    expect(variants(reviewConfig({ phase: 'InProgress' }))).toEqual([
      'draft:success',
      'review:success',
      'rollout:info*',
      'done:pending',
    ]);
  });

  it('ends on a warning when the targets drifted', () => {
    expect(variants(reviewConfig({ phase: 'Drifted' })).pop()).toBe('done:warning*');
  });

  it('fails at the rollout when an item failed, at the draft otherwise', () => {
    const failedItem = reviewConfig({ phase: 'Failed' });
    failedItem.status!.items![0].state = 'Failed';
    expect(variants(failedItem)[2]).toBe('rollout:danger*');
    expect(variants(reviewConfig({ phase: 'Failed', items: [] }))[0]).toBe('draft:danger*');
  });

  it('names the revert plan when one is shown', () => {
    const vpc = reviewConfig({ phase: 'Reverted' });
    expect(phaseSteps(t, vpc).map((s) => s.title)).toEqual([
      'Draft the revert plan',
      'Review and approve',
      'Apply and roll out',
      'Reverted',
    ]);
  });
});

describe('what the status says', () => {
  it('asks for an approval only with a plan hash and approval.required', () => {
    expect(approvalRequired(reviewConfig())).toBe(true);
    expect(approvalRequired(reviewConfig({ approval: { required: false } }))).toBe(false);
    expect(approvalRequired(reviewConfig({ planHash: '' }))).toBe(false);
  });

  it('offers the upgrade for CompletedWithUpgrade or a True UpgradeAvailable condition', () => {
    expect(upgradeAvailable(reviewConfig({ phase: 'CompletedWithUpgrade' }))).toBe(true);
    expect(
      upgradeAvailable(
        reviewConfig({ phase: 'Drifted', conditions: [{ type: 'UpgradeAvailable', status: 'True', reason: 'UpgradeAvailable' }] }),
      ),
    ).toBe(true);
    expect(upgradeAvailable(reviewConfig())).toBe(false);
  });

  it("explains the phase with the phase's own condition", () => {
    expect(activeCondition(reviewConfig())?.reason).toBe('AwaitingApproval');
  });

  it('shows the checklist once an item runs', () => {
    expect(executing(reviewConfig())).toBe(false);
    expect(executing(reviewConfig({ phase: 'InProgress' }))).toBe(true);
  });
});
