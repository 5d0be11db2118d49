// The harness's host page: it loads the built plugin the way the console does (its
// plugin-manifest.json through @openshift/dynamic-plugin-sdk's PluginStore, the entry script,
// the shared modules of the console's share scope) and renders its navigation items and
// routes in a PatternFly page.
import * as React from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Route, Routes, useLocation, useNavigate, NavLink } from 'react-router';
import i18n from 'i18next';
import { initReactI18next } from 'react-i18next';
import {
  PluginStore,
  PluginStoreProvider,
  useResolvedExtensions,
  type Extension,
  type ResolvedExtension,
} from '@openshift/dynamic-plugin-sdk';
import {
  Alert,
  Masthead,
  MastheadBrand,
  MastheadMain,
  Nav,
  NavItem,
  NavList,
  Page,
  PageSidebar,
  PageSidebarBody,
  Title,
} from '@patternfly/react-core';
import '@patternfly/patternfly/patternfly.css';
import '@patternfly/patternfly/patternfly-addons.css';

// The plugins to load, and the console version they may depend on (@console/pluginAPI).
const plugins = ['virt-advisor-plugin'];
const consoleVersion = '4.22.0';

type RoutePage = Extension<'console.page/route', { path: string | string[]; exact?: boolean; component: React.ComponentType }>;
type HrefNavItem = Extension<'console.navigation/href', { id: string; name: string; href: string }>;

const isRoutePage = (e: Extension): e is RoutePage => e.type === 'console.page/route';
const isHrefNavItem = (e: Extension): e is HrefNavItem => e.type === 'console.navigation/href';

// translate resolves the console's "%namespace~key%" strings of extensions.
const translate = (s: string) => {
  const m = /^%(.+)%$/.exec(s);
  return m ? i18n.t(m[1]) : s;
};

// loadLocales adds the plugin's English strings, from the locales/ folder it ships.
const loadLocales = async (plugin: string) => {
  const ns = `plugin__${plugin}`;
  const response = await fetch(`/api/plugins/${plugin}/locales/en/${ns}.json`, { cache: 'no-cache' });
  if (response.ok) {
    i18n.addResourceBundle('en', ns, await response.json());
  }
};

const Routed: React.FC<{ routes: ResolvedExtension<RoutePage>[] }> = ({ routes }) => (
  <Routes>
    {routes.flatMap((r) =>
      ([] as string[]).concat(r.properties.path).map((path) => {
        const Component = r.properties.component as unknown as React.ComponentType;
        return <Route key={`${r.uid}-${path}`} path={r.properties.exact === false ? `${path}/*` : path} element={<Component />} />;
      }),
    )}
    <Route path="*" element={<Title headingLevel="h1">Console plugin harness</Title>} />
  </Routes>
);

// StartRoute goes to the route named by ?route= once, so a test can open a page directly.
const StartRoute: React.FC = () => {
  const navigate = useNavigate();
  const location = useLocation();
  React.useEffect(() => {
    const route = new URLSearchParams(location.search).get('route');
    if (route) {
      navigate(route, { replace: true });
    }
    // Only at startup.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return null;
};

const App: React.FC<{ errors: string[] }> = ({ errors }) => {
  const [routes, routesResolved] = useResolvedExtensions<RoutePage>(isRoutePage);
  const [navItems] = useResolvedExtensions<HrefNavItem>(isHrefNavItem);
  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadBrand>
          <Title headingLevel="h2" size="lg">
            Console plugin harness
          </Title>
        </MastheadBrand>
      </MastheadMain>
    </Masthead>
  );
  const sidebar = (
    <PageSidebar>
      <PageSidebarBody>
        <Nav aria-label="Plugin navigation">
          <NavList>
            {navItems.map((n) => (
              <NavItem key={n.uid} itemId={n.properties.id}>
                <NavLink to={n.properties.href}>{translate(n.properties.name)}</NavLink>
              </NavItem>
            ))}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page masthead={masthead} sidebar={sidebar} isManagedSidebar={false} mainContainerId="content">
      {errors.map((e) => (
        <Alert key={e} variant="danger" title={e} isInline data-test="plugin-error" />
      ))}
      <StartRoute />
      {routesResolved && <Routed routes={routes} />}
    </Page>
  );
};

const start = async () => {
  await i18n.use(initReactI18next).init({
    lng: 'en',
    fallbackLng: 'en',
    resources: {},
    nsSeparator: '~',
    keySeparator: false,
    interpolation: { escapeValue: false },
    showSupportNotice: false,
  });
  await __webpack_init_sharing__('default');
  const store = new PluginStore({
    loaderOptions: {
      sharedScope: __webpack_share_scopes__.default,
      customDependencyResolutions: { '@console/pluginAPI': consoleVersion },
    },
  });
  const errors: string[] = [];
  for (const plugin of plugins) {
    await loadLocales(plugin);
    try {
      await store.loadPlugin(`/api/plugins/${plugin}/plugin-manifest.json`);
    } catch (e) {
      errors.push(`plugin ${plugin}: ${String(e)}`);
    }
    const info = store.getPluginInfo().find((p) => p.manifest.name === plugin);
    if (info?.status === 'failed') {
      errors.push(`plugin ${plugin} failed to load: ${info.errorMessage} ${String(info.errorCause ?? '')}`);
    }
  }
  (window as unknown as { harnessPlugins: unknown }).harnessPlugins = store.getPluginInfo().map((p) => ({
    name: p.manifest.name,
    status: p.status,
  }));
  createRoot(document.getElementById('root')!).render(
    <PluginStoreProvider store={store}>
      <BrowserRouter>
        <App errors={errors} />
      </BrowserRouter>
    </PluginStoreProvider>,
  );
};

void start();
