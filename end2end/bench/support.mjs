// What the navigation benchmarks (first_paint.mjs, host_floor.mjs) share: the example apps
// they measure, how Chromium is started, the median, and a signed-in console to set up from.

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

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

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
