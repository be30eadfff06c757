// How fast an app page reaches an initialized app, and what the idle console holds in
// memory (docs/benchmarks.md). Starts the release strad (`./x dist`: dist/strad and
// dist/site) in local mode over a database of its own, registers the npm example servers
// (a dozen, some twice), reads strad's idle VmRSS, then opens each app's page RUNS times in
// a fresh browser context (a cold cache, as a first visit) and reads, in the page, the time
// from the navigation's start to the frame's request, to hydration, and to the host
// marking the app session initialized (`data-app-session`, set on the app's
// `ui/notifications/initialized`). Prints markdown tables; asserts nothing.
//
//   node end2end/bench/first_paint.mjs        (RUNS=9 by default; STRAD_BIN, STRAD_SITE_ROOT)
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.STRAD_BIN ||= path.join(root, 'dist', 'strad');
process.env.STRAD_SITE_ROOT ||= path.join(root, 'dist', 'site');
const { startStrad, startExample } = await import('../tests/fixtures.mjs');

const RUNS = Number(process.env.RUNS || 9);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS || 10);
// [npm bin, declaring tool]; each app's page is measured once per bin.
const APPS = [
  ['mcp-server-basic-vanillajs', 'get-time'],
  ['mcp-budget-allocator-server', 'get-budget-data'],
  ['mcp-server-debug', 'debug-tool'],
  ['mcp-scenario-modeler-server', 'get-scenario-data'],
  ['mcp-cohort-heatmap-server', 'get-cohort-data'],
  ['mcp-customer-segmentation-server', 'get-customer-data'],
  ['mcp-system-monitor-server', 'get-system-info'],
];
// Registered but not measured: a dozen servers in all.
const EXTRA = ['mcp-server-basic-vanillajs', 'mcp-server-debug', 'mcp-budget-allocator-server',
  'mcp-scenario-modeler-server', 'mcp-cohort-heatmap-server'];

const CHROMIUM = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run'],
};

// Runs in the console's page (not in the app's frame): when each moment happened, in ms
// since the navigation started.
function recordMoments() {
  if (window.top !== window) return;
  const moments = {};
  window.__moments = moments;
  const look = () => {
    const frame = document.querySelector('iframe.app-frame');
    if (moments.initialized === undefined && frame?.getAttribute('data-app-session') === 'initialized') {
      moments.initialized = performance.now();
    }
    if (moments.hydrated === undefined && document.body?.hasAttribute('data-hydrated')) {
      moments.hydrated = performance.now();
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true, attributes: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)[1]);
}

const strad = await startStrad();
const servers = [];
const browser = await chromium.launch(CHROMIUM);
try {
  const context = await browser.newContext({ baseURL: strad.baseURL });
  const page = await context.newPage();
  await page.goto(await strad.nextLink());
  const api = async (name, form) => {
    const response = await page.request.post(`/api/${name}`, { form, headers: { origin: strad.baseURL } });
    if (response.status() !== 200) throw new Error(`${name} ${JSON.stringify(form)}: ${response.status()}`);
  };
  const slugs = [];
  for (const [index, name] of [...APPS.map(([bin]) => bin), ...EXTRA].entries()) {
    const server = await startExample(name);
    servers.push(server);
    const slug = `app-${index}`;
    await api('servers/register', { slug, display_name: name, url: server.url, cap_tools: 'on', cap_apps: 'on' });
    await api('entitlements/grant', { slug, grantee: 'admin@localhost' });
    if (index < APPS.length) {
      await api('policy/mark', { slug, tool: APPS[index][1], read_only: 'true' });
      slugs.push([slug, name]);
    }
  }
  // Each app once (its copy is pinned on the first visit), before anything is timed.
  for (const [slug] of slugs) {
    await page.goto(`/apps/${slug}`);
    await page.locator('iframe.app-frame[data-app-session="initialized"]').waitFor({ state: 'attached', timeout: 30_000 });
  }
  const state = await context.storageState();
  await context.close();
  // Idle: nothing asked of strad for a while (its periodic jobs may run).
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const idle = rssKiB(strad.child.pid);

  const rows = [];
  for (const [slug, name] of slugs) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) {
      const fresh = await browser.newContext({ baseURL: strad.baseURL, storageState: state });
      await fresh.addInitScript(recordMoments);
      const tab = await fresh.newPage();
      await tab.goto(`/apps/${slug}`, { waitUntil: 'commit' });
      await tab.locator('iframe.app-frame[data-app-session="initialized"]').waitFor({ state: 'attached', timeout: 30_000 });
      const moments = await tab.evaluate(() => ({
        ...window.__moments,
        frame: performance.getEntriesByType('resource').find((e) => e.name.includes('/frame/'))?.startTime,
      }));
      runs.push(moments);
      await fresh.close();
    }
    rows.push([name, ...['frame', 'hydrated', 'initialized'].map((k) => median(runs.map((r) => r[k])))]);
  }
  const after = rssKiB(strad.child.pid);

  const ms = (x) => `${Math.round(x)} ms`;
  console.log(`\nNavigation start to each moment, median of ${RUNS} cold loads:\n`);
  console.log('| app (npm bin) | frame requested | hydrated | app initialized |');
  console.log('|---|---|---|---|');
  for (const [name, frame, hydrated, initialized] of rows) {
    console.log(`| ${name} | ${ms(frame)} | ${ms(hydrated)} | ${ms(initialized)} |`);
  }
  console.log(`\nstrad's VmRSS with ${servers.length} servers registered: ${(idle / 1024).toFixed(1)} MiB idle, ` +
    `${(after / 1024).toFixed(1)} MiB after the loads above.`);
} finally {
  await browser.close();
  for (const server of servers) server.stop();
  await strad.stop();
}
