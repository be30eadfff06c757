// The SDK test page (support/sdk-app.mjs): a page built on the official SDK's `App`, served
// by strad's test MCP server, completes its handshake in strad's frame and round-trips a
// read-only tool call from the page.
import { test, expect } from './fixtures.mjs';
import { sdkAppHtml, sdkBundleAsGlobal } from '../support/sdk-app.mjs';
import { registerApp, upstreamCalls } from './app-setup.mjs';

test('the SDK bundle becomes a global with every name of its export statement', () => {
  const source = 'var a=1;function qB(){}export{a as alpha,qB as App,c};';
  const script = sdkBundleAsGlobal(source);
  expect(script).not.toMatch(/export\s*\{/);
  expect(script.trim().endsWith('globalThis.McpApps = {"alpha": a, "App": qB, "c": c};')).toBe(true);
  const html = sdkAppHtml();
  expect(html.match(/<script\b/g)).toHaveLength(1);
  expect(html).toContain('<script type="module">');
  expect(html).toMatch(/"App": [\w$]+/);
});

test('a page on the official SDK completes the handshake in strad and round-trips a read-only tool call', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'sdk-page';
  const lookup = {
    name: 'lookup',
    description: 'Looks a word up',
    inputSchema: { type: 'object', properties: { word: { type: 'string' } } },
    result: { content: [{ type: 'text', text: 'found' }], structuredContent: { meaning: 'a test' } },
  };
  try {
    // `lookup` has no readOnlyHint: an admin's mark is what lets the page call it.
    await registerApp(page, strad, mcp, { slug, html: sdkAppHtml({ name: 'sdk-page' }), tools: [lookup], marks: ['lookup'] });
    const scriptViolations = [];
    page.on('console', (m) => { if (/Content Security Policy/.test(m.text())) scriptViolations.push(m.text()); });
    await page.goto(`/apps/${slug}`);
    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    const app = page.frameLocator('iframe.app-frame');
    await expect(app.getByRole('status')).toHaveText('connected');

    // The SDK accepted strad's init result (it validates all four fields).
    const init = JSON.parse(await app.locator('#host-info').textContent());
    expect(init.hostInfo.name).toBe('strad');
    expect(init.hostCapabilities).toHaveProperty('serverTools');
    expect(['light', 'dark']).toContain(init.hostContext.theme);

    // The opening call of the read-only declaring tool reached the page, input first.
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    await expect(app.locator('#tool-input')).toHaveAttribute('data-count', '1');
    await expect(app.locator('#tool-result')).toHaveAttribute('data-count', '1');

    // A call from the page, made with the page's own controls.
    const before = await upstreamCalls(mcp, 'lookup');
    const relayed = page.waitForResponse((r) => r.url().endsWith(`/apps/${slug}/tools/call`));
    await app.getByLabel('Tool').fill('lookup');
    await app.getByLabel('Arguments (JSON)').fill('{"word": "strad"}');
    await app.getByRole('button', { name: 'Call tool' }).click();
    expect((await relayed).status()).toBe(200);
    const outcome = app.locator('#outcome-1');
    await expect(outcome).toHaveAttribute('data-state', 'result');
    const record = JSON.parse(await outcome.textContent());
    expect(record.action).toBe('call-tool');
    expect(record.params).toEqual({ name: 'lookup', arguments: { word: 'strad' } });
    // The page gets the CallToolResult itself: the route's envelope (result and vetted
    // actions) is the host's, not the page's.
    const result = record.result;
    expect(result.actions).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: 'found' }]);
    expect(result.structuredContent).toEqual({ meaning: 'a test' });
    expect(record.endedAt).toBeGreaterThanOrEqual(record.startedAt);
    const state = await mcp.state();
    expect(state.calls.lookup).toBe(before + 1);
    expect(state.callArguments.lookup.at(-1)).toEqual({ word: 'strad' });

    // The one inline script ran by its hash; the only violation the SDK may cause is its
    // probe of `new Function` (SPEC §6), never a blocked script.
    for (const text of scriptViolations) expect(text).toMatch(/unsafe-eval|eval/);
  } finally {
    await mcp.control({ reset: true });
  }
});
