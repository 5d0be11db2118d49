import { k8sGet, k8sPatch, type Patch } from '@openshift-console/dynamic-plugin-sdk';
import { VirtPlatformConfigModel } from './models';
import type { Action, VirtPlatformConfig } from './types';

// The changes the pages make to a config: each one request, the same changes as the
// kubectl plugin's commands (internal/cli).

// approvalPatch approves the plan shown: spec.action Apply and spec.approvedPlanHash the
// plan's hash, refused by the API server (the test operations) when the config is no longer
// the one the hash was shown from.
export const approvalPatch = (resourceVersion: string, planHash: string): Patch[] => [
  { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
  { op: 'test', path: '/status/planHash', value: planHash },
  { op: 'add', path: '/spec/action', value: 'Apply' },
  { op: 'add', path: '/spec/approvedPlanHash', value: planHash },
];

export const actionPatch = (action: Exclude<Action, 'Apply'>): Patch[] => [
  { op: 'add', path: '/spec/action', value: action },
];

// revertPatch asks for the revert plan, for review (spec.action DryRun, as `kubectl
// virt-advisor revert` does), or with cancel for the profile's plan again.
export const revertPatch = (cancel: boolean): Patch[] =>
  cancel
    ? [{ op: 'add', path: '/spec/revert', value: false }]
    : [
        { op: 'add', path: '/spec/revert', value: true },
        { op: 'add', path: '/spec/action', value: 'DryRun' },
      ];

export const patchConfig = (vpc: VirtPlatformConfig, data: Patch[]): Promise<VirtPlatformConfig> =>
  k8sPatch<VirtPlatformConfig>({ model: VirtPlatformConfigModel, resource: vpc, data });

// ApprovalRefused is an approval the API server refused because the config changed after
// the plan was shown.
export class ApprovalRefused extends Error {
  constructor(
    message: string,
    readonly shownHash: string,
    readonly currentHash?: string,
  ) {
    super(message);
    this.name = 'ApprovalRefused';
  }
}

// approve sends the approval of the plan shown in vpc. When the API server refuses it, the
// config is read again: if it changed since, the refusal says so.
export const approve = async (vpc: VirtPlatformConfig): Promise<VirtPlatformConfig> => {
  const shown = vpc.status?.planHash ?? '';
  try {
    return await patchConfig(vpc, approvalPatch(vpc.metadata?.resourceVersion ?? '', shown));
  } catch (err) {
    let current: VirtPlatformConfig | undefined;
    try {
      current = await k8sGet<VirtPlatformConfig>({ model: VirtPlatformConfigModel, name: vpc.metadata?.name });
    } catch {
      throw err;
    }
    if (current?.metadata?.resourceVersion !== vpc.metadata?.resourceVersion) {
      throw new ApprovalRefused((err as Error)?.message ?? String(err), shown, current?.status?.planHash);
    }
    throw err;
  }
};
