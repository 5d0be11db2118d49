import { screen, within } from '@testing-library/react';
import { cluster, renderAt } from './render';
import { reviewConfig } from './fixtures';

describe('the list of VirtPlatformConfigs', () => {
  it('shows each config with its profile, action, phase, impact and disruption forecast', () => {
    const ignored = reviewConfig({ phase: 'Ignored', impactSeverity: undefined, disruption: '', itemsSummary: '' });
    ignored.metadata = { name: 'load-aware-rebalancing', uid: 'uid-2' };
    ignored.spec = { profile: 'load-aware-rebalancing', action: 'Ignore' };
    cluster([reviewConfig(), ignored]);
    renderAt('/virt-advisor');

    const rows = screen.getAllByRole('row').slice(1);
    expect(rows.map((r) => within(r).getAllByRole('cell')[0].textContent)).toEqual([
      'load-aware-rebalancing',
      'platform-baseline',
    ]);
    const baseline = within(rows[1]);
    expect(baseline.getByRole('link', { name: 'platform-baseline' })).toHaveAttribute('href', '/virt-advisor/platform-baseline');
    expect(baseline.getByText('DryRun')).toBeInTheDocument();
    expect(baseline.getByText('ReviewRequired')).toBeInTheDocument();
    expect(baseline.getByText('High impact')).toBeInTheDocument();
    expect(baseline.getByText('reboots 3 worker nodes once, in 3 waves')).toBeInTheDocument();
    expect(within(rows[0]).getByText('Ignore')).toBeInTheDocument();
  });

  it('marks a config a newer operator would change with an upgrade badge', () => {
    cluster([reviewConfig({ phase: 'CompletedWithUpgrade' })]);
    renderAt('/virt-advisor');
    expect(screen.getByText('Upgrade available')).toBeInTheDocument();
  });

  it('says when there is no config', () => {
    cluster([]);
    renderAt('/virt-advisor');
    expect(screen.getByText('No VirtPlatformConfigs')).toBeInTheDocument();
  });
});
