import type { TFunction } from 'i18next';
import type { PoolRollout } from './types';

// The disruption forecast of a pool, in the words and numbers `kubectl virt-advisor plan`
// prints (internal/cli/plan.go, renderRollouts), so the console and the terminal agree.

const orDash = (s?: string) => (s ? s : '-');

// forecastPools are the pools the plan rolls out to: those with items.
export const forecastPools = (rollouts?: PoolRollout[]): PoolRollout[] =>
  (rollouts ?? []).filter((ro) => (ro.items ?? []).length > 0);

// forecastSentence is the CLI's line for a pool: "3 node(s) reboot once, in 3 wave(s) of at
// most 1; estimated duration unknown".
export const forecastSentence = (t: TFunction, ro: PoolRollout): string =>
  t(
    'MachineConfigPool {{pool}}: {{nodes}} node(s) {{what}}, in {{waves}} wave(s) of at most {{maxUnavailable}}; estimated duration {{duration}}',
    {
      pool: ro.pool,
      nodes: ro.nodes ?? 0,
      what: ro.reboot ? t('reboot once') : t('update (no reboot)'),
      waves: ro.waves ?? 0,
      maxUnavailable: orDash(ro.maxUnavailable),
      duration: orDash(ro.estimatedDuration),
      interpolation: { escapeValue: false },
    },
  );

// pauseSentence says what the pause of a pool means, when the plan pauses it.
export const pauseSentence = (t: TFunction, ro: PoolRollout): string | undefined =>
  ro.pause
    ? t('The pool is paused while {{items}} are applied, then resumed', {
        items: (ro.items ?? []).join(', '),
        interpolation: { escapeValue: false },
      })
    : undefined;

// MachinesUpdated is how far a pool's rollout got, from the health message of its item
// ("MachineConfigPool worker updating rendered-...: 1/3 machines updated"). It is for display
// only: nothing is decided from it.
export type MachinesUpdated = { updated: number; machines: number };

export const machinesUpdated = (message?: string): MachinesUpdated | undefined => {
  const m = /(\d+)\/(\d+) machines/.exec(message ?? '');
  if (!m) {
    return undefined;
  }
  return { updated: Number(m[1]), machines: Number(m[2]) };
};

// currentWave is the wave a rollout is in: the waves before it are done.
export const currentWave = (ro: PoolRollout, progress: MachinesUpdated): number => {
  const perWave = Math.max(1, Number.parseInt(ro.maxUnavailable ?? '1', 10) || 1);
  const waves = Math.max(1, ro.waves ?? Math.ceil(progress.machines / perWave));
  return Math.min(waves, Math.floor(progress.updated / perWave) + 1);
};
