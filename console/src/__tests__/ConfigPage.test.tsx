import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { cluster, mocked, pages, renderAt } from './render';
import { longDiff, planHash, reviewConfig } from './fixtures';
import type { VirtPlatformConfig } from '../types';

const openConfig = (vpc: VirtPlatformConfig = reviewConfig()) => {
  cluster([vpc], [
    {
      metadata: { name: 'platform-baseline.1', namespace: 'default', uid: 'e1', creationTimestamp: '2026-01-01T10:00:00Z' },
      regarding: { uid: 'uid-1' },
      reason: 'ReviewRequired',
      note: 'The plan waits for an approval',
      type: 'Normal',
      deprecatedLastTimestamp: '2026-01-01T10:00:00Z',
    },
    {
      metadata: { name: 'platform-baseline.2', namespace: 'default', uid: 'e2' },
      regarding: { uid: 'uid-1' },
      reason: 'FieldConflict',
      note: 'argocd-controller owns spec.minHealthy',
      type: 'Warning',
      eventTime: '2026-01-01T10:05:00Z',
    },
  ]);
  return renderAt('/virt-advisor/platform-baseline');
};

// planItem is the card of the plan's item name.
const planItem = (name: string) =>
  screen.getAllByTestId('plan-item').find((card) => card.getAttribute('data-item') === name) as HTMLElement;

beforeEach(() => {
  mocked.useAccessReview.mockReturnValue([true, false]);
  mocked.k8sPatch.mockReset();
  mocked.k8sGet.mockReset();
});

describe('the page of a config in review', () => {
  it('shows the phase as a stepper with the review step current', () => {
    openConfig();
    const review = screen.getByText('Review and approve').closest('li');
    expect(review).toHaveClass('pf-m-current');
    expect(screen.getByText('Waiting for an approval')).toBeInTheDocument();
  });

  it('shows the forecast of each pool the plan rolls out to, with the numbers of kubectl virt-advisor plan', () => {
    openConfig();
    const table = screen.getByRole('grid', { name: 'Disruption forecast' });
    const row = within(table).getAllByRole('row')[1];
    expect(within(row).getAllByRole('cell').map((c) => c.textContent)).toEqual([
      'worker',
      '3',
      '3',
      '1',
      'reboot once',
      'files change: /etc/systemd/system/swap.serviceThe pool is paused while swap are applied, then resumed',
      'unknown',
    ]);
    expect(within(table).queryByText('master')).not.toBeInTheDocument();
  });

  it('shows each diff side by side, and inline on request', async () => {
    openConfig();
    const item = planItem('node-health-check');
    const table = within(item).getByRole('table');
    expect(table).toHaveAttribute('data-mode', 'split');
    const changed = within(table).getAllByRole('row').find((r) => r.textContent?.includes('30%'));
    expect(changed?.textContent).toContain('51%');

    await userEvent.click(screen.getByRole('button', { name: 'Inline' }));
    expect(within(item).getByRole('table')).toHaveAttribute('data-mode', 'unified');
  });

  it('shows a diff that creates its object inline in either layout: it has no live side', () => {
    openConfig();
    const table = within(planItem('swap')).getByRole('table');
    expect(table).toHaveAttribute('data-mode', 'split');
    expect(within(table).queryByText('Live object')).not.toBeInTheDocument();
    expect(within(table).getAllByRole('row').filter((r) => r.textContent?.startsWith('1+'))).toHaveLength(1);
  });

  it('marks the lines that set a field another manager owns, and names the manager', () => {
    openConfig();
    const item = planItem('node-health-check');
    expect(within(item).getByText(/spec.minHealthy is owned by argocd-controller with "30%"; the plan sets "51%"/)).toBeInTheDocument();
    expect(item.querySelectorAll('tr[data-conflict]')).toHaveLength(1);
    expect(planItem('swap').querySelectorAll('tr[data-conflict]')).toHaveLength(0);
  });

  it('keeps a long diff collapsed and renders it only when asked to', async () => {
    const vpc = reviewConfig();
    vpc.status!.items![0].diff = longDiff;
    openConfig(vpc);
    const item = planItem('swap');
    expect(within(item).queryByRole('table')).not.toBeInTheDocument();
    await userEvent.click(within(item).getByRole('button', { name: 'Show the diff (206 lines)' }));
    expect(within(item).getAllByRole('row').length).toBeGreaterThan(200);
  });

  it('says a skipped item changes nothing, with its message', () => {
    openConfig();
    const item = planItem('mtv');
    expect(within(item).getByText('install the Migration Toolkit for Virtualization operator')).toBeInTheDocument();
    expect(within(item).queryByRole('table')).not.toBeInTheDocument();
  });

  it("lists the config's Events, newest first", () => {
    openConfig();
    const rows = within(screen.getByRole('grid', { name: 'Events' })).getAllByRole('row').slice(1);
    expect(rows.map((r) => within(r).getAllByRole('cell')[2].textContent)).toEqual(['FieldConflict', 'ReviewRequired']);
    expect(mocked.useK8sWatchResource).toHaveBeenCalledWith(
      expect.objectContaining({ groupVersionKind: expect.objectContaining({ group: 'events.k8s.io', kind: 'Event' }), fieldSelector: 'regarding.uid=uid-1' }),
    );
  });
});

describe('approving', () => {
  it('shows the plan hash and sends one patch that approves it, refused if the config changed', async () => {
    openConfig();
    mocked.k8sPatch.mockResolvedValue({ ...reviewConfig(), metadata: { name: 'platform-baseline', generation: 2 } });
    await userEvent.click(screen.getByRole('button', { name: 'Approve' }));
    const modal = screen.getByRole('dialog');
    expect(within(modal).getByText('Approve the plan of platform-baseline')).toBeInTheDocument();
    expect(within(modal).getByDisplayValue(planHash)).toBeInTheDocument();
    expect(
      within(modal).getByText(
        'MachineConfigPool worker: 3 node(s) reboot once, in 3 wave(s) of at most 1; estimated duration unknown',
      ),
    ).toBeInTheDocument();

    await userEvent.click(within(modal).getByRole('button', { name: 'Approve' }));
    expect(mocked.k8sPatch).toHaveBeenCalledTimes(1);
    expect(mocked.k8sPatch.mock.calls[0][0].data).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '1200' },
      { op: 'test', path: '/status/planHash', value: planHash },
      { op: 'add', path: '/spec/action', value: 'Apply' },
      { op: 'add', path: '/spec/approvedPlanHash', value: planHash },
    ]);
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
  });

  it('says nothing was approved when the config changed since it was shown', async () => {
    openConfig();
    mocked.k8sPatch.mockRejectedValue(new Error('the server rejected our request: test operation failed'));
    const newer = reviewConfig({ planHash: 'b'.repeat(64) });
    newer.metadata!.resourceVersion = '1300';
    mocked.k8sGet.mockResolvedValue(newer);

    await userEvent.click(screen.getByRole('button', { name: 'Approve' }));
    const modal = screen.getByRole('dialog');
    await userEvent.click(within(modal).getByRole('button', { name: 'Approve' }));
    const alert = await within(modal).findByTestId('approve-error');
    expect(alert).toHaveTextContent('Nothing was approved: the config changed since this page showed its plan');
    expect(alert).toHaveTextContent(`The plan shown now has hash ${'b'.repeat(64)}`);
    expect(within(modal).getByRole('button', { name: 'Approve' })).toBeDisabled();
  });

  it('is not offered to a user who may not patch the config', () => {
    mocked.useAccessReview.mockReturnValue([false, false]);
    openConfig();
    expect(mocked.useAccessReview).toHaveBeenCalledWith({
      group: 'advisor.kubevirt.io',
      resource: 'virtplatformconfigs',
      verb: 'patch',
      name: 'platform-baseline',
    });
    for (const name of ['Approve', 'Back to DryRun', 'Ignore', 'Request a revert']) {
      expect(screen.getByRole('button', { name })).toBeDisabled();
    }
    expect(screen.getByTestId('actions-denied')).toBeInTheDocument();
  });

  it('waits for the user to take in a plan that changed while the page was open', async () => {
    const view = openConfig();
    expect(screen.getByRole('button', { name: 'Approve' })).toBeEnabled();

    cluster([reviewConfig({ planHash: 'c'.repeat(64) })]);
    view.rerender(pages('/virt-advisor/platform-baseline'));
    expect(await screen.findByTestId('plan-changed')).toHaveTextContent(`hash ${'c'.repeat(64)}`);
    expect(screen.getByRole('button', { name: 'Approve' })).toBeDisabled();

    await userEvent.click(screen.getByRole('button', { name: 'I reviewed the new plan' }));
    expect(screen.queryByTestId('plan-changed')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Approve' })).toBeEnabled();
  });
});

describe('the other actions', () => {
  it('sets spec.action back to DryRun, Ignore, and asks for the revert plan for review', async () => {
    const vpc = reviewConfig();
    vpc.spec.action = 'Apply';
    openConfig(vpc);
    mocked.k8sPatch.mockResolvedValue(vpc);
    await userEvent.click(screen.getByRole('button', { name: 'Back to DryRun' }));
    await userEvent.click(screen.getByRole('button', { name: 'Ignore' }));
    await userEvent.click(screen.getByRole('button', { name: 'Request a revert' }));
    expect(mocked.k8sPatch.mock.calls.map((c) => c[0].data)).toEqual([
      [{ op: 'add', path: '/spec/action', value: 'DryRun' }],
      [{ op: 'add', path: '/spec/action', value: 'Ignore' }],
      [
        { op: 'add', path: '/spec/revert', value: true },
        { op: 'add', path: '/spec/action', value: 'DryRun' },
      ],
    ]);
  });

  it('shows a refused change with the message of the API server', async () => {
    openConfig();
    mocked.k8sPatch.mockRejectedValue(new Error('virtplatformconfigs "platform-baseline" is forbidden'));
    await userEvent.click(screen.getByRole('button', { name: 'Ignore' }));
    expect(await screen.findByTestId('action-error')).toHaveTextContent('is forbidden');
  });
});

describe('while the plan executes', () => {
  it('checks off the items and follows the pool wave by wave', () => {
    const vpc = reviewConfig({ phase: 'InProgress', approval: { required: false } });
    vpc.spec.action = 'Apply';
    vpc.status!.items![0] = {
      ...vpc.status!.items![0],
      state: 'InProgress',
      message: 'MachineConfigPool worker updating rendered-worker-2: 1/3 machines updated',
    };
    vpc.status!.items![1] = { ...vpc.status!.items![1], state: 'Completed' };
    openConfig(vpc);
    const checklist = screen.getByTestId('checklist');
    expect(within(checklist).getByTestId('check-node-health-check')).toHaveAttribute('data-state', 'Completed');
    expect(within(checklist).getByTestId('check-swap')).toHaveAttribute('data-state', 'InProgress');
    expect(screen.getByText('MachineConfigPool worker: wave 2 of 3')).toBeInTheDocument();
    expect(screen.getAllByText('1 of 3 nodes updated').length).toBeGreaterThan(0);
    expect(screen.getByRole('button', { name: 'Approve' })).toBeDisabled();
  });
});
