// Accessibility: axe-core finds no serious or critical violation on the console's
// main pages, and the app card's Load → Inspect → Close path works from the keyboard alone.
import { test, expect } from './fixtures.mjs';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
// Evaluated by the test driver, not added as a <script>: the console's CSP refuses inline
// scripts without its nonce, and stays on while axe runs.
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'axe and the card need script in the page');
});

async function seriousViolations(page) {
  await page.evaluate(AXE);
  const results = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

async function withServer(page, strad, mcp, slug) {
  await page.goto(await strad.nextLink());
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  expect((await api('servers/register', { slug, display_name: slug, url: mcp.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
}

test('axe: no serious or critical violation on home, servers, playground, app and audit pages', async ({ page, strad, mcp }) => {
  const slug = 'axe';
  await withServer(page, strad, mcp, slug);
  const pages = ['/', '/admin/servers', `/servers/${slug}`, `/apps/${slug}`, '/audit', '/pins'];
  for (const path of pages) {
    await page.goto(path);
    await expect(page.locator('body[data-hydrated]')).toHaveCount(1);
    if (path.startsWith('/apps/')) {
      await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
    }
    if (path.startsWith('/servers/')) {
      // With a result and a loaded card on the page.
      const tool = page.locator('section.tool[data-tool="show-widget"]');
      await tool.getByRole('button', { name: 'Call' }).click();
      await tool.getByRole('button', { name: 'Load app' }).click();
      await tool.getByRole('button', { name: 'Inspect' }).click();
      await expect(tool.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
    }
    expect(await seriousViolations(page), path).toEqual([]);
  }
});

test('keyboard only: Call, Load, Inspect and Close an app card', async ({ page, strad, mcp }) => {
  const slug = 'keys';
  await withServer(page, strad, mcp, slug);
  await page.goto(`/servers/${slug}`);
  await expect(page.locator('body[data-hydrated]')).toHaveCount(1);
  const tool = page.locator('section.tool[data-tool="show-widget"]');
  // Tab from the top of the page to the tool's Call button.
  const call = tool.getByRole('button', { name: 'Call' });
  for (let i = 0; i < 40 && !(await call.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
  }
  await expect(call).toBeFocused();
  await page.keyboard.press('Enter');
  const load = tool.getByRole('button', { name: 'Load app' });
  await expect(load).toBeVisible();
  for (let i = 0; i < 40 && !(await load.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
  }
  await expect(load).toBeFocused();
  // Focus is visible where it lands.
  expect(await load.evaluate((el) => getComputedStyle(el).outlineStyle)).not.toBe('none');
  await page.keyboard.press('Enter');
  await expect(tool.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  // Load is disabled while the app is open: focus the next controls by Tab from Open as structure.
  await tool.getByRole('button', { name: 'Open as structure' }).focus();
  await page.keyboard.press('Tab');
  await expect(tool.getByRole('button', { name: 'Inspect' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(tool.getByTestId('inspect')).toBeVisible();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await expect(tool.getByRole('button', { name: 'Close' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(tool.locator('iframe.app-frame')).toHaveCount(0);
  await expect(load).toBeFocused();
});

test('at 200% zoom the playground and a loaded card reflow without sideways scrolling', async ({ page, strad, mcp }) => {
  const slug = 'zoom';
  await withServer(page, strad, mcp, slug);
  // 200% zoom of a 1280-pixel window: the page lays out in 640 CSS pixels.
  await page.setViewportSize({ width: 640, height: 720 });
  await page.goto(`/servers/${slug}`);
  await expect(page.locator('body[data-hydrated]')).toHaveCount(1);
  const tool = page.locator('section.tool[data-tool="show-widget"]');
  await tool.getByRole('button', { name: 'Call' }).click();
  await tool.getByRole('button', { name: 'Load app' }).click();
  await tool.getByRole('button', { name: 'Inspect' }).click();
  await expect(tool.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  for (const name of ['Load app', 'Open as structure', 'Inspect', 'Refresh pinned resource', 'Close', 'Revoke']) {
    const box = await tool.getByRole('button', { name }).boundingBox();
    expect(box.x + box.width, name).toBeLessThanOrEqual(640);
  }
});
