// The floor under navigation → initialized: the same example apps, their frames served by
// the same strad from its sandbox origin with tickets it issued, but the host page a
// hand-written one with no framework (the frame in its HTML, an inline listener answering
// `ui/initialize` with a minimal result), answered by the browser test driver at once.
// Prints a markdown table and adds its headline to STRAD_BENCH_SUMMARY's file.
//
//   node end2end/bench/host_floor.mjs        (RUNS=9; STRAD_BIN, STRAD_SITE_ROOT as first_paint)
import path from 'node:path';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.STRAD_BIN ||= path.join(root, 'dist', 'strad');
process.env.STRAD_SITE_ROOT ||= path.join(root, 'dist', 'site');
const { startStrad, startExample } = await import('../tests/fixtures.mjs');
const { APPS, DONE, chromiumOptions, frameTiming, median, settled, signedIn, whenInitialized } = await import('./support.mjs');

const RUNS = Number(process.env.RUNS || 9);
// The host page is answered by the driver, so Chromium knows no address for it and would
// treat the frame's loopback origin as a local network it may not reach.
const CHROMIUM = chromiumOptions(['--disable-features=LocalNetworkAccessChecks']);

const hostPage = (src) => `<!doctype html><html><head><meta charset="utf-8"><title>floor</title></head><body>
<iframe sandbox="allow-scripts allow-popups allow-popups-to-escape-sandbox" referrerpolicy="no-referrer"
  style="width:100%;height:600px;border:0" src="${src}"></iframe>
<script>
addEventListener('message', (event) => {
  const m = event.data;
  if (!m || m.jsonrpc !== '2.0') return;
  if (window.__asked === undefined && m.method === 'ui/initialize') window.__asked = performance.now();
  if (m.method === 'ui/initialize') {
    event.source.postMessage({ jsonrpc: '2.0', id: m.id, result: {
      protocolVersion: m.params.protocolVersion, hostInfo: { name: 'floor', version: '0' },
      hostCapabilities: {}, hostContext: { theme: 'light', displayMode: 'inline' } } }, '*');
  } else if (m.method === 'ui/notifications/initialized') {
    window.__initialized = performance.now();
    console.debug('${DONE}');
  } else if (m.id !== undefined && m.method) {
    event.source.postMessage({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } }, '*');
  }
});
</script></body></html>`;

const strad = await startStrad({});
const servers = [];
const browser = await chromium.launch(CHROMIUM);
try {
  const { page, api: post, register } = await signedIn(browser, strad);
  const slugs = [];
  for (const [index, [name]] of APPS.entries()) {
    const server = await startExample(name);
    servers.push(server);
    const slug = `app-${index}`;
    await register(slug, name, server.url);
    await page.goto(`/apps/${slug}`);
    await page.locator('iframe.app-frame[data-app-session="initialized"]').waitFor({ state: 'attached', timeout: 30_000 });
    slugs.push([slug, name]);
  }
  console.log('| app (npm bin) | frame requested | app sent ui/initialize | app initialized |');
  console.log('|---|---|---|---|');
  const all = [];
  for (const [slug, name] of slugs) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) {
      const view = await (await post('apps/open', { slug })).json();
      const src = `${view.frame_origin || strad.baseURL}/apps/${slug}/frame/${view.ticket}`;
      const fresh = await browser.newContext();
      const tab = await fresh.newPage();
      await settled();
      await tab.route(`${strad.baseURL}/floor`, (route) => route.fulfill({
        status: 200, contentType: 'text/html; charset=utf-8', body: hostPage(src),
      }), { times: 1 });
      const done = whenInitialized(tab);
      await tab.goto(`${strad.baseURL}/floor`, { waitUntil: 'commit' });
      await done;
      const { requested } = await tab.evaluate(frameTiming);
      runs.push([requested, ...await tab.evaluate(() => [window.__asked, window.__initialized])]);
      await fresh.close();
    }
    const [requested, asked, initialized] = [0, 1, 2].map((k) => median(runs.map((r) => r[k])));
    all.push(initialized);
    console.log(`| ${name} | ${[requested, asked, initialized].map((x) => `${Math.round(x)} ms`).join(' | ')} |`);
  }
  const figure = `${Math.round(median(all))} ms (${Math.round(Math.max(...all))} ms)`;
  console.log(`\nmedian of the apps (slowest): ${figure}`);
  if (process.env.STRAD_BENCH_SUMMARY) {
    appendFileSync(process.env.STRAD_BENCH_SUMMARY,
      `the same with a hand-written host page, no framework (the floor), median (slowest)\t${figure}\t–\n`);
  }
} finally {
  await browser.close();
  for (const server of servers) server.stop();
  await strad.stop();
}
