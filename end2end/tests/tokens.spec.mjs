import { test, expect } from './fixtures.mjs';

test('a person mints a login token, sees it once, and revokes it', async ({ page, strad }) => {
  const js = test.info().project.use.javaScriptEnabled;
  await page.goto(await strad.nextLink());
  if (js) await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  await page.goto('/tokens');
  const name = `laptop-${test.info().project.name}`;
  const form = page.getByRole('region', { name: 'Mint a token' });
  await form.getByLabel('Name').fill(name);
  await form.getByRole('button', { name: 'Mint token' }).click();
  const secret = page.locator('output code');
  await expect(secret).toHaveText(/^strad_[A-Za-z0-9_-]{40,}$/);
  const value = await secret.textContent();

  // Shown once: a reload does not show it again.
  await page.reload();
  await expect(page.locator('output code')).toHaveCount(0);
  await expect(page.getByRole('table')).toContainText(name);
  expect(await page.content()).not.toContain(value);

  // The token opens a view-only session in another browser.
  const other = await page.context().browser().newContext({ javaScriptEnabled: js });
  const viewer = await other.newPage();
  await viewer.goto(`${strad.baseURL}/?token=${value}`);
  await expect(viewer).toHaveURL(new RegExp(`${strad.baseURL}/$`));
  await expect(viewer.getByTestId('home-email')).toHaveText('admin@localhost');
  await other.close();

  await page.getByRole('button', { name: new RegExp(`Revoke.*${name}`) }).click();
  await expect(page.getByRole('row', { name: new RegExp(name) })).toContainText('revoked');
});
