// A first run, as a newcomer sees it: strad in local mode on a fresh database, signed in with
// the link it printed, and nothing registered by hand. The demo server is on the home page,
// and its app renders, completes its handshake, gets its opening call and round-trips calls
// from the page — a read-only one at once, a writing one after the person approves it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyFileSync } from 'node:fs';
import { test, expect, startStrad } from './fixtures.mjs';

const docs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

test('a fresh local console shows the demo app working, with nothing registered by hand', async ({ page }) => {
  const strad = await startStrad({ STRAD_DEMO: undefined });
  try {
    await page.goto(await strad.nextLink());
    await expect(page).toHaveURL(`${strad.baseURL}/`);
    const demo = page.locator('ul.my-servers li[data-slug="demo"]');
    await expect(demo).toContainText('Demo: clock and notes');
    await demo.getByRole('link', { name: 'App' }).click();
    await expect(page).toHaveURL(`${strad.baseURL}/apps/demo`);
    await page.locator('body[data-hydrated]').waitFor({ state: 'attached' });

    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    const app = page.frameLocator('iframe.app-frame');
    await expect(app.getByRole('status')).toHaveText('Connected to strad');
    // The opening call: the input the host called the read-only tool with, and its result.
    await expect(app.locator('#opening-input')).toHaveText('{}');
    await expect(app.locator('#server-time')).not.toHaveText(/waiting/);
    await expect(app.locator('#time')).toHaveText(/\d\d.\d\d.\d\d/);

    // A read-only call from the page goes straight through.
    await app.getByRole('tab', { name: 'Notes' }).click();
    await expect(page).toHaveURL(`${strad.baseURL}/apps/demo#notes`);
    await app.getByRole('button', { name: 'Refresh notes' }).click();
    await expect(app.locator('#message')).toHaveText('Notes refreshed.');
    await expect(app.getByRole('list', { name: 'Notes' })).toHaveText('No notes yet.');

    // A writing call waits for the person's approval, drawn by the console.
    await app.getByRole('textbox', { name: 'Note' }).fill('Hello from the first run');
    await app.getByRole('button', { name: 'Add note' }).click();
    const dialog = page.getByRole('dialog');
    await expect(dialog).toBeVisible();
    await expect(dialog.locator('[data-field="tool"]')).toHaveText('add_note');
    await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect(app.locator('#message')).toHaveText('Note added.');
    await expect(app.getByRole('list', { name: 'Notes' })).toContainText('Hello from the first run');

    // The picture in the README is this test's.
    await app.getByRole('tab', { name: 'Clock' }).click();
    const shot = test.info().outputPath('console-demo.png');
    await page.screenshot({ path: shot });
    if (process.env.STRAD_UPDATE_SCREENSHOT) copyFileSync(shot, path.join(docs, 'console-demo.png'));
  } finally {
    await strad.stop();
  }
});
