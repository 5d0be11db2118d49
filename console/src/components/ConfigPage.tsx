import * as React from 'react';
import { Link, useParams } from 'react-router';
import { useK8sWatchResource } from '@openshift-console/dynamic-plugin-sdk';
import {
  Alert,
  AlertActionLink,
  Breadcrumb,
  BreadcrumbItem,
  Bullseye,
  Content,
  Flex,
  FlexItem,
  PageSection,
  ProgressStep,
  ProgressStepper,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { usePluginTranslation } from '../i18n';
import { listPath, VirtPlatformConfigGVK } from '../models';
import { usePlanBaseline } from '../baseline';
import { activeCondition, executing, isRevertPlan, itemProgress, phaseSteps } from '../phase';
import type { Phase, VirtPlatformConfig } from '../types';
import { ApproveModal } from './ApproveModal';
import { ConfigActions } from './ConfigActions';
import { Events } from './Events';
import { Forecast, RolloutProgress } from './Forecast';
import { ItemChecklist, PlanItems } from './PlanItems';
import { ImpactLabel, PhaseLabel, UpgradeBadge } from './labels';
import './virt-advisor.css';

const conditionAlert: Partial<Record<Phase, 'info' | 'success' | 'warning' | 'danger' | 'custom'>> = {
  ReviewRequired: 'info',
  InProgress: 'info',
  Completed: 'success',
  CompletedWithUpgrade: 'info',
  Reverted: 'success',
  CompletedWithErrors: 'warning',
  Drifted: 'warning',
  Failed: 'danger',
  PrerequisiteFailed: 'danger',
};

const PhaseStepper: React.FC<{ vpc: VirtPlatformConfig }> = ({ vpc }) => {
  const { t } = usePluginTranslation();
  const steps = phaseSteps(t, vpc);
  return (
    <ProgressStepper aria-label={t('Phase')} data-test="stepper">
      {steps.map((s) => (
        <ProgressStep
          key={s.id}
          id={`step-${s.id}`}
          titleId={`step-${s.id}-title`}
          variant={s.variant}
          isCurrent={s.current}
          description={s.description}
          data-test={`step-${s.id}`}
          data-variant={s.variant}
        >
          {s.title}
        </ProgressStep>
      ))}
    </ProgressStepper>
  );
};

// ConfigPage shows one config: its phase, its plan for review (diffs, forecast), its
// progress while it executes, its Events, and the actions the user may take.
const ConfigPage: React.FC = () => {
  const { t } = usePluginTranslation();
  const { name = '' } = useParams();
  const [vpc, loaded, loadError] = useK8sWatchResource<VirtPlatformConfig>({
    groupVersionKind: VirtPlatformConfigGVK,
    name,
  });
  const found = loaded && !!vpc?.metadata?.uid;
  const baseline = usePlanBaseline(found ? vpc : undefined);
  // approving is the config as shown when Approve was clicked.
  const [approving, setApproving] = React.useState<VirtPlatformConfig>();

  if (loadError) {
    return (
      <PageSection>
        <Alert component="h2" variant="danger" isInline title={t('VirtPlatformConfig {{name}} could not be read', { name })}>
          {String(loadError?.message ?? loadError)}
        </Alert>
      </PageSection>
    );
  }
  if (!found) {
    return (
      <PageSection>
        <Bullseye>
          <Spinner aria-label={t('Loading')} />
        </Bullseye>
      </PageSection>
    );
  }

  const status = vpc.status ?? {};
  const items = status.items ?? [];
  const cond = activeCondition(vpc);
  const revert = isRevertPlan(vpc);
  const progress = itemProgress(items);
  const running = executing(vpc);

  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem>
            <Link to={listPath}>{t('Virtualization platform configs')}</Link>
          </BreadcrumbItem>
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
        <Flex className="pf-v6-u-mt-sm" alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsSm' }}>
          <FlexItem>
            <Title headingLevel="h1">{name}</Title>
          </FlexItem>
          <FlexItem>
            <PhaseLabel phase={status.phase} />
          </FlexItem>
          <FlexItem>
            <ImpactLabel impact={status.impactSeverity} />
          </FlexItem>
          <FlexItem>
            <UpgradeBadge vpc={vpc} />
          </FlexItem>
        </Flex>
        <Content component="p">
          {t('Profile {{profile}}, action {{action}}', { profile: vpc.spec.profile, action: vpc.spec.action ?? 'DryRun' })}
        </Content>
        <div className="pf-v6-u-mt-md">
          <ConfigActions
            vpc={vpc}
            approveBlocked={baseline.changed ? t('The plan changed since this page showed it: review it first') : undefined}
            onApprove={() => setApproving(vpc)}
            onChanged={(updated) => baseline.expectRedraft(updated.metadata?.generation)}
          />
        </div>
      </PageSection>

      <PageSection aria-label={t('Phase')}>
        <PhaseStepper vpc={vpc} />
        {cond && (
          <Alert
            component="h2"
            className="pf-v6-u-mt-md"
            variant={conditionAlert[status.phase ?? 'Pending'] ?? 'custom'}
            isInline
            title={`${cond.reason ?? cond.type}`}
            data-test="condition"
          >
            {cond.message}
          </Alert>
        )}
        {baseline.changed && (
          <Alert
            component="h2"
            className="pf-v6-u-mt-md"
            variant="warning"
            isInline
            title={t('The plan changed since this page showed it')}
            data-test="plan-changed"
            actionLinks={<AlertActionLink onClick={baseline.acknowledge}>{t('I reviewed the new plan')}</AlertActionLink>}
          >
            {t('The diffs and the forecast below are the new plan, hash {{hash}}.', { hash: baseline.changed })}
          </Alert>
        )}
      </PageSection>

      {running && (
        <PageSection aria-labelledby="progress-title" data-test="progress">
          <Title headingLevel="h2" id="progress-title">
            {t('Progress: {{done}} of {{total}} item(s) completed', progress)}
          </Title>
          <Flex direction={{ default: 'column' }} spaceItems={{ default: 'spaceItemsMd' }} className="pf-v6-u-mt-md">
            <RolloutProgress rollouts={status.rollouts} items={items} />
            <ItemChecklist items={items} />
          </Flex>
        </PageSection>
      )}

      <PageSection aria-labelledby="forecast-title">
        <Title headingLevel="h2" id="forecast-title">
          {t('Disruption forecast')}
        </Title>
        <Forecast rollouts={status.rollouts} disruption={status.disruption} />
      </PageSection>

      <PageSection aria-labelledby="plan-title">
        <Title headingLevel="h2" id="plan-title">
          {revert ? t('Revert plan') : t('Plan')}
        </Title>
        {status.planHash ? (
          <Content component="p">
            {t('Plan hash')}: <span className="virt-advisor-plugin__hash" data-test="plan-hash">{status.planHash}</span>
          </Content>
        ) : (
          <Content component="p">{t('No plan yet.')}</Content>
        )}
        {items.length > 0 && <PlanItems items={items} />}
      </PageSection>

      <PageSection aria-labelledby="events-title">
        <Title headingLevel="h2" id="events-title">
          {t('Events')}
        </Title>
        <Events uid={vpc.metadata?.uid ?? ''} />
      </PageSection>

      {approving && (
        <ApproveModal
          vpc={approving}
          onClose={() => setApproving(undefined)}
          onApproved={(updated) => {
            setApproving(undefined);
            baseline.expectRedraft(updated.metadata?.generation);
          }}
        />
      )}
    </>
  );
};

export default ConfigPage;
