import * as React from 'react';
import { Link } from 'react-router';
import { useK8sWatchResource } from '@openshift-console/dynamic-plugin-sdk';
import {
  Alert,
  Bullseye,
  Content,
  EmptyState,
  EmptyStateBody,
  Flex,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { usePluginTranslation } from '../i18n';
import { configPath, VirtPlatformConfigGVK } from '../models';
import type { VirtPlatformConfig } from '../types';
import { ImpactLabel, PhaseLabel, UpgradeBadge } from './labels';
import './virt-advisor.css';

const byName = (a: VirtPlatformConfig, b: VirtPlatformConfig) =>
  (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');

// ConfigListPage lists the VirtPlatformConfigs: one per profile, with what each would do.
const ConfigListPage: React.FC = () => {
  const { t } = usePluginTranslation();
  const [configs, loaded, loadError] = useK8sWatchResource<VirtPlatformConfig[]>({
    groupVersionKind: VirtPlatformConfigGVK,
    isList: true,
  });
  const rows = React.useMemo(() => [...(configs ?? [])].sort(byName), [configs]);

  return (
    <>
      <PageSection>
        <Title headingLevel="h1">{t('Virtualization platform configs')}</Title>
        <Content component="p">
          {t(
            'Each profile tunes OpenShift Virtualization. Its plan is shown for review; nothing changes before you approve it.',
          )}
        </Content>
      </PageSection>
      <PageSection>
        {loadError && (
          <Alert component="h2" variant="danger" isInline title={t('The configs could not be read')}>
            {String(loadError?.message ?? loadError)}
          </Alert>
        )}
        {!loaded && !loadError && (
          <Bullseye>
            <Spinner aria-label={t('Loading')} />
          </Bullseye>
        )}
        {loaded && !loadError && rows.length === 0 && (
          <EmptyState titleText={t('No VirtPlatformConfigs')} headingLevel="h2">
            <EmptyStateBody>{t('The operator advertises one config per profile once it runs.')}</EmptyStateBody>
          </EmptyState>
        )}
        {loaded && rows.length > 0 && (
          <Table aria-label={t('VirtPlatformConfigs')} variant="compact" data-test="config-list">
            <Thead>
              <Tr>
                <Th>{t('Name')}</Th>
                <Th>{t('Profile')}</Th>
                <Th>{t('Action')}</Th>
                <Th>{t('Phase')}</Th>
                <Th>{t('Impact')}</Th>
                <Th>{t('Items')}</Th>
                <Th>{t('Disruption forecast')}</Th>
              </Tr>
            </Thead>
            <Tbody>
              {rows.map((vpc) => (
                <Tr key={vpc.metadata?.uid ?? vpc.metadata?.name} data-test={`row-${vpc.metadata?.name}`}>
                  <Td dataLabel={t('Name')}>
                    <Link to={configPath(vpc.metadata?.name ?? '')}>{vpc.metadata?.name}</Link>
                  </Td>
                  <Td dataLabel={t('Profile')}>{vpc.spec.profile}</Td>
                  <Td dataLabel={t('Action')}>{vpc.spec.action ? t(vpc.spec.action) : '-'}</Td>
                  <Td dataLabel={t('Phase')}>
                    <Flex spaceItems={{ default: 'spaceItemsXs' }}>
                      <PhaseLabel phase={vpc.status?.phase} />
                      <UpgradeBadge vpc={vpc} />
                    </Flex>
                  </Td>
                  <Td dataLabel={t('Impact')}>
                    <ImpactLabel impact={vpc.status?.impactSeverity} />
                  </Td>
                  <Td dataLabel={t('Items')}>{vpc.status?.itemsSummary || '-'}</Td>
                  <Td dataLabel={t('Disruption forecast')}>{vpc.status?.disruption || '-'}</Td>
                </Tr>
              ))}
            </Tbody>
          </Table>
        )}
      </PageSection>
    </>
  );
};

export default ConfigListPage;
