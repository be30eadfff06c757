// The playground and its app cards, in Debian's Chromium, against the real
// budget-allocator example server and strad's own test server.
import { test, expect, startExample } from './fixtures.mjs';
import { execFileSync } from 'node:child_process';

async function register(page, strad, slug, url) {
  await page.goto(await strad.nextLink());
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  expect((await api('servers/register', { slug, display_name: slug, url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
}

async function pinOf(page, slug, uri) {
  const response = await page.request.get('/api/pins/get', { params: { slug, uri } });
  expect(response.status()).toBe(200);
  return response.json();
}

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'the playground calls tools from the hydrated page');
});

test('budget-allocator: call from the form, Load the card, Inspect, Close, Revoke, Load again, Open as structure', async ({ page, strad }) => {
  const server = await startExample('mcp-budget-allocator-server');
  try {
    const slug = 'budget';
    await register(page, strad, slug, server.url);
    await page.goto(`/servers/${slug}`);
    const tool = page.locator('section.tool[data-tool="get-budget-data"]');
    await tool.getByRole('button', { name: 'Call' }).click();
    const card = tool.getByTestId('app-card');
    await expect(tool.getByRole('region', { name: 'Result' }).first()).toBeVisible();
    await expect(card).toBeVisible();
    // Load: pins, and the app gets the call's input and result.
    const load = card.getByRole('button', { name: 'Load app' });
    await load.click();
    const frame = card.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    const uri = await card.locator('h3 code').textContent();
    const pin = await pinOf(page, slug, uri);
    expect(pin.intact).toBe(true);
    // Inspect: the pin's digest and size.
    await card.getByRole('button', { name: 'Inspect' }).click();
    await expect(card.getByTestId('inspect-digest')).toHaveText(pin.digest);
    await expect(card.getByTestId('inspect-size')).toHaveText(`${pin.size} bytes`);
    await expect(card.getByTestId('inspect')).toContainText('Permissions granted');
    // Close returns focus to the opener.
    await card.getByRole('button', { name: 'Close' }).click();
    await expect(frame).toHaveCount(0);
    await expect(load).toBeFocused();
    // Revoke deletes the pin; Load pins again.
    await card.getByRole('button', { name: 'Revoke' }).click();
    await expect(card.getByRole('status').filter({ hasText: 'Revoked' }).first()).toBeVisible();
    expect(await pinOf(page, slug, uri)).toBeNull();
    await load.click();
    await expect(card.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
    const again = await pinOf(page, slug, uri);
    expect(again.digest).toBe(pin.digest);
    // Open as structure: the result, rendered by the console, no app script involved.
    await card.getByRole('button', { name: 'Open as structure' }).click();
    const structure = card.getByTestId('structure');
    await expect(structure).toBeVisible();
    await expect(structure.locator('script')).toHaveCount(0);
    await expect(structure).toContainText('Structured content');
    // Pin and revoke are audited.
    const kinds = execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', strad.database, '-tAc',
      `SELECT kind FROM audit_log WHERE slug = '${slug}' AND kind IN ('app_pinned', 'app_pin_revoked', 'playground_tool_call') ORDER BY id`]).toString().trim().split('\n');
    expect(kinds).toEqual(['playground_tool_call', 'app_pinned', 'app_pin_revoked', 'app_pinned']);
  } finally {
    server.stop();
  }
});

test('a changed app: the card says the server copy differs, the pin is served until Refresh', async ({ page, strad, mcp }) => {
  const slug = 'changing';
  await mcp.control({ html: '<!doctype html><html><body><p id="v">version one</p></body></html>' });
  try {
    await register(page, strad, slug, mcp.url);
    await page.goto(`/servers/${slug}`);
    const tool = page.locator('section.tool[data-tool="show-widget"]');
    await tool.getByRole('button', { name: 'Call' }).click();
    const card = tool.getByTestId('app-card');
    await card.getByRole('button', { name: 'Load app' }).click();
    const app = card.frameLocator('iframe.app-frame');
    await expect(app.locator('#v')).toHaveText('version one');
    // The server changes its app; discovery records it.
    await mcp.control({ html: '<!doctype html><html><body><p id="v">version two</p></body></html>' });
    expect((await page.request.post('/api/servers/refresh', { form: { slug } })).status()).toBe(200);
    await page.goto(`/servers/${slug}`);
    await tool.getByRole('button', { name: 'Call' }).click();
    await expect(card.getByRole('status').filter({ hasText: "server's copy differs" })).toBeVisible();
    await card.getByRole('button', { name: 'Load app' }).click();
    await expect(app.locator('#v')).toHaveText('version one');
    await card.getByRole('button', { name: 'Refresh pinned resource' }).click();
    await expect(app.locator('#v')).toHaveText('version two');
    await expect(card.getByRole('status').filter({ hasText: "server's copy differs" })).toHaveCount(0);
    // The app-change log has the event.
    await page.goto('/audit/app-changes');
    await expect(page.getByText(slug).first()).toBeVisible();
  } finally {
    await mcp.control({ reset: true });
  }
});

test('a corrupt pin makes the card unavailable, and Open as structure still works', async ({ page, strad, mcp }) => {
  const slug = 'corrupt';
  await register(page, strad, slug, mcp.url);
  await page.goto(`/servers/${slug}`);
  const tool = page.locator('section.tool[data-tool="show-widget"]');
  await tool.getByRole('button', { name: 'Call' }).click();
  const card = tool.getByTestId('app-card');
  await card.getByRole('button', { name: 'Load app' }).click();
  await expect(card.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', strad.database, '-qc',
    `UPDATE pins SET bytes = bytes || '<script>evil()</script>'::bytea WHERE slug = '${slug}'`]);
  await page.goto(`/servers/${slug}`);
  await tool.getByRole('button', { name: 'Call' }).click();
  await expect(card.getByRole('alert').filter({ hasText: 'unavailable' })).toBeVisible();
  await expect(card.getByRole('button', { name: 'Load app' })).toBeDisabled();
  await card.getByRole('button', { name: 'Open as structure' }).click();
  await expect(card.getByTestId('structure')).toContainText('widget:');
});

test('the form validates at the field, offers raw JSON, and a refused tool says why', async ({ page, strad, mcp }) => {
  const slug = 'forms';
  await mcp.control({ addTool: { name: 'needs-count', inputSchema: { type: 'object', required: ['count'], properties: { count: { type: 'integer', minimum: 1 }, mode: { enum: ['a', 'b'] } } } } });
  try {
    await register(page, strad, slug, mcp.url);
    await page.goto(`/servers/${slug}`);
    // An app-only tool is not offered here.
    await expect(page.locator('section.tool[data-tool="app-only-refresh"]')).toHaveCount(0);
    const tool = page.locator('section.tool[data-tool="needs-count"]');
    await tool.getByRole('button', { name: 'Call' }).click();
    await expect(tool.getByRole('alert').filter({ hasText: 'Required.' })).toBeVisible();
    await tool.getByLabel('count').fill('0');
    await tool.getByRole('button', { name: 'Call' }).click();
    await expect(tool.getByRole('alert').filter({ hasText: 'At least 1.' })).toBeVisible();
    await tool.getByLabel('count').fill('2');
    await tool.getByLabel('mode').selectOption('b');
    await tool.getByRole('button', { name: 'Edit as JSON' }).click();
    await expect(tool.getByLabel('Arguments (JSON)')).toHaveValue(/"count": 2/);
    await tool.getByRole('button', { name: 'Call' }).click();
    await expect(tool.getByRole('region', { name: 'Result' })).toContainText('needs-count');
  } finally {
    await mcp.control({ reset: true });
  }
});
