import * as React from 'react';
import { Content, List, ListItem, Progress, ProgressMeasureLocation } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { usePluginTranslation } from '../i18n';
import { currentWave, forecastPools, machinesUpdated, pauseSentence } from '../forecast';
import type { PlanItem, PoolRollout } from '../types';

// Forecast shows, per MachineConfigPool, what approving the plan does to its nodes.
export const Forecast: React.FC<{ rollouts?: PoolRollout[]; disruption?: string }> = ({ rollouts, disruption }) => {
  const { t } = usePluginTranslation();
  const pools = forecastPools(rollouts);
  if (pools.length === 0) {
    return (
      <Content component="p" data-test="forecast-none">
        {disruption || t('No node reboots or updates: the plan rolls out to no MachineConfigPool.')}
      </Content>
    );
  }
  return (
    <>
      {disruption && (
        <Content component="p" data-test="disruption">
          {disruption}
        </Content>
      )}
      <Table aria-label={t('Disruption forecast')} variant="compact" data-test="forecast">
        <Thead>
          <Tr>
            <Th modifier="wrap">{t('MachineConfigPool')}</Th>
            <Th modifier="wrap">{t('Nodes')}</Th>
            <Th modifier="wrap">{t('Waves')}</Th>
            <Th modifier="wrap">{t('At most per wave')}</Th>
            <Th modifier="wrap">{t('Nodes reboot')}</Th>
            <Th modifier="wrap">{t('Why')}</Th>
            <Th modifier="wrap">{t('Estimated duration')}</Th>
          </Tr>
        </Thead>
        <Tbody>
          {pools.map((ro) => (
            <Tr key={ro.pool} data-test={`forecast-${ro.pool}`}>
              <Td dataLabel={t('MachineConfigPool')} data-test="pool">
                {ro.pool}
              </Td>
              <Td dataLabel={t('Nodes')} data-test="nodes">
                {ro.nodes ?? 0}
              </Td>
              <Td dataLabel={t('Waves')} data-test="waves">
                {ro.waves ?? 0}
              </Td>
              <Td dataLabel={t('At most per wave')} data-test="max-unavailable">
                {ro.maxUnavailable || '-'}
              </Td>
              <Td dataLabel={t('Nodes reboot')} data-test="reboot">
                {ro.reboot ? t('reboot once') : t('update (no reboot)')}
              </Td>
              <Td dataLabel={t('Why')} data-test="reasons">
                <List isPlain>
                  {(ro.reasons ?? []).map((why) => (
                    <ListItem key={why}>{why}</ListItem>
                  ))}
                  {ro.pause && <ListItem>{pauseSentence(t, ro)}</ListItem>}
                </List>
              </Td>
              <Td dataLabel={t('Estimated duration')} data-test="duration">
                {ro.estimatedDuration || '-'}
              </Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </>
  );
};

// RolloutProgress shows how far each pool's rollout got while the plan executes.
export const RolloutProgress: React.FC<{ rollouts?: PoolRollout[]; items: PlanItem[] }> = ({ rollouts, items }) => {
  const { t } = usePluginTranslation();
  const pools = forecastPools(rollouts);
  return (
    <>
      {pools.map((ro) => {
        const poolItems = items.filter((it) => (ro.items ?? []).includes(it.name));
        const waiting = poolItems.find((it) => it.state === 'InProgress');
        const done = poolItems.length > 0 && poolItems.every((it) => it.state === 'Completed');
        const progress = machinesUpdated(waiting?.message);
        const nodes = progress?.machines ?? ro.nodes ?? 0;
        const updated = done ? nodes : (progress?.updated ?? 0);
        const wave = progress ? currentWave(ro, progress) : undefined;
        let title: string;
        if (done) {
          title = t('MachineConfigPool {{pool}}: rolled out to {{nodes}} node(s)', { pool: ro.pool, nodes });
        } else if (wave !== undefined) {
          title = t('MachineConfigPool {{pool}}: wave {{wave}} of {{waves}}', {
            pool: ro.pool,
            wave,
            waves: ro.waves ?? wave,
          });
        } else {
          title = t('MachineConfigPool {{pool}}: waiting to roll out', { pool: ro.pool });
        }
        return (
          <div key={ro.pool} data-test={`rollout-${ro.pool}`}>
            <Progress
              title={<span data-test="rollout-title">{title}</span>}
              value={nodes > 0 ? (100 * updated) / nodes : 0}
              label={<span data-test="rollout-measure">{t('{{updated}} of {{nodes}} nodes updated', { updated, nodes })}</span>}
              valueText={t('{{updated}} of {{nodes}} nodes updated', { updated, nodes })}
              measureLocation={ProgressMeasureLocation.outside}
              variant={done ? 'success' : undefined}
            />
            {waiting?.message && (
              <Content component="small" data-test="rollout-message">
                {waiting.message}
              </Content>
            )}
          </div>
        );
      })}
    </>
  );
};
