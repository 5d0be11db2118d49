import * as React from 'react';
import { Label } from '@patternfly/react-core';
import { ArrowCircleUpIcon } from '@patternfly/react-icons';
import { usePluginTranslation } from '../i18n';
import { upgradeAvailable } from '../phase';
import type { ImpactSeverity, ItemState, Phase, VirtPlatformConfig } from '../types';

type LabelStatus = 'success' | 'warning' | 'danger' | 'info' | 'custom' | undefined;

const phaseStatus: Partial<Record<Phase, LabelStatus>> = {
  ReviewRequired: 'info',
  InProgress: 'info',
  Completed: 'success',
  CompletedWithUpgrade: 'success',
  Reverted: 'success',
  CompletedWithErrors: 'warning',
  Drifted: 'warning',
  Failed: 'danger',
  PrerequisiteFailed: 'danger',
};

export const PhaseLabel: React.FC<{ phase?: Phase }> = ({ phase }) => {
  const { t } = usePluginTranslation();
  if (!phase) {
    return <>{t('Pending')}</>;
  }
  const status = phaseStatus[phase];
  return status ? (
    <Label status={status} data-test="phase">
      {t(phase)}
    </Label>
  ) : (
    <Label data-test="phase">{t(phase)}</Label>
  );
};

const impactColor: Record<ImpactSeverity, 'green' | 'orange' | 'red'> = {
  Low: 'green',
  Medium: 'orange',
  High: 'red',
};

export const ImpactLabel: React.FC<{ impact?: ImpactSeverity }> = ({ impact }) => {
  const { t } = usePluginTranslation();
  if (!impact) {
    return <>-</>;
  }
  return (
    <Label color={impactColor[impact]} isCompact data-test="impact">
      {t('{{impact}} impact', { impact: t(impact) })}
    </Label>
  );
};

const itemStateStatus: Record<ItemState, LabelStatus> = {
  Pending: undefined,
  InProgress: 'info',
  Completed: 'success',
  Failed: 'danger',
  Skipped: undefined,
};

export const ItemStateLabel: React.FC<{ state?: ItemState }> = ({ state }) => {
  const { t } = usePluginTranslation();
  const s = state ?? 'Pending';
  const status = itemStateStatus[s];
  return status ? (
    <Label status={status} isCompact>
      {t(s)}
    </Label>
  ) : (
    <Label isCompact>{t(s)}</Label>
  );
};

// UpgradeBadge shows that a newer operator would render a different plan for a completed
// config (phase CompletedWithUpgrade, condition UpgradeAvailable).
export const UpgradeBadge: React.FC<{ vpc: VirtPlatformConfig }> = ({ vpc }) => {
  const { t } = usePluginTranslation();
  return upgradeAvailable(vpc) ? (
    <Label color="purple" icon={<ArrowCircleUpIcon />} isCompact data-test="upgrade-badge">
      {t('Upgrade available')}
    </Label>
  ) : null;
};
