import { render } from '@testing-library/react';
import { MemoryRouter, Route, Routes } from 'react-router';
import * as sdk from '@openshift-console/dynamic-plugin-sdk';
import ConfigListPage from '../components/ConfigListPage';
import ConfigPage from '../components/ConfigPage';
import type { ConfigEvent, VirtPlatformConfig } from '../types';

export const mocked = sdk as unknown as {
  useK8sWatchResource: jest.Mock;
  useAccessReview: jest.Mock;
  k8sPatch: jest.Mock;
  k8sGet: jest.Mock;
};

// cluster makes the SDK's watch return these configs and Events.
export const cluster = (configs: VirtPlatformConfig[], events: ConfigEvent[] = []) => {
  mocked.useK8sWatchResource.mockImplementation((res: { groupVersionKind?: { kind: string }; name?: string }) => {
    if (res?.groupVersionKind?.kind === 'Event') {
      return [events, true, undefined];
    }
    if (res?.name) {
      return [configs.find((c) => c.metadata?.name === res.name) ?? {}, true, undefined];
    }
    return [configs, true, undefined];
  });
};

// pages is the plugin's routes (console-extensions.json) at path.
export const pages = (path: string) => (
  <MemoryRouter initialEntries={[path]}>
    <Routes>
      <Route path="/virt-advisor" element={<ConfigListPage />} />
      <Route path="/virt-advisor/:name" element={<ConfigPage />} />
    </Routes>
  </MemoryRouter>
);

export const renderAt = (path: string) => render(pages(path));
