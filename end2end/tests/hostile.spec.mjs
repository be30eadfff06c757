// The hostile-app suite: one app of the project's own (support/hostile-app.html)
// runs the attack its address names, in the real browser, inside strad's frame; each test
// asserts the attack failed — on the page's own report, on a canary server that counts every
// request that got out, on the console's address, and on the MCP server's call log.
import { test, expect } from './fixtures.mjs';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

const HOSTILE = readFileSync(new URL('../support/hostile-app.html', import.meta.url), 'utf8');
const SLUG = 'hostile';

/** A loopback server that records every request (and WebSocket upgrade) that reaches it. */
async function startCanary() {
  const hits = [];
  const server = createServer((req, res) => { hits.push(`${req.method} ${req.url}`); res.end('ok'); });
  server.on('upgrade', (req, socket) => { hits.push(`UPGRADE ${req.url}`); socket.destroy(); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    hits,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

let canary;
test.beforeAll(async () => { canary = await startCanary(); });
test.afterAll(async () => { await canary?.close(); });
test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

const registered = new Set();

/** Signs in; on this strad's first use, registers the hostile app and pins it. */
async function signIn(page, strad, mcp) {
  await page.goto(await strad.nextLink());
  if (registered.has(strad.baseURL)) return;
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  await mcp.control({ html: HOSTILE });
  expect((await api('servers/register', { slug: SLUG, display_name: 'Hostile', url: mcp.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug: SLUG, grantee: 'admin@localhost' })).status()).toBe(200);
  // The first open pins the hostile page; from then on it is what the frame serves.
  expect((await api('apps/open', { slug: SLUG })).status()).toBe(200);
  await mcp.control({ reset: true });
  registered.add(strad.baseURL);
}

/** Signs in, opens the hostile app with `query` and waits for its report. */
async function attack(page, strad, mcp, query) {
  await signIn(page, strad, mcp);
  return openHostile(page, query);
}

/** Opens the hostile app with `query` and waits for its report. */
async function openHostile(page, query) {
  canary.hits.length = 0;
  const search = new URLSearchParams({ canary: canary.url, ...query });
  await page.goto(`/apps/${SLUG}?${search}`);
  const app = page.frameLocator('iframe.app-frame');
  const outcome = app.locator('#outcome');
  await expect(outcome).not.toHaveText('running', { timeout: 15_000 });
  return { app, outcome: (await outcome.textContent()).trim(), url: page.url() };
}

for (const name of ['fetch', 'xhr', 'websocket', 'eventsource', 'image', 'beacon', 'form']) {
  test(`network: ${name} to an undeclared host never leaves the frame`, async ({ page, strad, mcp }) => {
    const { outcome } = await attack(page, strad, mcp, { attack: name });
    expect(outcome).toMatch(/^blocked/);
    expect(canary.hits).toEqual([]);
  });
}

for (const name of ['cookies', 'storage', 'session', 'indexeddb', 'parentdom']) {
  test(`storage: ${name} of the console is out of reach`, async ({ page, strad, mcp }) => {
    await page.context().addCookies([{ name: 'console-secret', value: 'x', url: strad.baseURL }]);
    const { outcome } = await attack(page, strad, mcp, { attack: name });
    expect(outcome).toMatch(/^blocked/);
    expect(outcome).not.toContain('console-secret');
  });
}

test('window.top navigation is refused and the console stays put', async ({ page, strad, mcp }) => {
  const { outcome, url } = await attack(page, strad, mcp, { attack: 'top' });
  expect(outcome).toMatch(/^blocked/);
  expect(page.url()).toBe(url);
  expect(new URL(page.url()).pathname).toBe(`/apps/${SLUG}`);
  expect(canary.hits).toEqual([]);
});

for (const target of ['//evil.example', '/\\evil.example', 'javascript:alert(1)', '%2F%2Fevil.example', 'https://evil.example/', `http://127.0.0.1:1/`, '/%5Cevil.example']) {
  test(`host/open refuses ${target}`, async ({ page, strad, mcp }) => {
    const { outcome, url } = await attack(page, strad, mcp, { attack: 'host-open', target });
    expect(outcome).toMatch(/^refused/);
    expect(page.url()).toBe(url);
  });
}

/** Every address the console window itself is sent to, from now on. */
function consoleNavigations(page) {
  const urls = [];
  page.on('request', (request) => {
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) urls.push(request.url());
  });
  return urls;
}

/** Who this browser is signed in as, and whether it is a view-only token session. */
async function me(page) {
  const response = await page.request.get('/api/me');
  expect(response.status()).toBe(200);
  return response.json();
}

// A login token in the address would sign the person's browser in as the token's owner
// (login CSRF): the host rebuilds the address without it. Here the token is the person's own,
// so a breach shows as a view-only token session.
test('host/open never carries a login token into the console\'s address', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  const minted = await (await page.request.post('/api/tokens/mint', { form: { name: 'planted', days: '1' } })).json();
  const navigations = consoleNavigations(page);
  const search = new URLSearchParams({ canary: canary.url, attack: 'host-open', target: `/?token=${minted.secret}` });
  await page.goto(`/apps/${SLUG}?${search}`);
  await page.waitForURL((url) => url.pathname === '/');
  const leaked = navigations.filter((url) => [...new URL(url).searchParams.keys()].some((k) => k.toLowerCase() === 'token'));
  expect(leaked).toEqual([]);
  const person = await me(page);
  expect(person.email).toBe('admin@localhost');
  expect(person.token_session).toBe(false);
});

for (const target of ['/./auth/callback', '/apps/../auth/local', `/apps/${SLUG}/frame/x`]) {
  test(`host/open resolves the path before refusing ${target}`, async ({ page, strad, mcp }) => {
    await signIn(page, strad, mcp);
    const navigations = consoleNavigations(page);
    const { outcome, url } = await openHostile(page, { attack: 'host-open', target });
    expect(outcome).toMatch(/^refused/);
    expect(page.url()).toBe(url);
    expect(navigations.map((u) => new URL(u).pathname)).toEqual([`/apps/${SLUG}`]);
    const person = await me(page);
    expect(person.email).toBe('admin@localhost');
    expect(person.token_session).toBe(false);
  });
}

for (const link of ['javascript:alert(1)', 'data:text/html,<p>hi</p>', 'file:///etc/passwd']) {
  test(`ui/open-link refuses ${link.split(':')[0]}: URLs`, async ({ page, strad, mcp }) => {
    const opened = [];
    page.context().on('page', (p) => opened.push(p.url()));
    const { outcome } = await attack(page, strad, mcp, { attack: 'open-link', url: link });
    expect(outcome).toMatch(/^refused/);
    expect(opened).toEqual([]);
  });
}

test('tool calls outside what the app may call are refused and reach no server', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  // A tool the model may call but apps may not.
  await mcp.control({ addTool: { name: 'model-only', annotations: { readOnlyHint: true }, _meta: { ui: { visibility: ['model'] } } } });
  expect((await page.request.post('/api/servers/refresh', { form: { slug: SLUG } })).status()).toBe(200);
  try {
    const cases = [
      ['model-only', /not available to apps/],
      ['write-note', /changes things/],
      ['no-such-tool', /no such tool/],
      ['other-server__show-widget', /no such tool/],
      ['../show-widget', /no such tool/],
    ];
    for (const [name, message] of cases) {
      const { outcome } = await attack(page, strad, mcp, { attack: 'tool', name });
      expect(outcome, name).toMatch(/^refused/);
      expect(outcome, name).toMatch(message);
    }
    const calls = (await mcp.state()).calls;
    for (const [name] of cases) expect(calls[name] ?? 0, name).toBe(0);
  } finally {
    await mcp.control({ reset: true });
  }
});

test('a replayed request id is refused', async ({ page, strad, mcp }) => {
  const { outcome } = await attack(page, strad, mcp, { attack: 'replay' });
  expect(outcome).toBe('first ANSWERED: {}; second refused: request id already used in this app session');
});

test('an oversized message is dropped and the bridge keeps working', async ({ page, strad, mcp }) => {
  const { outcome } = await attack(page, strad, mcp, { attack: 'oversized' });
  expect(outcome).toBe('oversized ignored; after ANSWERED: {}');
});

test('a deeply nested message is dropped and the bridge keeps working', async ({ page, strad, mcp }) => {
  const { outcome } = await attack(page, strad, mcp, { attack: 'nested' });
  expect(outcome).toBe('nested ignored; after ANSWERED: {}');
});

test('a flood of requests is answered at once, past the rate with an error, and the bridge keeps working', async ({ page, strad, mcp }) => {
  // Every write of the frame's dropped-message count, from the console page's start.
  await page.addInitScript(() => {
    window.droppedCountWrites = 0;
    new MutationObserver((records) => { window.droppedCountWrites += records.length; })
      .observe(document, { subtree: true, attributes: true, attributeFilter: ['data-dropped-messages'] });
  });
  const { outcome } = await attack(page, strad, mcp, { attack: 'flood' });
  const match = outcome.match(/^every request answered: (\d+) results, (\d+) refused; after (.*)$/);
  expect(match, outcome).not.toBeNull();
  // 200 a second; the page's 5000 can span a few windows.
  expect(Number(match[1])).toBeLessThanOrEqual(1000);
  expect(Number(match[1]) + Number(match[2])).toBe(5000);
  expect(match[3]).toBe('ANSWERED: {}');
  // The count is shown once a frame, not written once a message: it settles at every
  // refusal, in far fewer writes than refusals.
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-dropped-messages', match[2]);
  const writes = await page.evaluate(() => window.droppedCountWrites);
  expect(writes).toBeGreaterThan(0);
  expect(writes).toBeLessThan(Number(match[2]) / 4);
});

test('a request right after a burst of thousands of notifications is answered with its result', async ({ page, strad, mcp }) => {
  const { outcome } = await attack(page, strad, mcp, { attack: 'notification-flood' });
  expect(outcome).toBe('after the burst ANSWERED: {}');
});

test('messages from a second window the app opens are ignored', async ({ page, strad, mcp }) => {
  const popupOpened = page.context().waitForEvent('page');
  const { outcome, url } = await attack(page, strad, mcp, { attack: 'popup' });
  expect(outcome).toBe('opened a popup');
  const popup = await popupOpened;
  // Script in the second window asks the console to go elsewhere, as the app would.
  await popup.evaluate(() => opener.parent.postMessage(
    { jsonrpc: '2.0', id: 'from-popup', method: 'host/open', params: { path: '/people' } }, '*'));
  // Absence has no event to wait for: the console is given a second to misbehave.
  await page.waitForTimeout(1000);
  expect(page.url()).toBe(url);
});

test('messages from a frame nested in the app are ignored', async ({ page, strad, mcp }) => {
  const { outcome, url } = await attack(page, strad, mcp, { attack: 'nestedframe' });
  expect(outcome).toBe('nested frame ready');
  const app = page.frames().find((f) => f.url().includes(`/apps/${SLUG}/frame/`));
  const nested = app.childFrames()[0];
  expect(nested).toBeTruthy();
  await nested.evaluate(() => parent.parent.postMessage(
    { jsonrpc: '2.0', id: 'from-nested', method: 'host/open', params: { path: '/people' } }, '*'));
  await page.waitForTimeout(1000);
  expect(page.url()).toBe(url);
});

test('the frame route opened directly (by the app, or by a link) runs nothing', async ({ page, strad, mcp }) => {
  const tabOpened = page.context().waitForEvent('page');
  const { outcome } = await attack(page, strad, mcp, { attack: 'direct' });
  expect(outcome).toBe('opened the frame route in a tab');
  const tab = await tabOpened;
  await tab.waitForLoadState();
  await expect(tab.locator('body')).toContainText('only works inside the console');
  await expect(tab.locator('#outcome')).toHaveCount(0);
  // The same address typed into a new tab.
  const typed = await page.context().newPage();
  const response = await typed.goto(tab.url());
  expect(response.status()).toBe(403);
  await expect(typed.locator('#outcome')).toHaveCount(0);
});

test('a resource domain carrying ";", a quote or a path never reaches the CSP', async ({ page, strad, mcp }) => {
  await page.goto(await strad.nextLink());
  const slug = 'domains';
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  await mcp.control({ uiMeta: { csp: { resourceDomains: [
    'https://cdn.example.com',
    'https://semi.example.com; script-src *',
    'https://quote.example.com"',
    "https://single.example.com'",
    'https://path.example.com/assets',
  ] } } });
  try {
    expect((await api('servers/register', { slug, display_name: slug, url: mcp.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
    expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
    const frame = page.waitForResponse((r) => r.url().includes(`/apps/${slug}/frame/`));
    await page.goto(`/apps/${slug}`);
    const csp = (await frame).headers()['content-security-policy'];
    expect(csp).toContain('img-src data: blob: https://cdn.example.com;');
    for (const bad of ['semi.example', 'quote.example', 'single.example', 'path.example', 'script-src *', '"']) {
      expect(csp).not.toContain(bad);
    }
  } finally {
    await mcp.control({ reset: true });
  }
});

test('an app changed on the server after pinning: the pinned copy runs, and the bar says so', async ({ page, strad, mcp }) => {
  await signIn(page, strad, mcp);
  // The server's copy is the test widget again (signIn reset it); the pin is the hostile app.
  expect((await page.request.post('/api/servers/refresh', { form: { slug: SLUG } })).status()).toBe(200);
  const { outcome } = await attack(page, strad, mcp, { attack: 'idle' });
  expect(outcome).toBe('idle');
  await expect(page.getByRole('status').filter({ hasText: "server's copy differs" })).toBeVisible();
});
