// What the navigation benchmarks (first_paint.mjs, host_floor.mjs) share: the example apps
// they measure, how Chromium is started, when a measured load starts and ends, when the
// page's frame was requested, the median, and a signed-in console to set up from.

import { readdirSync, readFileSync } from 'node:fs';

/** [npm bin, a tool it declares]; each app's page is measured once per bin. */
export const APPS = [
  ['mcp-server-basic-vanillajs', 'get-time'],
  ['mcp-budget-allocator-server', 'get-budget-data'],
  ['mcp-server-debug', 'debug-tool'],
  ['mcp-scenario-modeler-server', 'get-scenario-data'],
  ['mcp-cohort-heatmap-server', 'get-cohort-data'],
  ['mcp-customer-segmentation-server', 'get-customer-data'],
  ['mcp-system-monitor-server', 'get-system-info'],
];

export { chromiumOptions } from '../chromium.mjs';

/** CPU time of every Chromium process on the machine, in clock ticks (10 ms here). */
function chromiumTicks() {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('chromium')) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return ticks;
}

/** Resolves once Chromium has used under 20 ms of CPU over 200 ms (or after 5 s). A new
 * context opens a new window, and Chromium's headless window starts its own toolbar's
 * WebUI renderer (about half a second of CPU): a navigation started at once would share
 * the two cores with it, which no visitor's already open window does. */
export async function settled() {
  const deadline = Date.now() + 5000;
  const samples = [chromiumTicks()];
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    samples.push(chromiumTicks());
    if (samples.length >= 3 && samples.at(-1) - samples.at(-3) <= 2) return;
  }
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Runs in a host page: when its app frame's document was requested and when it loaded
 * (where the resource timing of a cross-site frame ends), in ms since the navigation. */
export function frameTiming() {
  const frame = performance.getEntriesByType('resource').find((e) => e.name.includes('/frame/'));
  return { requested: frame?.startTime, loaded: frame?.responseEnd };
}

/** What a measured page logs once its app is initialized. */
export const DONE = 'strad-bench: initialized';

/** Resolves when `page` logs DONE: heard through the protocol, so nothing runs in the page
 * while it loads (a locator or `waitForFunction` would poll there, on its main thread). */
export function whenInitialized(page) {
  return page.waitForEvent('console', { predicate: (message) => message.text() === DONE, timeout: 30_000 });
}

/** A browser context signed in to `strad` as local mode's admin, and `register`, which
 * registers an example server under `slug` with tools and apps and grants it to the admin. */
export async function signedIn(browser, strad) {
  const context = await browser.newContext({ baseURL: strad.baseURL });
  const page = await context.newPage();
  await page.goto(await strad.nextLink());
  const api = async (name, form) => {
    const response = await page.request.post(`/api/${name}`, { form, headers: { origin: strad.baseURL } });
    if (response.status() !== 200) throw new Error(`${name} ${JSON.stringify(form)}: ${response.status()}`);
    return response;
  };
  const register = async (slug, name, url) => {
    await api('servers/register', { slug, display_name: name, url, cap_tools: 'on', cap_apps: 'on' });
    await api('entitlements/grant', { slug, grantee: 'admin@localhost' });
  };
  return { context, page, api, register };
}
