import * as React from 'react';
import { fresh } from './phase';
import type { VirtPlatformConfig } from './types';

// PlanBaseline is the plan the page showed the user first: a later plan (a redraft while
// the page was open) is pointed out, and approving waits until the user has taken it in.
export type PlanBaseline = {
  // changed is the hash of the plan shown when it differs from the one the page showed first.
  changed?: string;
  // acknowledge makes the plan shown now the baseline.
  acknowledge: () => void;
  // expectRedraft forgets the baseline after the user's own change: the next plan the
  // operator shows for it becomes the baseline.
  expectRedraft: (generation?: number) => void;
};

type State = { hash?: string; minGeneration: number };

export const usePlanBaseline = (vpc?: VirtPlatformConfig): PlanBaseline => {
  const [state, setState] = React.useState<State>({ minGeneration: 0 });
  const shown = vpc?.status?.planHash;
  const ready =
    !!vpc && !!shown && fresh(vpc) && (vpc.status?.observedGeneration ?? 0) >= state.minGeneration;

  React.useEffect(() => {
    if (state.hash === undefined && ready) {
      setState((s) => ({ ...s, hash: shown }));
    }
  }, [ready, shown, state.hash]);

  const acknowledge = React.useCallback(() => setState((s) => ({ ...s, hash: shown })), [shown]);
  const expectRedraft = React.useCallback(
    (generation?: number) => setState({ hash: undefined, minGeneration: generation ?? 0 }),
    [],
  );
  const changed = state.hash !== undefined && ready && shown !== state.hash ? shown : undefined;
  return { changed, acknowledge, expectRedraft };
};
