import type { PlanItem, VirtPlatformConfig } from '../types';

export const planHash = 'a3f1c0de9b8e7f6a5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d';

const swapDiff = `--- /dev/null
+++ planned
@@ -0,0 +1,8 @@
+apiVersion: machineconfiguration.openshift.io/v1
+kind: MachineConfig
+metadata:
+  labels:
+    machineconfiguration.openshift.io/role: worker
+  name: 90-worker-kubelet-swap
+spec:
+  kernelArguments: []
`;

const healthDiff = `--- live
+++ planned
@@ -3,6 +3,6 @@
 metadata:
   name: virt-advisor-worker-health
 spec:
-  minHealthy: 30%
+  minHealthy: 51%
   selector:
     matchExpressions:
`;

// longDiff has many lines, like a MachineConfig carrying files.
export const longDiff = [
  '--- live',
  '+++ planned',
  '@@ -1,3 +1,203 @@',
  ' spec:',
  '   config:',
  '     storage:',
  ...Array.from({ length: 200 }, (_, i) => `+      - path: /etc/file-${i}`),
  '',
].join('\n');

export const items: PlanItem[] = [
  {
    name: 'swap',
    targetRef: { apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'MachineConfig', name: '90-worker-kubelet-swap' },
    impactSeverity: 'High',
    diff: swapDiff,
    change: 'Values',
    state: 'Pending',
    message: 'Swap on worker nodes from the partition labelled CNV_SWAP',
  },
  {
    name: 'node-health-check',
    targetRef: { apiVersion: 'remediation.medik8s.io/v1alpha1', kind: 'NodeHealthCheck', name: 'virt-advisor-worker-health' },
    impactSeverity: 'Low',
    diff: healthDiff,
    change: 'Values',
    state: 'Pending',
    conflicts: [{ path: 'spec.minHealthy', manager: 'argocd-controller', liveValue: '"30%"', plannedValue: '"51%"' }],
  },
  {
    name: 'mtv',
    targetRef: { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'ForkliftController', name: 'forklift-controller', namespace: 'openshift-mtv' },
    impactSeverity: 'Low',
    state: 'Skipped',
    message: 'install the Migration Toolkit for Virtualization operator',
  },
];

export const reviewConfig = (over: Partial<VirtPlatformConfig['status']> = {}): VirtPlatformConfig => ({
  apiVersion: 'advisor.kubevirt.io/v1alpha1',
  kind: 'VirtPlatformConfig',
  metadata: { name: 'platform-baseline', uid: 'uid-1', resourceVersion: '1200', generation: 1 },
  spec: { profile: 'platform-baseline', action: 'DryRun' },
  status: {
    phase: 'ReviewRequired',
    observedGeneration: 1,
    impactSeverity: 'High',
    planHash,
    itemsSummary: '0/2',
    disruption: 'reboots 3 worker nodes once, in 3 waves',
    approval: {
      required: true,
      command: `kubectl patch vpc platform-baseline --type merge -p '{"spec":{"action":"Apply","approvedPlanHash":"${planHash}"}}'`,
    },
    conditions: [
      { type: 'ReviewRequired', status: 'True', reason: 'AwaitingApproval', message: 'Review the plan, then approve it' },
      { type: 'Ready', status: 'False', reason: 'ReviewRequired' },
    ],
    items: JSON.parse(JSON.stringify(items)) as PlanItem[],
    rollouts: [
      {
        pool: 'worker',
        items: ['swap'],
        nodes: 3,
        maxUnavailable: '1',
        waves: 3,
        reboot: true,
        pause: true,
        reasons: ['files change: /etc/systemd/system/swap.service'],
        estimatedDuration: 'unknown',
      },
      { pool: 'master', nodes: 3, maxUnavailable: '1', waves: 3 },
    ],
    ...over,
  },
});
