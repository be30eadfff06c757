// How fast an app page reaches an initialized app, and what the idle console holds in
// memory (docs/benchmarks.md). Starts the release strad (`./x dist`: dist/strad and
// dist/site) in local mode over a database of its own, registers the npm example servers (a
// dozen, some twice), opens each app's page once, reads strad's idle VmRSS, then opens each
// app's page RUNS times in a fresh browser context (a cold cache, as a first visit; each
// navigation starts once the new window's own start has settled, `settled`, and its end is
// heard through the page's console, so nothing of the driver's runs in the page while it
// loads) and reads, in the page, the time from the navigation's start to the page's first
// byte, to the frame's request and its document's load (where the resource timing of a
// cross-site frame ends), to hydration, to the app's first message (its `ui/initialize`),
// and to the host marking the app session initialized (`data-app-session`, set on the app's
// `ui/notifications/initialized`), and the wasm an app page's first load transfers. Last,
// SESSIONS (200) app sessions at once, each opened (a frame ticket), its frame loaded from
// the sandbox origin and CALLS_PER_SESSION (5) tool calls made through the app route, with
// strad's peak and settled VmRSS. Prints markdown tables, and adds its headline figures to
// the file STRAD_BENCH_SUMMARY names (`./x bench` prints them together); asserts nothing.
//
//   node end2end/bench/first_paint.mjs        (RUNS=9 by default; STRAD_BIN, STRAD_SITE_ROOT)
import path from 'node:path';
import { appendFileSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.STRAD_BIN ||= path.join(root, 'dist', 'strad');
process.env.STRAD_SITE_ROOT ||= path.join(root, 'dist', 'site');
const { startStrad, startExample } = await import('../tests/fixtures.mjs');
const { APPS, DONE, chromiumOptions, frameTiming, median, settled, signedIn, whenInitialized } = await import('./support.mjs');

const RUNS = Number(process.env.RUNS || 9);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS || 10);
const SESSIONS = Number(process.env.SESSIONS || 200);
const CALLS_PER_SESSION = Number(process.env.CALLS_PER_SESSION || 5);
// Registered but not measured: a dozen servers in all.
const EXTRA = ['mcp-server-basic-vanillajs', 'mcp-server-debug', 'mcp-budget-allocator-server',
  'mcp-scenario-modeler-server', 'mcp-cohort-heatmap-server'];

// Runs in the console's page (not in the app's frame): when each moment happened, in ms
// since the navigation started.
function recordMoments(DONE) {
  if (window.top !== window) return;
  const moments = {};
  window.__moments = moments;
  const look = () => {
    const frame = document.querySelector('iframe.app-frame');
    if (moments.initialized === undefined && frame?.getAttribute('data-app-session') === 'initialized') {
      moments.initialized = performance.now();
      console.debug(DONE);
    }
    if (moments.hydrated === undefined && document.body?.hasAttribute('data-hydrated')) {
      moments.hydrated = performance.now();
    }
  };
  // Only the two attributes: the page's own work is what is measured.
  new MutationObserver(look).observe(document, {
    subtree: true, attributes: true, attributeFilter: ['data-app-session', 'data-hydrated'],
  });
  // The app's first message (its `ui/initialize`), heard before any listener of the page's.
  addEventListener('message', (event) => {
    const frame = document.querySelector('iframe.app-frame');
    if (moments.asked === undefined && frame && event.source === frame.contentWindow) {
      moments.asked = performance.now();
    }
  }, true);
}

/** A headline figure for `./x bench`'s table: what, measured, target. */
function summary(what, measured, target) {
  if (process.env.STRAD_BENCH_SUMMARY) appendFileSync(process.env.STRAD_BENCH_SUMMARY, `${what}\t${measured}\t${target}\n`);
}

function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)[1]);
}

// One person makes every call of the sessions below: the per-person limits are raised.
const strad = await startStrad({ STRAD_TOOL_CALLS_PER_SECOND: '100000' });
const servers = [];
const browser = await chromium.launch(chromiumOptions());
try {
  const { context, page, api, register } = await signedIn(browser, strad);
  const slugs = [];
  for (const [index, name] of [...APPS.map(([bin]) => bin), ...EXTRA].entries()) {
    const server = await startExample(name);
    servers.push(server);
    const slug = `app-${index}`;
    await register(slug, name, server.url);
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
  const transferred = [];
  for (const [slug, name] of slugs) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) {
      const fresh = await browser.newContext({ baseURL: strad.baseURL, storageState: state });
      await fresh.addInitScript(recordMoments, DONE);
      const tab = await fresh.newPage();
      await settled();
      const wasm = [];
      tab.on('requestfinished', (request) => {
        if (new URL(request.url()).pathname.endsWith('.wasm')) wasm.push(request);
      });
      const done = whenInitialized(tab);
      await tab.goto(`/apps/${slug}`, { waitUntil: 'commit' });
      await done;
      const { requested, loaded } = await tab.evaluate(frameTiming);
      const moments = {
        ...await tab.evaluate(() => ({
          ...window.__moments, firstByte: performance.getEntriesByType('navigation')[0]?.responseStart,
        })),
        frame: requested, loaded,
      };
      runs.push(moments);
      if (transferred.length === 0) {
        for (const request of wasm) {
          const response = await request.response();
          transferred.push({
            name: path.basename(new URL(request.url()).pathname),
            bytes: (await request.sizes()).responseBodySize,
            encoding: response?.headers()['content-encoding'] || 'identity',
          });
        }
      }
      await fresh.close();
    }
    rows.push([name, ...['firstByte', 'frame', 'loaded', 'hydrated', 'asked', 'initialized'].map((k) => median(runs.map((r) => r[k])))]);
  }
  const after = rssKiB(strad.child.pid);
  const load = await sessionsAtOnce(strad, state, slugs);

  const ms = (x) => `${Math.round(x)} ms`;
  console.log(`\nNavigation start to each moment, median of ${RUNS} cold loads:\n`);
  console.log('| app (npm bin) | page first byte | frame requested | frame loaded | hydrated | app sent ui/initialize | app initialized |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [name, ...moments] of rows) {
    console.log(`| ${name} | ${moments.map(ms).join(' | ')} |`);
  }
  const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
  console.log(`\nstrad's VmRSS with ${servers.length} servers registered: ${mib(idle)} idle, ` +
    `${mib(after)} after the loads above.`);
  console.log(`\nThe wasm of an app page's first load (${slugs[0][0]}), as transferred:\n`);
  console.log('| file | bytes | encoding |');
  console.log('|---|---|---|');
  for (const { name, bytes, encoding } of transferred) console.log(`| ${name} | ${bytes} | ${encoding} |`);
  const wasmBytes = transferred.reduce((sum, { bytes }) => sum + bytes, 0);
  const encodings = [...new Set(transferred.map(({ encoding }) => encoding))].join(', ');
  console.log(`\n${SESSIONS} app sessions at once (open, frame from the sandbox origin, ` +
    `${CALLS_PER_SESSION} tool calls each), ${load.seconds.toFixed(1)} s: ${load.failed} failed; ` +
    `VmRSS ${mib(load.before)} before, ${mib(load.peak)} at the peak, ${mib(load.settled)} ${IDLE_SECONDS} s after.`);

  const initialized = rows.map((row) => row[6]);
  summary(`navigation → app initialized, median of the ${rows.length} example apps (slowest)`,
    `${ms(median(initialized))} (${ms(Math.max(...initialized))})`, '≤ 300 ms');
  summary(`wasm of an app page's first load, transferred (${encodings})`,
    `${(wasmBytes / 1024).toFixed(0)} KiB in ${transferred.length} file(s)`, '≤ 350 KB gzipped');
  summary(`VmRSS idle, ${servers.length} servers registered, after each example app's page was opened once`, mib(idle), '–');
  summary(`VmRSS under ${SESSIONS} app sessions at once: peak / settled`, `${mib(load.peak)} / ${mib(load.settled)}`, '–');
} finally {
  await browser.close();
  for (const server of servers) server.stop();
  await strad.stop();
}

/** SESSIONS app sessions at once for the signed-in person of `state`, over the measured
 * apps: each opened as the console opens it, its frame loaded from the frame origin as the
 * browser loads it (another site, no cookie), then CALLS_PER_SESSION tool calls through the
 * app route. strad's VmRSS is sampled every 50 ms meanwhile. */
async function sessionsAtOnce(strad, state, slugs) {
  const cookie = state.cookies.map(({ name, value }) => `${name}=${value}`).join('; ');
  const console_ = { origin: strad.baseURL, cookie };
  const pid = strad.child.pid;
  const before = rssKiB(pid);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssKiB(pid)); }, 50);
  const started = performance.now();
  let failed = 0;
  const one = async (index) => {
    const [slug] = slugs[index % slugs.length];
    const tool = APPS[index % slugs.length][1];
    const opened = await fetch(`${strad.baseURL}/api/apps/open`, {
      method: 'POST', headers: { ...console_, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ slug }),
    });
    if (opened.status !== 200) { failed += 1; return; }
    const view = await opened.json();
    const frame = await fetch(`${view.frame_origin || strad.baseURL}/apps/${slug}/frame/${view.ticket}`, {
      headers: { 'sec-fetch-dest': 'iframe', 'sec-fetch-site': 'cross-site' },
    });
    await frame.arrayBuffer();
    if (frame.status !== 200) { failed += 1; return; }
    for (let call = 0; call < CALLS_PER_SESSION; call++) {
      const answer = await fetch(`${strad.baseURL}/apps/${slug}/tools/call`, {
        method: 'POST',
        headers: { ...console_, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
        body: JSON.stringify({ name: tool, arguments: {} }),
      });
      await answer.arrayBuffer();
      if (answer.status !== 200) failed += 1;
    }
  };
  await Promise.all(Array.from({ length: SESSIONS }, (_, index) => one(index)));
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, rssKiB(pid));
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  return { before, peak, settled: rssKiB(pid), seconds, failed };
}
