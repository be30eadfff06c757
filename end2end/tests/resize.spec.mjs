// `host/resize` and `ui/notifications/size-changed` (SPEC §6 "Bridge"): the page asks for a
// height and the host sets the frame to it, clamped to the container's bounds — never
// shorter than 160 px, never taller than 4000 px.
import { test, expect } from './fixtures.mjs';
import { sdkAppHtml } from '../support/sdk-app.mjs';
import { registerApp, run, settled } from './app-setup.mjs';

const MIN = 160;
const MAX = 4000;

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

/** Opens an SDK page that reports no size of its own, so only the test's requests count. */
async function openQuietApp(page, strad, mcp, slug) {
  await registerApp(page, strad, mcp, { slug, html: sdkAppHtml({ name: slug, autoResize: false }) });
  await page.goto(`/apps/${slug}`);
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  await expect(page.frameLocator('iframe.app-frame').getByRole('status')).toHaveText('connected');
}

/** The frame's height as set and as laid out (border-box, so the two agree). */
const frameHeight = (page) => page.locator('iframe.app-frame').evaluate((el) => ({
  style: el.style.height, box: Math.round(el.getBoundingClientRect().height),
}));

test('host/resize with a tiny or a huge height sets the frame to 160 px or 4000 px, and an ordinary one as asked', async ({ page, strad, mcp }) => {
  const slug = 'resize-request';
  try {
    await openQuietApp(page, strad, mcp, slug);
    for (const [asked, expected] of [[1, MIN], [1_000_000, MAX], [-50, MIN], [0, MIN], [333, 333], [MAX + 1, MAX], [MIN - 1, MIN]]) {
      const { state, record } = await settled(await run(page, slug, 'raw-request', { method: 'host/resize', params: { height: asked } }));
      expect(state, `host/resize ${asked}`).toBe('result');
      expect(record.result).toEqual({});
      await expect.poll(() => frameHeight(page), { message: `host/resize ${asked}` })
        .toEqual({ style: `${expected}px`, box: expected });
    }
  } finally {
    await mcp.control({ reset: true });
  }
});

test('ui/notifications/size-changed with a tiny or a huge height is clamped the same way', async ({ page, strad, mcp }) => {
  const slug = 'resize-notified';
  try {
    await openQuietApp(page, strad, mcp, slug);
    // Sent by the SDK itself (app.sendSizeChanged), as pages built on it report their size.
    for (const [asked, expected] of [[2, MIN], [99_999, MAX], [420, 420], [5, MIN], [MAX * 3, MAX]]) {
      const { state } = await settled(await run(page, slug, 'size-changed', { width: 300, height: asked }));
      expect(state).toBe('result');
      await expect.poll(() => frameHeight(page), { message: `size-changed ${asked}` })
        .toEqual({ style: `${expected}px`, box: expected });
    }
    // A report without a height leaves the frame as it is.
    await settled(await run(page, slug, 'size-changed', { width: 10 }));
    const { state } = await settled(await run(page, slug, 'raw-request', { method: 'ping', params: {} }));
    expect(state).toBe('result');
    expect(await frameHeight(page)).toEqual({ style: `${MAX}px`, box: MAX });
  } finally {
    await mcp.control({ reset: true });
  }
});

test('host/resize with a height that is not a finite number is refused and the frame keeps its height', async ({ page, strad, mcp }) => {
  const slug = 'resize-invalid';
  try {
    await openQuietApp(page, strad, mcp, slug);
    await settled(await run(page, slug, 'raw-request', { method: 'host/resize', params: { height: 500 } }));
    await expect.poll(() => frameHeight(page)).toEqual({ style: '500px', box: 500 });
    for (const height of ['9999', null, 'Infinity', { px: 1 }]) {
      const { state, record } = await settled(await run(page, slug, 'raw-request', { method: 'host/resize', params: { height } }));
      expect(state, JSON.stringify(height)).toBe('error');
      expect(record.error.code).toBe(-32602);
    }
    expect(await frameHeight(page)).toEqual({ style: '500px', box: 500 });
  } finally {
    await mcp.control({ reset: true });
  }
});
