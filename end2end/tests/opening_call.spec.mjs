// The opening call (SPEC §6 "Lifecycle"): when the host's own call of the read-only declaring
// tool fails upstream, the page hears `ui/notifications/tool-cancelled` with a reason (and no
// result), and the host's status line says the first call failed.
import { test, expect } from './fixtures.mjs';
import { sdkAppHtml } from '../support/sdk-app.mjs';
import { registerApp, upstreamCalls } from './app-setup.mjs';

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

test('an opening call that fails upstream cancels the tool for the page with a reason, and the status line says the first call failed', async ({ page, strad, mcp }) => {
  const slug = 'opening-fails';
  try {
    await registerApp(page, strad, mcp, { slug, html: sdkAppHtml({ name: 'opening-fails' }) });
    // From now on the server answers every tools/call with a body that is not JSON.
    expect((await mcp.control({ fault: { kind: 'garbage', on: 'tools/call' } })).status).toBe(204);
    const before = await upstreamCalls(mcp, 'show-widget');
    const opening = page.waitForResponse((r) => r.url().endsWith(`/apps/${slug}/opening-call`));
    await page.goto(`/apps/${slug}`);
    const answer = await opening;
    expect(answer.ok()).toBe(false);
    const refusal = (await answer.json()).error;
    expect(refusal).toBeTruthy();

    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    await expect(frame).toHaveAttribute('data-opening-call', 'cancelled');
    const app = page.frameLocator('iframe.app-frame');
    await expect(app.getByRole('status')).toHaveText('connected');
    const cancelled = app.locator('#tool-cancelled');
    await expect(cancelled).toHaveAttribute('data-count', '1');
    const { reason } = JSON.parse(await cancelled.textContent());
    // The page is told what the console was told, not left without a reason.
    expect(reason).toBe(refusal);
    expect(reason).toMatch(/could not run the tool/);
    await expect(page.getByRole('alert')).toHaveText(`The app opened, but its first call failed: ${reason}`);
    // No result was made up for the page.
    await expect(app.locator('#tool-result')).toHaveAttribute('data-count', '0');
    // The fault answered the call: nothing reached the tool itself.
    expect(await upstreamCalls(mcp, 'show-widget')).toBe(before);
  } finally {
    await mcp.control({ reset: true });
  }
});

test('with the server healthy again, the same app opens with its input and result', async ({ page, strad, mcp }) => {
  const slug = 'opening-recovers';
  try {
    await registerApp(page, strad, mcp, { slug, html: sdkAppHtml({ name: 'opening-recovers' }) });
    await mcp.control({ fault: { kind: 'garbage', on: 'tools/call' } });
    await page.goto(`/apps/${slug}`);
    await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-opening-call', 'cancelled');
    await mcp.control({ fault: null });
    await page.reload();
    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    const app = page.frameLocator('iframe.app-frame');
    await expect(app.locator('#tool-input')).toHaveAttribute('data-count', '1');
    await expect(app.locator('#tool-result')).toHaveAttribute('data-count', '1');
    expect(JSON.parse(await app.locator('#tool-result').textContent()).content[0].text).toBe('widget:');
    await expect(app.locator('#tool-cancelled')).toHaveAttribute('data-count', '0');
    await expect(page.getByRole('alert')).toHaveCount(0);
  } finally {
    await mcp.control({ reset: true });
  }
});
