import { readFile } from 'node:fs/promises';
import { test, expect } from './fixtures.mjs';

// The local admin (admin@localhost) is admin and auditor, so one person plays both parts.
test('an admin grants a person a server; that person then sees it; the auditor sees both events and exports them', async ({ page, strad, mcp }) => {
  const js = test.info().project.use.javaScriptEnabled;
  const slug = `granted-${test.info().project.name}`;
  const hydrated = async () => {
    if (js) await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  };
  await page.goto(await strad.nextLink());
  await hydrated();

  // Register a server.
  await page.goto('/admin/servers');
  await hydrated();
  const register = page.getByRole('region', { name: 'Register a server' });
  await register.getByLabel('Slug').fill(slug);
  await register.getByLabel('Display name').fill('Granted clock');
  await register.getByLabel('URL').fill(mcp.url);
  await register.getByRole('button', { name: 'Register' }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/servers/${slug}$`));

  // Nothing is shared with the admin yet.
  await page.goto('/');
  const yours = page.getByRole('region', { name: 'Your servers' });
  await expect(yours).not.toContainText(slug);

  // Grant it.
  await page.goto('/admin/entitlements');
  await hydrated();
  const grant = page.getByRole('region', { name: 'Grant a server' });
  await grant.getByLabel('Server').selectOption(slug);
  await grant.getByLabel('Email or domain').fill('admin@localhost');
  await grant.getByRole('button', { name: 'Grant' }).click();
  if (js) await expect(grant.getByRole('status')).toHaveText('Granted.');
  const grants = page.getByRole('region', { name: 'Who can reach each server' });
  const row = grants.locator(`tr[data-slug="${slug}"]`);
  await expect(row).toContainText('admin@localhost');
  await expect(row).toContainText('person');
  await expect(row.getByRole('button', { name: `Revoke admin@localhost from ${slug}` })).toBeVisible();

  // The lookup (a plain GET form) agrees.
  const lookup = page.getByRole('region', { name: 'What can a person reach?' });
  await lookup.getByLabel('Email').fill('admin@localhost');
  await lookup.getByRole('button', { name: 'Look up' }).click();
  await expect(page).toHaveURL(/person=admin%40localhost/);
  await expect(page.getByRole('region', { name: 'What can a person reach?' }).getByRole('listitem')
    .filter({ hasText: slug })).toContainText('Granted clock');

  // The person sees it on their home page.
  await page.goto('/');
  await expect(page.getByRole('region', { name: 'Your servers' }).getByRole('listitem')
    .filter({ hasText: slug })).toContainText('Granted clock');

  // The auditor sees both events, filtered by the slug.
  await page.goto('/audit');
  await hydrated();
  await page.locator('form[role="search"] input[name="slug"]').fill(slug);
  await page.locator('form[role="search"] input[name="slug"]').press('Enter');
  await expect(page).toHaveURL(new RegExp(`slug=${slug}`));
  await expect(page.locator('tr[data-kind="entitlement_granted"]').first()).toContainText(slug);
  await expect(page.locator('tr[data-kind="server_registered"]').first()).toContainText(slug);

  // And exports them.
  const exportCsv = page.getByRole('link', { name: 'Export CSV' });
  await expect(exportCsv).toHaveAttribute('href', /^\/audit\/export\.csv\?/);
  const [download] = await Promise.all([page.waitForEvent('download'), exportCsv.click()]);
  expect(download.suggestedFilename()).toMatch(/\.csv$/);
  const csv = await readFile(await download.path(), 'utf8');
  expect(csv).toContain('entitlement_granted');
  expect(csv).toContain(slug);
  await expect(page.getByRole('link', { name: 'Export JSON' })).toHaveAttribute('href', /^\/audit\/export\.json\?/);
});
