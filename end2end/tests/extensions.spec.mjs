// The console extensions (x-strad/, SPEC §6) in the real browser, with an app of the
// project's own that speaks them (support/location-app.html).
import { test, expect, holdWasm } from './fixtures.mjs';
import { readFileSync } from 'node:fs';

const LOCATION_APP = readFileSync(new URL('../support/location-app.html', import.meta.url), 'utf8');
const SLUG = 'location';
const registered = new Set();

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

async function signIn(page, strad, mcp) {
  await page.goto(await strad.nextLink());
  if (registered.has(strad.baseURL)) return;
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  await mcp.control({ html: LOCATION_APP });
  expect((await api('servers/register', { slug: SLUG, display_name: 'Location', url: mcp.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug: SLUG, grantee: 'admin@localhost' })).status()).toBe(200);
  expect((await api('apps/open', { slug: SLUG })).status()).toBe(200);
  await mcp.control({ reset: true });
  registered.add(strad.baseURL);
}

async function open(page, strad, mcp, address) {
  await signIn(page, strad, mcp);
  const frames = [];
  page.on('response', (r) => { if (r.url().includes(`/apps/${SLUG}/frame/`)) frames.push(r.url()); });
  await page.goto(address);
  const app = page.frameLocator('iframe.app-frame');
  await expect(app.locator('body')).toHaveAttribute('data-ready', 'yes');
  // The app marks itself ready as it posts `initialized`; the host forwards keys and
  // hashes only once it has read that.
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  return { app, frames };
}

test('the frame gets the console query and hash, never uri or token, uri first', async ({ page, strad, mcp }) => {
  const { app, frames } = await open(page, strad, mcp, `/apps/${SLUG}?view=week&token=x#item-3`);
  // The bad token was taken out of the address; the person stays signed in.
  await expect(page).toHaveURL(new RegExp(`/apps/${SLUG}\\?view=week#item-3$`));
  expect(frames).toHaveLength(1);
  const frameUrl = new URL(page.frames().find((f) => f.url().includes('/frame/')).url());
  expect([...frameUrl.searchParams.keys()]).toEqual(['uri', 'view']);
  expect(frameUrl.searchParams.get('view')).toBe('week');
  expect(frameUrl.hash).toBe('#item-3');
  await expect(app.locator('#search')).toHaveText(/^\?uri=ui%3A%2F%2Ftest%2Fwidget\.html&view=week$/);
  await expect(app.locator('#hash')).toHaveText('#item-3');
});

test('what the app sends before the console hydrates is answered once it does', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  const { release, visit } = await holdWasm(page);
  await visit(`/apps/${SLUG}?view=week#item-3`);
  const app = page.frameLocator('iframe.app-frame');
  // The app's script has run up to its wait for the answer: `ui/initialize` is posted, and
  // with the console still server-rendered nothing has answered it.
  await expect(app.locator('#search')).toHaveText(/view=week/);
  await expect(app.locator('#hash')).toHaveText('#item-3');
  await expect(page.locator('body')).not.toHaveAttribute('data-hydrated');
  await expect(app.locator('body')).not.toHaveAttribute('data-ready');
  release();
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  await expect(app.locator('body')).toHaveAttribute('data-ready', 'yes');
  // The report the app sent before hydration was read too (it names the hash the address
  // bar already shows, so nothing is written); one document all along.
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-hash-action', 'Ignore');
  await expect(app.locator('#loads')).toHaveText('1');
});

test('arrows and Esc pressed on the console reach the app, but not from a text field', async ({ page, strad, mcp }) => {
  const { app } = await open(page, strad, mcp, `/apps/${SLUG}`);
  // The frame has focus on load: keys typed now are the app's own.
  await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('IFRAME');
  await page.locator('h1').click();
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Escape');
  await expect(app.locator('#keys')).toHaveText('ArrowLeft Escape');
  // A text field on the console page keeps its keys.
  await page.evaluate(() => {
    const input = document.createElement('input');
    input.id = 'console-field';
    input.setAttribute('aria-label', 'console field');
    document.querySelector('h1').after(input);
  });
  await page.locator('#console-field').focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('a');
  await page.locator('h1').click();
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  // In order: ArrowRight (typed in the field) and the other keys never went.
  await expect(app.locator('#keys')).toHaveText('ArrowLeft Escape ArrowUp');
});

test('reports are mirrored: the search replaces all but uri and never writes a token; a click pushes the hash', async ({ page, strad, mcp }) => {
  const { app } = await open(page, strad, mcp, `/apps/${SLUG}?view=week#item-3`);
  const before = await page.evaluate(() => history.length);
  await app.locator('#go').click();
  await expect(page).toHaveURL(new RegExp(`/apps/${SLUG}\\?view=page1#page-1$`));
  expect(await page.evaluate(() => history.length)).toBe(before + 1);
  expect(page.url()).not.toContain('token');
  expect(page.url()).not.toContain('evil');
});

test('a push without a click adds no history entry, and the first report is never one', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  // Measured on the page before; after the navigation nothing touches the page until the
  // report (Playwright's evaluate and locator polls are user gestures for Chromium), and the
  // app reports after a navigation's own activation has expired.
  const before = await page.evaluate(() => history.length);
  const reported = page.waitForEvent('framenavigated', {
    predicate: (frame) => frame === page.mainFrame() && frame.url().endsWith('#auto'),
    timeout: 20_000,
  });
  await page.goto(`/apps/${SLUG}?autopush=1#start`);
  await reported;
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-hash-action', 'Replace');
  expect(await page.evaluate(() => history.length)).toBe(before + 1);
});

test('the first report on load replaces, even when it asks to push', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  const before = await page.evaluate(() => history.length);
  await page.goto(`/apps/${SLUG}`);
  await expect(page).toHaveURL(new RegExp(`/apps/${SLUG}#home$`));
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-hash-action', 'Replace');
  expect(await page.evaluate(() => history.length)).toBe(before + 1);
});

test('Back after two pushes restores the right hash in the frame without reloading it', async ({ page, strad, mcp }) => {
  const { app, frames } = await open(page, strad, mcp, `/apps/${SLUG}?view=week#item-3`);
  await app.locator('#go').click();
  await expect(page).toHaveURL(/#page-1$/);
  await app.locator('#go').click();
  await expect(page).toHaveURL(/#page-2$/);
  await page.goBack();
  await expect(page).toHaveURL(/#page-1$/);
  await expect(app.locator('#hash')).toHaveText('#page-1');
  await page.goBack();
  await expect(page).toHaveURL(/#item-3$/);
  await expect(app.locator('#hash')).toHaveText('#item-3');
  await expect(app.locator('#told')).toHaveText('#page-1 #item-3');
  // Forward comes back down the same way.
  await page.goForward();
  await expect(app.locator('#hash')).toHaveText('#page-1');
  // One document all along: no second frame load, the app's own count still 1.
  expect(frames).toHaveLength(1);
  await expect(app.locator('#loads')).toHaveText('1');
});
