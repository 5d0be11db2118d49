import i18n from 'i18next';
import { currentWave, forecastPools, forecastSentence, machinesUpdated, pauseSentence } from '../forecast';
import type { PoolRollout } from '../types';

const t = i18n.getFixedT('en', 'plugin__virt-advisor-plugin');

// The pool of internal/cli/plan_test.go (TestPlanShowsTheDisruptionForecast).
const worker: PoolRollout = {
  pool: 'worker',
  items: ['enable-psi-metrics'],
  nodes: 6,
  maxUnavailable: '1',
  waves: 6,
  reboot: true,
  pause: true,
  estimatedDuration: 'unknown',
  reasons: ['kernel arguments change'],
};

describe('the disruption forecast', () => {
  it('says what kubectl virt-advisor plan says, with the same numbers', () => {
    expect(forecastSentence(t, worker)).toBe(
      'MachineConfigPool worker: 6 node(s) reboot once, in 6 wave(s) of at most 1; estimated duration unknown',
    );
    expect(forecastSentence(t, { ...worker, reboot: false, maxUnavailable: '', estimatedDuration: '12m' })).toBe(
      'MachineConfigPool worker: 6 node(s) update (no reboot), in 6 wave(s) of at most -; estimated duration 12m',
    );
    expect(pauseSentence(t, worker)).toBe('The pool is paused while enable-psi-metrics are applied, then resumed');
  });

  it('shows only the pools the plan rolls out to', () => {
    expect(forecastPools([worker, { pool: 'master', nodes: 3 }]).map((ro) => ro.pool)).toEqual(['worker']);
  });

  it('follows a rollout wave by wave from its item message', () => {
    const msg = 'MachineConfigPool worker updating rendered-worker-1: 2/6 machines updated';
    expect(machinesUpdated(msg)).toEqual({ updated: 2, machines: 6 });
    expect(currentWave(worker, { updated: 0, machines: 6 })).toBe(1);
    expect(currentWave(worker, { updated: 2, machines: 6 })).toBe(3);
    expect(currentWave(worker, { updated: 6, machines: 6 })).toBe(6);
    expect(currentWave({ ...worker, maxUnavailable: '2', waves: 3 }, { updated: 2, machines: 6 })).toBe(2);
    expect(machinesUpdated('waiting for the pool')).toBeUndefined();
  });
});
