import * as React from 'react';
import {
  Alert,
  Button,
  ClipboardCopy,
  Content,
  List,
  ListItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
} from '@patternfly/react-core';
import { usePluginTranslation } from '../i18n';
import { approve, ApprovalRefused } from '../actions';
import { forecastPools, forecastSentence } from '../forecast';
import { changes, isRevertPlan } from '../phase';
import type { VirtPlatformConfig } from '../types';

type ApproveModalProps = {
  // vpc is the config as it was shown when the modal opened: the approval is pinned to its
  // plan hash and refused if the config changed since.
  vpc: VirtPlatformConfig;
  onClose: () => void;
  onApproved: (vpc: VirtPlatformConfig) => void;
};

export const ApproveModal: React.FC<ApproveModalProps> = ({ vpc, onClose, onApproved }) => {
  const { t } = usePluginTranslation();
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<Error>();
  const hash = vpc.status?.planHash ?? '';
  const name = vpc.metadata?.name ?? '';
  const items = vpc.status?.items ?? [];
  const changing = items.filter(changes).length;
  const pools = forecastPools(vpc.status?.rollouts);
  const revert = isRevertPlan(vpc);

  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onApproved(await approve(vpc));
    } catch (e) {
      setError(e as Error);
      setBusy(false);
    }
  };

  return (
    <Modal isOpen variant="medium" onClose={onClose} aria-labelledby="approve-modal-title" data-test="approve-modal">
      <ModalHeader
        title={revert ? t('Approve the revert plan of {{name}}', { name }) : t('Approve the plan of {{name}}', { name })}
        labelId="approve-modal-title"
        titleIconVariant={vpc.status?.impactSeverity === 'High' ? 'warning' : undefined}
      />
      <ModalBody>
        <Content component="p">
          {t(
            'Approving sets spec.action to Apply and spec.approvedPlanHash to the hash of the plan shown, in one request. The operator then applies exactly this plan, item by item; a plan with another hash is never applied.',
          )}
        </Content>
        <Content component="p">
          {t('{{changing}} of {{total}} item(s) change their target.', { changing, total: items.length })}
        </Content>
        {pools.length > 0 && (
          <List data-test="approve-forecast">
            {pools.map((ro) => (
              <ListItem key={ro.pool}>{forecastSentence(t, ro)}</ListItem>
            ))}
          </List>
        )}
        <Content component="p">{t('Plan hash')}</Content>
        <ClipboardCopy isReadOnly hoverTip={t('Copy')} clickTip={t('Copied')} data-test="approve-hash">
          {hash}
        </ClipboardCopy>
        {error && (
          <Alert
            component="h2"
            variant="danger"
            isInline
            className="pf-v6-u-mt-md"
            data-test="approve-error"
            title={
              error instanceof ApprovalRefused
                ? t('Nothing was approved: the config changed since this page showed its plan')
                : t('Nothing was approved')
            }
          >
            {error instanceof ApprovalRefused ? (
              <>
                <Content component="p">
                  {error.currentHash && error.currentHash !== error.shownHash
                    ? t('The plan shown now has hash {{hash}}. Review it, then approve it.', { hash: error.currentHash })
                    : t('Review the plan again, then approve it.')}
                </Content>
                <Content component="small">{error.message}</Content>
              </>
            ) : (
              error.message
            )}
          </Alert>
        )}
      </ModalBody>
      <ModalFooter>
        <Button
          variant={vpc.status?.impactSeverity === 'High' ? 'danger' : 'primary'}
          onClick={submit}
          isLoading={busy}
          isDisabled={busy || !hash || error instanceof ApprovalRefused}
          data-test="approve-confirm"
        >
          {t('Approve')}
        </Button>
        <Button variant="link" onClick={onClose}>
          {t('Cancel')}
        </Button>
      </ModalFooter>
    </Modal>
  );
};
