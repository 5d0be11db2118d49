// Browser scenarios of the console plugin, run by test/console (go test) against a control
// plane with the operator: Debian's Chromium driven by playwright-core opens the harness's
// host page, which loads the built plugin from its plugin-manifest.json.
//
//   node integration/console.mjs <scenario>
//
// Environment: CONSOLE_URL (the administrator's kubectl proxy: host page, plugin, API at
// /kubernetes/), REVIEWER_URL (the same for a user who may only read), SCREENSHOTS (a
// directory), BROWSER_PROFILES (where fresh browser profiles go), CHROMIUM (default
// /usr/bin/chromium), EXPECTED_FORECAST (review: the pools of `kubectl virt-advisor plan`).
// The last line a scenario prints, "RESULT {...}", is what it observed.
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const axePath = require.resolve('axe-core/axe.min.js');

const consoleURL = process.env.CONSOLE_URL;
const reviewerURL = process.env.REVIEWER_URL;
const screenshots = process.env.SCREENSHOTS;
const profiles = process.env.BROWSER_PROFILES ?? '/tmp';
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const name = 'platform-baseline';
const configPath = `/virt-advisor/${name}`;

const log = (...args) => console.log(`[${new Date().toISOString().slice(11, 23)}]`, ...args);

class ScenarioError extends Error {}
const check = (ok, message) => {
  if (!ok) {
    throw new ScenarioError(message);
  }
};

// poll calls fn until it returns a truthy value or timeoutMs passes.
const poll = async (what, fn, timeoutMs = 60_000, everyMs = 200) => {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await fn();
      if (value) {
        return value;
      }
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new ScenarioError(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
};

// api reads and writes the cluster as the administrator, through the same proxy.
const api = async (urlPath, init = {}) => {
  const response = await fetch(`${consoleURL}/kubernetes${urlPath}`, init);
  const body = await response.json();
  if (!response.ok) {
    throw new Error(`${init.method ?? 'GET'} ${urlPath}: ${response.status} ${body.message}`);
  }
  return body;
};
const getConfig = () => api(`/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/${name}`);
const mergePatchConfig = (patch) =>
  api(`/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/${name}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: JSON.stringify(patch),
  });

const launch = async () => {
  const userDataDir = mkdtempSync(path.join(profiles, 'chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1440, height: 1000 },
  });
  return context;
};

// open opens the host page at route and waits until the plugin is loaded.
const open = async (context, base, route) => {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') {
      log('browser console:', m.text().slice(0, 300));
    }
  });
  await page.goto(`${base}/${route ? `?route=${encodeURIComponent(route)}` : ''}`);
  await page.waitForFunction(() => window.harnessPlugins?.length > 0, null, { timeout: 60_000 });
  const plugins = await page.evaluate(() => window.harnessPlugins);
  check(
    plugins.every((p) => p.status === 'loaded'),
    `the plugin did not load: ${JSON.stringify(plugins)} ${await page.locator('[data-test=plugin-error]').allTextContents()}`,
  );
  return page;
};

// accessible runs axe-core on the plugin's part of the page and fails on a serious or
// critical violation.
const accessible = async (page, what) => {
  await page.addScriptTag({ path: axePath });
  const results = await page.evaluate(() =>
    window.axe.run(document.getElementById('content') ?? document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    }),
  );
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const others = results.violations.filter((v) => !serious.includes(v));
  log(`axe on ${what}: ${serious.length} serious or critical, ${others.length} minor or moderate (${others.map((v) => v.id).join(', ') || 'none'})`);
  check(
    serious.length === 0,
    `axe found serious violations on ${what}:\n${serious
      .map((v) => `${v.id} (${v.impact}): ${v.help}\n  ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('\n  ')}`)
      .join('\n')}`,
  );
};

// shoot writes a screenshot of the whole page: the page scrolls inside PatternFly's main
// container, so the viewport grows to its height for the shot (at most maxHeight).
const shoot = async (page, file, maxHeight = 4000) => {
  const target = path.join(screenshots, file);
  const viewport = page.viewportSize();
  const height = await page.evaluate(() => document.querySelector('#content')?.scrollHeight ?? 0);
  await page.setViewportSize({ width: viewport.width, height: Math.min(maxHeight, Math.max(viewport.height, height + 120)) });
  await page.screenshot({ path: target });
  await page.setViewportSize(viewport);
  log(`screenshot ${target}`);
};

const text = (locator) => locator.innerText();

const scenarios = {
  // The list: every advertised profile, and platform-baseline waiting for review.
  async list(context) {
    const page = await open(context, consoleURL, '');
    await page.getByRole('link', { name: 'Virt Advisor' }).click();
    const table = page.locator('[data-test=config-list]');
    await table.waitFor();
    await poll('the three profiles', async () => (await table.locator('tbody tr').count()) === 3);
    const names = await table.locator('tbody tr td:first-child').allInnerTexts();
    check(
      JSON.stringify(names) === JSON.stringify(['load-aware-rebalancing', 'platform-baseline', 'virt-higher-density']),
      `rows ${names}`,
    );
    const row = page.locator(`[data-test=row-${name}]`);
    const vpc = await getConfig();
    const cells = await row.locator('td').allInnerTexts();
    log('platform-baseline row:', JSON.stringify(cells));
    check(cells[1] === name && cells[2] === 'DryRun', `profile and action: ${cells}`);
    check(cells[3].includes('ReviewRequired'), `phase: ${cells[3]}`);
    check(cells[4].includes(`${vpc.status.impactSeverity} impact`), `impact: ${cells[4]}`);
    check(cells[5] === vpc.status.itemsSummary, `items: ${cells[5]}`);
    check(cells[6] === vpc.status.disruption, `disruption: ${cells[6]} (status: ${vpc.status.disruption})`);
    await accessible(page, 'the list');
    await shoot(page, 'console-list.png');
    await row.getByRole('link', { name }).click();
    await page.locator('[data-test=plan-hash]').waitFor();
    check(page.url().endsWith(configPath), `the link goes to ${page.url()}`);
    return {};
  },

  // The review: stepper, diffs side by side and inline, conflicts, the forecast of the CLI,
  // the Events; and the time the plan takes to render.
  async review(context) {
    const vpc = await getConfig();
    const items = vpc.status.items;
    const start = Date.now();
    const page = await open(context, consoleURL, configPath);
    await poll('every item', async () => (await page.locator('[data-test=plan-item]').count()) === items.length);
    const rendered = Date.now() - start;
    const diffLines = items.reduce((n, it) => n + (it.diff ? it.diff.split('\n').length : 0), 0);
    log(`load time of the ${name} page (${items.length} items, ${diffLines} diff lines): ${rendered} ms from opening the host page to every item shown`);

    const review = page.locator('[data-test=step-review]');
    check((await review.getAttribute('class')).includes('pf-m-current'), 'the review step is current');
    check((await page.locator('[data-test=plan-hash]').innerText()) === vpc.status.planHash, 'the plan hash is shown');

    // The forecast: the numbers of kubectl virt-advisor plan, pool by pool.
    const expected = JSON.parse(process.env.EXPECTED_FORECAST ?? '[]');
    check(expected.length > 0, 'EXPECTED_FORECAST names the pools');
    for (const pool of expected) {
      const row = page.locator(`[data-test=forecast-${pool.pool}]`);
      const shown = {
        pool: await text(row.locator('[data-test=pool]')),
        nodes: await text(row.locator('[data-test=nodes]')),
        reboot: await text(row.locator('[data-test=reboot]')),
        waves: await text(row.locator('[data-test=waves]')),
        maxUnavailable: await text(row.locator('[data-test=max-unavailable]')),
        duration: await text(row.locator('[data-test=duration]')),
      };
      log('forecast shown:', JSON.stringify(shown), 'kubectl virt-advisor plan:', JSON.stringify(pool));
      check(JSON.stringify(shown) === JSON.stringify(pool), `the forecast of pool ${pool.pool} differs from the CLI's`);
    }

    // Each changing item's diff: side by side, then inline.
    const changing = items.filter((it) => it.diff && it.change !== 'None' && it.state !== 'Skipped');
    check(changing.length > 0, 'the plan changes something');
    for (const it of changing) {
      const card = page.locator(`[data-test=plan-item][data-item="${it.name}"]`);
      const diff = card.locator('[data-test=diff]');
      if ((await diff.getAttribute('data-open')) !== 'true') {
        await diff.getByRole('button', { name: /^Show the diff/ }).click();
      }
      const added = it.diff.split('\n').find((l) => l.startsWith('+') && !l.startsWith('+++') && l.trim().length > 3);
      if (added) {
        await poll(`a line of ${it.name}'s diff`, async () => (await card.locator('table').innerText()).includes(added.slice(1).trim()));
      }
    }
    check((await page.locator('table[data-mode=split]').count()) === changing.length, 'the diffs are side by side');
    check((await page.locator('table[data-mode=split] th', { hasText: 'Live object' }).count()) > 0, 'a change has its live side');
    await page.getByRole('button', { name: 'Inline' }).click();
    check((await page.locator('table[data-mode=unified]').count()) === changing.length, 'the diffs are inline');

    // The conflict with argocd-controller is named and its lines are marked.
    const withConflicts = items.filter((it) => (it.conflicts ?? []).length > 0);
    check(withConflicts.length > 0, 'the plan shows the conflict with argocd-controller');
    for (const it of withConflicts) {
      const card = page.locator(`[data-test=plan-item][data-item="${it.name}"]`);
      const conflictText = await card.locator('[data-test=conflicts]').innerText();
      for (const c of it.conflicts) {
        check(conflictText.includes(c.path) && conflictText.includes(c.manager), `conflict ${c.path} of ${it.name}: ${conflictText}`);
      }
      check((await card.locator('tr[data-conflict]').count()) > 0, `the diff of ${it.name} marks the conflicting lines`);
    }

    // The Events about this config.
    const events = await api(
      `/apis/events.k8s.io/v1/events?fieldSelector=${encodeURIComponent(`regarding.uid=${vpc.metadata.uid}`)}`,
    );
    check(events.items.length > 0, 'the config has Events');
    const eventsTable = page.locator('[data-test=events]');
    await poll('the Events', async () => (await eventsTable.locator('tbody tr').count()) >= events.items.length);
    const reasons = await eventsTable.locator('tbody tr td:nth-child(3)').allInnerTexts();
    for (const e of events.items) {
      check(reasons.includes(e.reason), `Event ${e.reason} is listed: ${reasons}`);
    }

    await page.getByRole('button', { name: 'Side by side' }).click();
    await accessible(page, 'the review page');
    await shoot(page, 'console-review.png');
    return { renderMs: rendered };
  },

  // A reviewer who may not patch the config sees every action disabled, and why.
  async restricted(context) {
    const page = await open(context, reviewerURL, configPath);
    await page.locator('[data-test=plan-hash]').waitFor();
    await page.locator('[data-test=actions-denied]').waitFor();
    for (const action of ['approve', 'dryrun', 'ignore', 'revert']) {
      check(await page.locator(`[data-test=action-${action}]`).isDisabled(), `${action} is disabled for the reviewer`);
    }
    await accessible(page, 'the review page of a reviewer');
    return {};
  },

  // The plan changes while the approval dialog is open: the approval is refused.
  async stale(context) {
    const page = await open(context, consoleURL, configPath);
    await page.locator('[data-test=plan-hash]').waitFor();
    const before = await getConfig();
    await page.locator('[data-test=action-approve]').click();
    const modal = page.getByRole('dialog');
    const shown = await modal.locator('[data-test=approve-hash] input').inputValue();
    check(shown === before.status.planHash, `the modal shows the plan hash (${shown})`);

    // Someone changes the spec: the operator drafts a new plan.
    await mergePatchConfig({ spec: { failurePolicy: 'Continue' } });
    const after = await poll('the new plan', async () => {
      const vpc = await getConfig();
      return vpc.status.phase === 'ReviewRequired' &&
        vpc.status.observedGeneration === vpc.metadata.generation &&
        vpc.status.planHash !== shown
        ? vpc
        : undefined;
    });
    await modal.locator('[data-test=approve-confirm]').click();
    const refusal = modal.locator('[data-test=approve-error]');
    await refusal.waitFor();
    const message = await refusal.innerText();
    log('refusal:', message.replace(/\n/g, ' | '));
    check(message.includes('Nothing was approved: the config changed since this page showed its plan'), 'the refusal says why');
    check(message.includes(after.status.planHash), 'the refusal names the plan shown now');
    await accessible(page, 'the refused approval');
    await modal.getByRole('button', { name: 'Cancel' }).click();

    // The page points out the new plan and holds Approve until it is taken in.
    await page.locator('[data-test=plan-changed]').waitFor();
    check(await page.locator('[data-test=action-approve]').isDisabled(), 'Approve waits for the new plan to be reviewed');
    await page.getByRole('button', { name: 'I reviewed the new plan' }).click();
    await poll('Approve enabled', () => page.locator('[data-test=action-approve]').isEnabled());
    return { refusedHash: shown, newHash: after.status.planHash };
  },

  // Approving in the modal; the rollout wave by wave to Completed.
  async approve(context) {
    const page = await open(context, consoleURL, configPath);
    await page.locator('[data-test=plan-hash]').waitFor();
    await page.locator('[data-test=action-approve]').click();
    const modal = page.getByRole('dialog');
    const hash = await modal.locator('[data-test=approve-hash] input').inputValue();
    const vpc = await getConfig();
    check(hash === vpc.status.planHash, 'the modal shows the plan hash of the status');
    await accessible(page, 'the approval dialog');
    await modal.locator('[data-test=approve-confirm]').click();
    await modal.waitFor({ state: 'detached' });

    const wavesSeen = new Set();
    let shot = false;
    await poll(
      'Completed',
      async () => {
        const phase = await page.locator('[data-test=phase]').first().innerText({ timeout: 5000 });
        const titles = await page.locator('[data-test=rollout-worker] [data-test=rollout-title]').allInnerTexts();
        const wave = /wave (\d+) of (\d+)/.exec(titles[0] ?? '');
        if (wave && !wavesSeen.has(wave[0])) {
          wavesSeen.add(wave[0]);
          const measure = await page.locator('[data-test=rollout-worker] [data-test=rollout-measure]').allInnerTexts();
          log(`rollout: ${titles[0]} (${measure[0] ?? ''})`);
          if (!shot && Number(wave[1]) >= 2) {
            shot = true;
            await shoot(page, 'console-progress.png', 1000);
            await accessible(page, 'the progress view');
          }
        }
        return phase === 'Completed';
      },
      240_000,
      100,
    );
    const checklist = await page.locator('[data-test=checklist] li').evaluateAll((lis) =>
      lis.map((li) => `${li.getAttribute('data-test').slice(6)}=${li.getAttribute('data-state')}`),
    );
    log('items:', checklist.join(' '));
    check(checklist.every((c) => c.endsWith('=Completed') || c.endsWith('=Skipped')), 'every item is checked off');
    check((await page.locator('[data-test=step-done]').getAttribute('data-variant')) === 'success', 'the stepper ends on Completed');
    await accessible(page, 'the completed config');
    return { approvedHash: hash, wavesSeen: [...wavesSeen] };
  },

  // Revert: request, review the revert plan, approve it, Reverted.
  async revert(context) {
    const page = await open(context, consoleURL, configPath);
    await page.locator('[data-test=plan-hash]').waitFor();
    await page.locator('[data-test=action-revert]').click();
    await poll('the revert plan for review', async () => {
      const title = await page.locator('#plan-title').innerText({ timeout: 5000 });
      const phase = await page.locator('[data-test=phase]').first().innerText({ timeout: 5000 });
      return title === 'Revert plan' && phase === 'ReviewRequired' && (await page.locator('[data-test=action-approve]').isEnabled());
    }, 120_000);
    const vpc = await getConfig();
    const revertItems = vpc.status.items.filter((it) => it.action === 'Restore' || it.action === 'Delete');
    check(revertItems.length > 0, 'the revert plan restores or deletes');
    for (const it of revertItems) {
      const header = await page.locator(`[data-test=plan-item][data-item="${it.name}"] h3`).innerText();
      check(header.includes(`(${it.action})`), `item ${it.name} says its action: ${header}`);
    }
    await accessible(page, 'the revert plan');
    await page.locator('[data-test=action-approve]').click();
    const modal = page.getByRole('dialog');
    check((await modal.locator('h1, h2').first().innerText()).includes('Approve the revert plan of'), 'the modal names the revert plan');
    const hash = await modal.locator('[data-test=approve-hash] input').inputValue();
    await modal.locator('[data-test=approve-confirm]').click();
    await modal.waitFor({ state: 'detached' });
    await poll(
      'Reverted',
      async () => (await page.locator('[data-test=phase]').first().innerText({ timeout: 5000 })) === 'Reverted',
      240_000,
    );
    check((await page.locator('[data-test=step-done]').innerText()).includes('Reverted'), 'the stepper ends on Reverted');
    await accessible(page, 'the reverted config');
    return { approvedHash: hash };
  },
};

// planSize describes a plan for the timings.
const planSize = (vpc) => {
  const items = vpc.status.items;
  const diffLines = items.reduce((n, it) => n + (it.diff ? it.diff.split('\n').length : 0), 0);
  const diffBytes = items.reduce((n, it) => n + (it.diff?.length ?? 0), 0);
  return `${items.length} items, ${diffLines} diff lines, ${Math.round(diffBytes / 1024)} KiB of diffs`;
};

// The time a big plan takes to render, printed, not asserted: from the click on its link in
// the list to every item shown, then to every diff shown.
scenarios.bigplan = async (context) => {
  const vpc = await getConfig();
  const items = vpc.status.items;
  const page = await open(context, consoleURL, '/virt-advisor');
  const link = page.locator(`[data-test=row-${name}]`).getByRole('link', { name });
  await link.waitFor();
  const start = Date.now();
  await link.click();
  await poll('every item', async () => (await page.locator('[data-test=plan-item]').count()) === items.length, 120_000, 20);
  const itemsShown = Date.now() - start;
  const collapsed = page.locator('[data-test=diff][data-open=false]');
  const toOpen = await collapsed.count();
  const opening = Date.now();
  while ((await collapsed.count()) > 0) {
    await collapsed.first().getByRole('button').click();
  }
  const withDiff = items.filter((it) => it.diff && it.change !== 'None' && it.state !== 'Skipped').length;
  await poll('every diff', async () => (await page.locator('[data-test=diff] table').count()) === withDiff, 120_000, 20);
  const diffsShown = Date.now() - opening;
  log(`render time of a big ${name} plan (${planSize(vpc)}): ${itemsShown} ms from the click in the list to every item shown; ` +
    `${diffsShown} ms to open the ${toOpen} collapsed diffs`);
  await accessible(page, 'the big plan with every diff open');
  return { itemsShownMs: itemsShown, diffsShownMs: diffsShown };
};

const main = async () => {
  const scenario = process.argv[2];
  const run = scenarios[scenario];
  if (!run) {
    console.error(`unknown scenario ${scenario}; scenarios: ${Object.keys(scenarios).join(', ')}`);
    process.exit(2);
  }
  const context = await launch();
  try {
    const result = await run(context);
    for (const page of context.pages()) {
      check((page.errors ?? []).length === 0, `uncaught errors in the page: ${page.errors}`);
    }
    console.log(`RESULT ${JSON.stringify(result)}`);
  } catch (e) {
    for (const page of context.pages()) {
      if (!page.isClosed()) {
        await shoot(page, `failed-${scenario}.png`).catch(() => {});
      }
    }
    console.error(`${scenario}: ${e instanceof ScenarioError ? e.message : e.stack}`);
    process.exitCode = 1;
  } finally {
    await context.close();
  }
};

await main();
