import type { K8sGroupVersionKind, K8sModel } from '@openshift-console/dynamic-plugin-sdk';

export const VirtPlatformConfigGVK: K8sGroupVersionKind = {
  group: 'advisor.kubevirt.io',
  version: 'v1alpha1',
  kind: 'VirtPlatformConfig',
};

export const VirtPlatformConfigModel: K8sModel = {
  apiGroup: 'advisor.kubevirt.io',
  apiVersion: 'v1alpha1',
  kind: 'VirtPlatformConfig',
  plural: 'virtplatformconfigs',
  abbr: 'VPC',
  label: 'VirtPlatformConfig',
  labelPlural: 'VirtPlatformConfigs',
  namespaced: false,
  crd: true,
};

export const EventGVK: K8sGroupVersionKind = {
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
};

// The plugin's pages.
export const listPath = '/virt-advisor';
export const configPath = (name: string) => `${listPath}/${encodeURIComponent(name)}`;
