import * as React from 'react';
import { useK8sWatchResource } from '@openshift-console/dynamic-plugin-sdk';
import { Alert, Content, Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { usePluginTranslation } from '../i18n';
import { EventGVK } from '../models';
import type { ConfigEvent } from '../types';

export const eventTime = (e: ConfigEvent): string =>
  e.series?.lastObservedTime || e.eventTime || e.deprecatedLastTimestamp || e.metadata?.creationTimestamp || '';

// newestFirst orders Events by when they last happened.
export const newestFirst = (events: ConfigEvent[]): ConfigEvent[] =>
  [...events].sort((a, b) => eventTime(b).localeCompare(eventTime(a)));

const formatTime = (iso: string): string => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
};

// Events lists the Events about one config (events.k8s.io/v1, regarding.uid).
export const Events: React.FC<{ uid: string }> = ({ uid }) => {
  const { t } = usePluginTranslation();
  const [events, loaded, loadError] = useK8sWatchResource<ConfigEvent[]>({
    groupVersionKind: EventGVK,
    isList: true,
    fieldSelector: `regarding.uid=${uid}`,
  });
  const sorted = React.useMemo(() => newestFirst(events ?? []), [events]);
  if (loadError) {
    return (
      <Alert component="h3" variant="warning" isInline isPlain title={t('The Events could not be read')}>
        {String(loadError?.message ?? loadError)}
      </Alert>
    );
  }
  if (loaded && sorted.length === 0) {
    return <Content component="p">{t('No Events')}</Content>;
  }
  return (
    <Table aria-label={t('Events')} variant="compact" data-test="events">
      <Thead>
        <Tr>
          <Th>{t('Time')}</Th>
          <Th>{t('Type')}</Th>
          <Th>{t('Reason')}</Th>
          <Th>{t('Message')}</Th>
        </Tr>
      </Thead>
      <Tbody>
        {sorted.map((e) => (
          <Tr key={e.metadata?.uid ?? `${e.metadata?.namespace}/${e.metadata?.name}`}>
            <Td dataLabel={t('Time')}>{formatTime(eventTime(e))}</Td>
            <Td dataLabel={t('Type')}>
              {e.type === 'Warning' ? (
                <Label status="warning" isCompact>
                  {t('Warning')}
                </Label>
              ) : (
                t('Normal')
              )}
            </Td>
            <Td dataLabel={t('Reason')}>{e.reason}</Td>
            <Td dataLabel={t('Message')}>{e.note}</Td>
          </Tr>
        ))}
      </Tbody>
    </Table>
  );
};
