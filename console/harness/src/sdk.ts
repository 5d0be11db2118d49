// The harness's @openshift-console/dynamic-plugin-sdk: the calls the plugin makes, backed by the
// real API server through `kubectl proxy` (at /kubernetes/; the console's is /api/kubernetes/).
// In the console these come from its redux store, WebSocket watches and console-fetch; here
// they are plain fetch requests with the same inputs, outputs and error contract.
import * as React from 'react';
import type {
  AccessReviewResourceAttributes,
  K8sGroupVersionKind,
  K8sModel,
  K8sResourceCommon,
  Patch,
  WatchK8sResource,
} from '@openshift-console/dynamic-plugin-sdk';

// kubectl proxy strips its API prefix unless it starts with /api, so the harness serves the
// API at /kubernetes/ where the console serves it at /api/kubernetes/.
const k8sBasePath = '/kubernetes';

// HttpError is what console-fetch throws: the message of the API server's Status.
export class HttpError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly response?: Response,
    readonly json?: unknown,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const consoleFetchJSON = async <T = unknown>(url: string, init: RequestInit = {}): Promise<T> => {
  const response = await fetch(url, {
    ...init,
    headers: { Accept: 'application/json', ...(init.headers ?? {}) },
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    const message = (json as { message?: string })?.message || response.statusText || `HTTP ${response.status}`;
    throw new HttpError(message, response.status, response, json);
  }
  return json as T;
};

type ModelRef = { plural: string; namespaced: boolean; apiGroup?: string; apiVersion: string };

const discovery = new Map<string, Promise<{ resources: { kind: string; name: string; namespaced: boolean }[] }>>();

// modelFor finds a kind's resource through API discovery, as the console's model store does.
const modelFor = async (gvk: K8sGroupVersionKind): Promise<ModelRef> => {
  const gv = gvk.group ? `/apis/${gvk.group}/${gvk.version}` : `/api/${gvk.version}`;
  if (!discovery.has(gv)) {
    discovery.set(gv, consoleFetchJSON(`${k8sBasePath}${gv}`));
  }
  const list = await discovery.get(gv)!;
  const res = list.resources.find((r) => r.kind === gvk.kind && !r.name.includes('/'));
  if (!res) {
    throw new HttpError(`no model for ${gvk.group}/${gvk.version} ${gvk.kind}`, 404);
  }
  return { plural: res.name, namespaced: res.namespaced, apiGroup: gvk.group, apiVersion: gvk.version };
};

type URLOptions = { name?: string; ns?: string; path?: string; queryParams?: Record<string, string | undefined> };

const resourceURL = (model: ModelRef | K8sModel, opts: URLOptions = {}): string => {
  let url = model.apiGroup ? `${k8sBasePath}/apis/${model.apiGroup}/${model.apiVersion}` : `${k8sBasePath}/api/${model.apiVersion}`;
  if (opts.ns && model.namespaced) {
    url += `/namespaces/${encodeURIComponent(opts.ns)}`;
  }
  url += `/${model.plural}`;
  if (opts.name) {
    url += `/${encodeURIComponent(opts.name)}`;
  }
  if (opts.path) {
    url += `/${opts.path}`;
  }
  const params = Object.entries(opts.queryParams ?? {}).filter(([, v]) => v !== undefined && v !== '');
  if (params.length > 0) {
    url += `?${params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v as string)}`).join('&')}`;
  }
  return url;
};

type GetOptions = { model: K8sModel; name?: string; ns?: string; path?: string; queryParams?: Record<string, string> };

export const k8sGet = <R extends K8sResourceCommon>(opts: GetOptions): Promise<R> =>
  consoleFetchJSON<R>(resourceURL(opts.model, opts));

type PatchOptions<R> = { model: K8sModel; resource: R; data: Patch[]; path?: string; queryParams?: Record<string, string> };

// k8sPatch sends a JSON patch (RFC 6902), as the console's k8sPatchResource does.
export const k8sPatch = <R extends K8sResourceCommon>(opts: PatchOptions<R>): Promise<R> =>
  consoleFetchJSON<R>(
    resourceURL(opts.model, {
      name: opts.resource.metadata?.name,
      ns: opts.resource.metadata?.namespace,
      path: opts.path,
      queryParams: opts.queryParams,
    }),
    { method: 'PATCH', headers: { 'Content-Type': 'application/json-patch+json' }, body: JSON.stringify(opts.data) },
  );

type SelfSubjectAccessReview = { status?: { allowed: boolean } };

export const checkAccess = (attrs: AccessReviewResourceAttributes): Promise<SelfSubjectAccessReview> =>
  consoleFetchJSON<SelfSubjectAccessReview>(`${k8sBasePath}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: attrs },
    }),
  });

// useAccessReview returns [allowed, loading]; like the console's, it allows when the review
// itself fails (the API server still decides).
export const useAccessReview = (attrs: AccessReviewResourceAttributes): [boolean, boolean] => {
  const [state, setState] = React.useState<[boolean, boolean]>([false, true]);
  const key = JSON.stringify(attrs);
  React.useEffect(() => {
    let live = true;
    checkAccess(JSON.parse(key))
      .then((r) => live && setState([!!r.status?.allowed, false]))
      .catch(() => live && setState([true, false]));
    return () => {
      live = false;
    };
  }, [key]);
  return state;
};

type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: K8sResourceCommon & { code?: number } };

// watchStream reads a watch response line by line until it ends or is aborted.
const watchStream = async (url: string, signal: AbortSignal, onEvent: (e: WatchEvent) => void): Promise<void> => {
  const response = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  if (!response.ok || !response.body) {
    throw new HttpError(response.statusText, response.status, response);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return;
    }
    buffered += decoder.decode(value, { stream: true });
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) {
        onEvent(JSON.parse(line));
      }
      nl = buffered.indexOf('\n');
    }
  }
};

type WatchState = { data: K8sResourceCommon | K8sResourceCommon[] | undefined; loaded: boolean; loadError: unknown };

// useK8sWatchResource lists (or gets) the resource, then watches it from that resourceVersion,
// listing again when the watch expires, and returns [data, loaded, loadError].
export const useK8sWatchResource = <R extends K8sResourceCommon | K8sResourceCommon[]>(
  resource: WatchK8sResource | null,
): [R, boolean, unknown] => {
  const key = JSON.stringify(resource ?? null);
  const [state, setState] = React.useState<WatchState>({ data: undefined, loaded: false, loadError: undefined });

  React.useEffect(() => {
    const res: WatchK8sResource | null = JSON.parse(key);
    if (!res?.groupVersionKind) {
      setState({ data: undefined, loaded: true, loadError: undefined });
      return undefined;
    }
    const abort = new AbortController();
    const isList = !!res.isList;
    setState({ data: isList ? [] : {}, loaded: false, loadError: undefined });

    const run = async () => {
      const model = await modelFor(res.groupVersionKind!);
      const fieldSelector = isList ? res.fieldSelector : `metadata.name=${res.name}`;
      const queryParams = { fieldSelector, limit: res.limit ? String(res.limit) : undefined };
      const byUID = new Map<string, K8sResourceCommon>();
      const publish = () => {
        const items = [...byUID.values()];
        setState({ data: isList ? items : (items[0] ?? {}), loaded: true, loadError: undefined });
      };
      while (!abort.signal.aborted) {
        byUID.clear();
        let resourceVersion: string;
        if (isList) {
          const list = await consoleFetchJSON<{ items: K8sResourceCommon[]; metadata: { resourceVersion: string } }>(
            resourceURL(model, { ns: res.namespace, queryParams }),
            { signal: abort.signal },
          );
          list.items.forEach((o) => byUID.set(o.metadata?.uid ?? '', o));
          resourceVersion = list.metadata.resourceVersion;
        } else {
          const obj = await consoleFetchJSON<K8sResourceCommon>(resourceURL(model, { ns: res.namespace, name: res.name }), {
            signal: abort.signal,
          });
          byUID.set(obj.metadata?.uid ?? '', obj);
          resourceVersion = obj.metadata?.resourceVersion ?? '';
        }
        publish();
        let expired = false;
        while (!abort.signal.aborted && !expired) {
          await watchStream(
            resourceURL(model, {
              ns: res.namespace,
              queryParams: { ...queryParams, watch: 'true', resourceVersion, allowWatchBookmarks: 'true' },
            }),
            abort.signal,
            (e) => {
              if (e.type === 'ERROR') {
                expired = true;
                return;
              }
              resourceVersion = e.object.metadata?.resourceVersion ?? resourceVersion;
              if (e.type === 'BOOKMARK') {
                return;
              }
              if (e.type === 'DELETED') {
                byUID.delete(e.object.metadata?.uid ?? '');
              } else {
                byUID.set(e.object.metadata?.uid ?? '', e.object);
              }
              publish();
            },
          );
        }
      }
    };
    run().catch((err) => {
      if (!abort.signal.aborted) {
        setState((s) => ({ ...s, loaded: true, loadError: err }));
      }
    });
    return () => abort.abort();
  }, [key]);

  return [state.data as R, state.loaded, state.loadError];
};
