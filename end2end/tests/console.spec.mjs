import { test, expect } from './fixtures.mjs';

test('an anonymous visitor is sent to the sign-in page, which explains local mode', async ({ page }) => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/sign-in\?next=%2F$/);
  await expect(page.getByRole('heading', { name: 'Sign in to strad' })).toBeVisible();
  await expect(page.getByText('This console runs in local mode')).toBeVisible();
});

test('the one-time link signs in, the home page renders on the server, and sign-out ends it', async ({ page, strad }) => {
  const link = await strad.nextLink();
  await page.goto(link);
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByRole('heading', { name: 'Welcome, Local admin' })).toBeVisible();
  await expect(page.getByTestId('home-email')).toHaveText('admin@localhost');
  const bar = page.getByRole('banner');
  await expect(bar.getByTestId('signed-in-email')).toHaveText('admin@localhost');
  await expect(bar.getByRole('list', { name: 'Your roles' })).toContainText('admin');

  await bar.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/sign-in$/);
  await page.goto('/');
  await expect(page).toHaveURL(/\/sign-in/);
});

test('a used link is refused with a clear message', async ({ page, browser, strad }) => {
  const link = await strad.nextLink();
  await page.goto(link);
  await expect(page.getByTestId('home-email')).toBeVisible();
  const other = await browser.newContext({ javaScriptEnabled: test.info().project.use.javaScriptEnabled });
  const second = await other.newPage();
  await second.goto(link);
  await expect(second.getByRole('alert')).toContainText('was used already');
  await other.close();
});

test('the server-rendered page hydrates: the theme switch works and is remembered', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'needs the hydrated console');
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(await strad.nextLink());
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');

  const html = page.locator('html');
  const toggle = page.getByRole('button', { name: /Switch to (dark|light) theme/ });
  await expect(toggle).toBeEnabled();
  const before = (await toggle.getAttribute('aria-label')).includes('dark') ? 'light' : 'dark';
  const after = before === 'light' ? 'dark' : 'light';
  await toggle.click();
  await expect(html).toHaveAttribute('data-theme', after);
  await expect(page.getByRole('button', { name: `Switch to ${before} theme` })).toBeVisible();

  // Remembered across a full reload, applied by the server before any script runs.
  await page.reload();
  await expect(html).toHaveAttribute('data-theme', after);
  expect(errors).toEqual([]);
});

test('without script the console still works: sign-in, home and sign-out need no JavaScript', async ({ page, strad }) => {
  test.skip(test.info().project.use.javaScriptEnabled, 'the no-script run');
  await page.goto(await strad.nextLink());
  await expect(page.getByTestId('home-email')).toHaveText('admin@localhost');
  await expect(page.locator('body')).not.toHaveAttribute('data-hydrated', 'true');
  await page.getByRole('link', { name: 'People' }).first().click();
  await expect(page.getByRole('table')).toContainText('admin@localhost');
});

test('an unknown page is a 404 page', async ({ page }) => {
  const response = await page.goto('/no/such/page');
  expect(response.status()).toBe(404);
  await expect(page.getByRole('heading', { name: 'Not found' })).toBeVisible();
});

test('keyboard: the first Tab stop is a visible skip link', async ({ page, strad }) => {
  await page.goto(await strad.nextLink());
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to content' });
  await expect(skip).toBeFocused();
  await expect(skip).toBeVisible();
});

test('the console runs only its own scripts: an injected inline script is refused by its CSP', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'needs the hydrated console');
  const violations = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.goto(await strad.nextLink());
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  // What an HTML injection would add: an inline script, and one with a guessed nonce.
  await page.evaluate(() => {
    for (const nonce of [null, 'guessed']) {
      const script = document.createElement('script');
      if (nonce) script.setAttribute('nonce', nonce);
      script.textContent = 'window.__injected = (window.__injected ?? 0) + 1;';
      document.body.append(script);
    }
  });
  await expect.poll(() => violations.length).toBeGreaterThanOrEqual(2);
  expect(await page.evaluate(() => window.__injected)).toBeUndefined();
});
