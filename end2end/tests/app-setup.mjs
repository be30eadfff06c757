// Set-up shared by the app tests that drive strad's own test MCP server: sign in, give the
// server the page and tools a test needs, register it under a slug of its own, grant it,
// and set its policy and read-only marks.
import { expect } from './fixtures.mjs';

/**
 * @param {object} options
 * @param {string} options.slug
 * @param {string} [options.html]        the app page (ui://test/widget.html)
 * @param {object[]} [options.tools]     tools added before registration (`addTool` bodies)
 * @param {string[]} [options.marks]     tools an admin marks read-only
 * @param {'deny'|'ask'} [options.writing]  the policy for writing tools from apps
 * @param {string} [options.displayName]
 */
export async function registerApp(page, strad, mcp, { slug, html, tools = [], marks = [], writing, displayName }) {
  if (html !== undefined) expect((await mcp.control({ html })).status).toBe(204);
  for (const tool of tools) expect((await mcp.control({ addTool: tool })).status).toBe(204);
  await page.goto(await strad.nextLink());
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  const registered = await api('servers/register', {
    slug, display_name: displayName ?? slug, url: mcp.url, cap_tools: 'on', cap_apps: 'on',
  });
  expect(registered.status()).toBe(200);
  expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
  for (const tool of marks) {
    expect((await api('policy/mark', { slug, tool, read_only: 'true' })).status()).toBe(200);
  }
  if (writing) {
    const set = await api('policy/set', {
      slug, playground_all: 'on', playground_tools: '', apps_all: 'on', app_tools: '', writing_from_apps: writing,
    });
    expect(set.status()).toBe(200);
  }
}

/** The frame of the app page, as Playwright's Frame (for `evaluate`). */
export async function appFrame(page, slug) {
  await expect.poll(() => page.frames().some((f) => f.url().includes(`/apps/${slug}/frame/`))).toBe(true);
  return page.frames().find((f) => f.url().includes(`/apps/${slug}/frame/`));
}

/** Runs an action of the SDK page (support/sdk-app.mjs); returns its outcome's locator. */
export async function run(page, slug, action, params = {}) {
  const frame = await appFrame(page, slug);
  const n = await frame.evaluate(([a, p]) => globalThis.sdkApp.run(a, p), [action, params]);
  return page.frameLocator('iframe.app-frame').locator(`#outcome-${n}`);
}

/** An outcome once settled: {state, record} (waits up to `timeout` ms for it to settle). */
export async function settled(outcome, timeout = 15_000) {
  await expect(outcome).not.toHaveAttribute('data-state', 'pending', { timeout });
  return { state: await outcome.getAttribute('data-state'), record: JSON.parse(await outcome.textContent()) };
}

/** Upstream calls the test MCP server has received so far, per tool. */
export async function upstreamCalls(mcp, tool) {
  return (await mcp.state()).calls[tool] ?? 0;
}
