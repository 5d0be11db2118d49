import * as React from 'react';
import { useAccessReview } from '@openshift-console/dynamic-plugin-sdk';
import { Alert, Button, Flex, FlexItem, Tooltip } from '@patternfly/react-core';
import { usePluginTranslation } from '../i18n';
import { actionPatch, patchConfig, revertPatch } from '../actions';
import { VirtPlatformConfigModel } from '../models';
import { approvalRequired } from '../phase';
import type { VirtPlatformConfig } from '../types';
import type { Patch } from '@openshift-console/dynamic-plugin-sdk';

type ConfigActionsProps = {
  vpc: VirtPlatformConfig;
  // approveBlocked says why Approve waits (the plan changed since it was shown), if it does.
  approveBlocked?: string;
  onApprove: () => void;
  // onChanged is called with the config a successful action returned.
  onChanged: (vpc: VirtPlatformConfig) => void;
};

// usePatchAllowed tells whether the user may patch the config: every action is a patch.
export const usePatchAllowed = (name: string): [boolean, boolean] =>
  useAccessReview({
    group: VirtPlatformConfigModel.apiGroup,
    resource: VirtPlatformConfigModel.plural,
    verb: 'patch',
    name,
  });

export const ConfigActions: React.FC<ConfigActionsProps> = ({ vpc, approveBlocked, onApprove, onChanged }) => {
  const { t } = usePluginTranslation();
  const name = vpc.metadata?.name ?? '';
  const [allowed, checking] = usePatchAllowed(name);
  const [busy, setBusy] = React.useState<string>();
  const [error, setError] = React.useState<string>();
  const action = vpc.spec.action ?? 'DryRun';
  const may = allowed && !checking;
  const denied = t('You may not change VirtPlatformConfig {{name}}: this needs the patch permission on virtplatformconfigs.', {
    name,
  });

  const run = (id: string, data: Patch[]) => async () => {
    setBusy(id);
    setError(undefined);
    try {
      onChanged(await patchConfig(vpc, data));
    } catch (e) {
      setError((e as Error)?.message ?? String(e));
    } finally {
      setBusy(undefined);
    }
  };

  const withReason = (button: React.ReactElement, reason?: string) =>
    reason ? (
      <Tooltip content={reason}>
        <span tabIndex={0}>{button}</span>
      </Tooltip>
    ) : (
      button
    );

  const canApprove = may && approvalRequired(vpc) && !approveBlocked;
  const approveReason = !may
    ? checking
      ? undefined
      : denied
    : approveBlocked ?? (approvalRequired(vpc) ? undefined : t('No plan waits for an approval'));

  return (
    <>
      <Flex spaceItems={{ default: 'spaceItemsSm' }} data-test="actions">
        <FlexItem>
          {withReason(
            <Button variant="primary" isDisabled={!canApprove || !!busy} onClick={onApprove} data-test="action-approve">
              {t('Approve')}
            </Button>,
            approveReason,
          )}
        </FlexItem>
        <FlexItem>
          {withReason(
            <Button
              variant="secondary"
              isDisabled={!may || action === 'DryRun' || !!busy}
              isLoading={busy === 'dryrun'}
              onClick={run('dryrun', actionPatch('DryRun'))}
              data-test="action-dryrun"
            >
              {t('Back to DryRun')}
            </Button>,
            may || checking ? undefined : denied,
          )}
        </FlexItem>
        <FlexItem>
          {withReason(
            <Button
              variant="secondary"
              isDisabled={!may || action === 'Ignore' || !!busy}
              isLoading={busy === 'ignore'}
              onClick={run('ignore', actionPatch('Ignore'))}
              data-test="action-ignore"
            >
              {t('Ignore')}
            </Button>,
            may || checking ? undefined : denied,
          )}
        </FlexItem>
        <FlexItem>
          {vpc.spec.revert
            ? withReason(
                <Button
                  variant="secondary"
                  isDisabled={!may || !!busy}
                  isLoading={busy === 'revert'}
                  onClick={run('revert', revertPatch(true))}
                  data-test="action-cancel-revert"
                >
                  {t("Back to the profile's plan")}
                </Button>,
                may || checking ? undefined : denied,
              )
            : withReason(
                <Button
                  variant="secondary"
                  isDanger
                  isDisabled={!may || !!busy}
                  isLoading={busy === 'revert'}
                  onClick={run('revert', revertPatch(false))}
                  data-test="action-revert"
                >
                  {t('Request a revert')}
                </Button>,
                may || checking ? undefined : denied,
              )}
        </FlexItem>
      </Flex>
      {!may && !checking && (
        <Alert component="h2" variant="info" isInline isPlain title={denied} className="pf-v6-u-mt-sm" data-test="actions-denied" />
      )}
      {error && (
        <Alert component="h2" variant="danger" isInline title={t('The change was refused')} className="pf-v6-u-mt-sm" data-test="action-error">
          {error}
        </Alert>
      )}
    </>
  );
};
