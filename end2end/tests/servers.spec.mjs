import { test, expect } from './fixtures.mjs';

test('an admin registers a server in the UI and sees its apps listed', async ({ page, strad, mcp }) => {
  const js = test.info().project.use.javaScriptEnabled;
  const slug = js ? 'widgets-js' : 'widgets-nojs';
  await page.goto(await strad.nextLink());
  if (js) await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  await page.getByRole('banner').getByRole('link', { name: 'Servers' }).click();
  await expect(page.getByRole('heading', { name: 'Servers', level: 1 })).toBeVisible();

  const form = page.getByRole('region', { name: 'Register a server' });
  await form.getByLabel('Slug').fill(slug);
  await form.getByLabel('Display name').fill('Widgets');
  await form.getByLabel('URL').fill(mcp.url);
  await form.getByRole('checkbox', { name: 'apps' }).check();
  await form.getByRole('button', { name: 'Register' }).click();

  await expect(page).toHaveURL(new RegExp(`/admin/servers/${slug}$`));
  await expect(page.getByRole('heading', { name: `Widgets ${slug}` })).toBeVisible();
  const apps = page.getByRole('table', { name: 'ui:// resources' });
  await expect(apps.getByRole('row', { name: /ui:\/\/test\/widget\.html/ })).toContainText('show-widget');
  await expect(apps).toContainText('ui://test/blob.html');
  const tools = page.getByRole('table', { name: 'Tools the server lists' });
  await expect(tools.getByRole('row', { name: /app-only-refresh/ })).toContainText('app');
  await expect(page.getByRole('region', { name: 'Discovery problems' })).toContainText('not a ui:// URI');

  // The servers list counts the apps.
  await page.goto('/admin/servers');
  const row = page.locator(`tr[data-slug="${slug}"]`);
  await expect(row).toContainText('ok');
  await expect(row.locator('td').nth(4)).toHaveText('2');
});

test('an auditor reads the app-change log after the app HTML changes', async ({ page, strad, mcp }) => {
  const js = test.info().project.use.javaScriptEnabled;
  const slug = js ? 'changes-js' : 'changes-nojs';
  await page.goto(await strad.nextLink());
  if (js) await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  await page.goto('/admin/servers');
  const form = page.getByRole('region', { name: 'Register a server' });
  await form.getByLabel('Slug').fill(slug);
  await form.getByLabel('Display name').fill('Changes');
  await form.getByLabel('URL').fill(mcp.url);
  await form.getByRole('checkbox', { name: 'apps' }).check();
  await form.getByRole('button', { name: 'Register' }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/servers/${slug}$`));

  const marker = `changed-${slug}`;
  await mcp.control({ html: `<!doctype html><html><body><p>${marker}</p></body></html>` });
  await page.getByRole('button', { name: 'Refresh' }).click();
  if (js) await expect(page.getByRole('status').filter({ hasText: 'Discovered:' })).toContainText('change');

  await page.goto(`/audit/app-changes?server=${slug}`);
  const entry = page.locator('ol.changes > li').first();
  await expect(entry).toContainText('ui://test/widget.html');
  await expect(entry).toContainText('changed');
  await entry.getByText('Diff').click();
  await expect(entry.locator('pre.diff')).toContainText(marker);
  await mcp.control({ reset: true });
});
