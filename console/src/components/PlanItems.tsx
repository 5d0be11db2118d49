import * as React from 'react';
import {
  Alert,
  Card,
  CardBody,
  CardHeader,
  CardTitle,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Flex,
  FlexItem,
  Icon,
  List,
  ListItem,
  Spinner,
  ToggleGroup,
  ToggleGroupItem,
} from '@patternfly/react-core';
import {
  BanIcon,
  CheckCircleIcon,
  ExclamationCircleIcon,
  OutlinedCircleIcon,
} from '@patternfly/react-icons';
import { usePluginTranslation } from '../i18n';
import { conflictKeys } from '../diff';
import { isRevertItem } from '../phase';
import type { FieldConflict, ItemAction, PlanItem, TargetReference } from '../types';
import { DiffView, type DiffMode } from './DiffView';
import { ImpactLabel, ItemStateLabel } from './labels';

export const describeTarget = (ref: TargetReference): string =>
  `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} (${ref.apiVersion})`;

const useActionMeaning = (): Record<Exclude<ItemAction, 'Apply'>, string> => {
  const { t } = usePluginTranslation();
  return {
    Release: t("the target keeps its values; this profile's fields and marks are handed back"),
    Delete: t('the target, which this profile created, is deleted'),
    Restore: t('the values this profile replaced are put back, the fields it added removed, its fields handed back'),
  };
};

const ConflictText: React.FC<{ item: PlanItem; conflict: FieldConflict }> = ({ item, conflict: c }) => {
  const { t } = usePluginTranslation();
  if (isRevertItem(item)) {
    const now = c.liveValue
      ? t('{{manager}} set it to {{value}}', { manager: c.manager, value: c.liveValue, interpolation: { escapeValue: false } })
      : t('it was removed');
    const back =
      c.plannedValue === '(absent)'
        ? t('the revert removes it, as it was absent before')
        : t('the revert puts back {{value}}', { value: c.plannedValue || '-', interpolation: { escapeValue: false } });
    return (
      <>
        {t('{{path}} changed since the apply ({{now}}); {{back}}', {
          path: c.path,
          now,
          back,
          interpolation: { escapeValue: false },
        })}
      </>
    );
  }
  return (
    <>
      {t('{{path}} is owned by {{manager}} with {{live}}; the plan sets {{planned}}', {
        path: c.path,
        manager: c.manager,
        live: c.liveValue || '-',
        planned: c.plannedValue || '-',
        interpolation: { escapeValue: false },
      })}
    </>
  );
};

const PlanItemCard: React.FC<{ item: PlanItem; index: number; total: number; mode: DiffMode }> = ({
  item,
  index,
  total,
  mode,
}) => {
  const { t } = usePluginTranslation();
  const meaning = useActionMeaning();
  const conflicts = item.conflicts ?? [];
  const keys = React.useMemo(() => conflictKeys(conflicts.map((c) => c.path)), [conflicts]);
  const noChange = !item.diff || item.change === 'None';
  const applied = item.state === 'Completed' || item.state === 'InProgress';
  const action = item.action && item.action !== 'Apply' ? item.action : undefined;
  return (
    <Card isCompact data-test="plan-item" data-item={item.name} component="section">
      <CardHeader>
        <Flex spaceItems={{ default: 'spaceItemsSm' }} alignItems={{ default: 'alignItemsCenter' }}>
          <FlexItem>
            <CardTitle component="h3">
              {t('Item {{index}}/{{total}}: {{name}}', { index, total, name: item.name })}
              {action ? ` (${t(action)})` : ''}
            </CardTitle>
          </FlexItem>
          <FlexItem>
            <ItemStateLabel state={item.state} />
          </FlexItem>
          <FlexItem>
            <ImpactLabel impact={item.impactSeverity} />
          </FlexItem>
        </Flex>
      </CardHeader>
      <CardBody>
        <DescriptionList isCompact isHorizontal>
          <DescriptionListGroup>
            <DescriptionListTerm>{t('Target')}</DescriptionListTerm>
            <DescriptionListDescription>{describeTarget(item.targetRef)}</DescriptionListDescription>
          </DescriptionListGroup>
          {action && (
            <DescriptionListGroup>
              <DescriptionListTerm>{t('Action')}</DescriptionListTerm>
              <DescriptionListDescription>{`${t(action)}: ${meaning[action]}`}</DescriptionListDescription>
            </DescriptionListGroup>
          )}
          {item.message && (
            <DescriptionListGroup>
              <DescriptionListTerm>{t('Message')}</DescriptionListTerm>
              <DescriptionListDescription data-test="plan-item-message">{item.message}</DescriptionListDescription>
            </DescriptionListGroup>
          )}
          {(item.components ?? []).length > 0 && (
            <DescriptionListGroup>
              <DescriptionListTerm>{t('Components')}</DescriptionListTerm>
              <DescriptionListDescription>{(item.components ?? []).join(', ')}</DescriptionListDescription>
            </DescriptionListGroup>
          )}
        </DescriptionList>
        {conflicts.length > 0 && (
          <Alert
            variant="warning"
            isInline
            isPlain
            title={
              isRevertItem(item)
                ? t('Changed since the apply this item reverts')
                : t('Conflicts with other field managers: applying the approved plan takes these fields over')
            }
            data-test="conflicts"
          >
            <List>
              {conflicts.map((c) => (
                <ListItem key={c.path}>
                  <ConflictText item={item} conflict={c} />
                </ListItem>
              ))}
            </List>
          </Alert>
        )}
        {item.state === 'Skipped' ? null : noChange ? (
          <Content component="p">{t('(no changes)')}</Content>
        ) : (
          <>
            {applied && <Content component="p">{t('Applied, with this change:')}</Content>}
            <DiffView
              diff={item.diff ?? ''}
              mode={mode}
              conflictKeys={keys}
              label={t('Diff of item {{name}}', { name: item.name })}
              collapsed={applied ? true : undefined}
            />
          </>
        )}
      </CardBody>
    </Card>
  );
};

// PlanItems shows the plan's items, each with its diff, side by side or inline.
export const PlanItems: React.FC<{ items: PlanItem[] }> = ({ items }) => {
  const { t } = usePluginTranslation();
  const [mode, setMode] = React.useState<DiffMode>('split');
  return (
    <>
      <ToggleGroup aria-label={t('Diff layout')}>
        <ToggleGroupItem
          text={t('Side by side')}
          buttonId="diff-split"
          isSelected={mode === 'split'}
          onChange={() => setMode('split')}
        />
        <ToggleGroupItem
          text={t('Inline')}
          buttonId="diff-unified"
          isSelected={mode === 'unified'}
          onChange={() => setMode('unified')}
        />
      </ToggleGroup>
      <Flex direction={{ default: 'column' }} spaceItems={{ default: 'spaceItemsMd' }} className="pf-v6-u-mt-md">
        {items.map((item, i) => (
          <PlanItemCard key={item.name} item={item} index={i + 1} total={items.length} mode={mode} />
        ))}
      </Flex>
    </>
  );
};

const stateIcon = (item: PlanItem, t: (k: string) => string): React.ReactNode => {
  switch (item.state) {
    case 'Completed':
      return (
        <Icon status="success">
          <CheckCircleIcon title={t('Completed')} />
        </Icon>
      );
    case 'InProgress':
      return <Spinner size="md" aria-label={t('In progress')} />;
    case 'Failed':
      return (
        <Icon status="danger">
          <ExclamationCircleIcon title={t('Failed')} />
        </Icon>
      );
    case 'Skipped':
      return (
        <Icon>
          <BanIcon title={t('Skipped')} />
        </Icon>
      );
    default:
      return (
        <Icon>
          <OutlinedCircleIcon title={t('Pending')} />
        </Icon>
      );
  }
};

// ItemChecklist shows the items' states while the plan executes.
export const ItemChecklist: React.FC<{ items: PlanItem[] }> = ({ items }) => {
  const { t } = usePluginTranslation();
  return (
    <ul className="virt-advisor-plugin__checklist" aria-label={t('Items')} data-test="checklist">
      {items.map((item) => (
        <li key={item.name} data-test={`check-${item.name}`} data-state={item.state ?? 'Pending'}>
          {stateIcon(item, t)}
          <span>
            <strong>{item.name}</strong> <ItemStateLabel state={item.state} />
            {item.message && <Content component="small"> {item.message}</Content>}
          </span>
        </li>
      ))}
    </ul>
  );
};
