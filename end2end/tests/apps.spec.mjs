// Real MCP Apps built on the official SDK, served by the npm example servers, rendered in
// strad's sandboxed frame: the compatibility proof.
import { writeFileSync } from 'node:fs';
import { test, expect, startExample, holdWasm } from './fixtures.mjs';

async function setUp(page, strad, slug, url, markTools) {
  await page.goto(await strad.nextLink());
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  expect((await api('servers/register', { slug, display_name: slug, url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
  for (const tool of markTools) {
    expect((await api('policy/mark', { slug, tool, read_only: 'true' })).status()).toBe(200);
  }
}

const EXAMPLES = [
  ['mcp-server-basic-vanillajs', 'get-time', []],
  ['mcp-server-basic-react', 'get-time', []],
  ['mcp-server-basic-vue', 'get-time', []],
  ['mcp-server-basic-svelte', 'get-time', []],
  ['mcp-server-basic-preact', 'get-time', []],
  ['mcp-server-basic-solid', 'get-time', []],
  ['mcp-budget-allocator-server', 'get-budget-data', []],
  ['mcp-server-debug', 'debug-tool', ['debug-refresh', 'debug-log']],
  ['mcp-scenario-modeler-server', 'get-scenario-data', []],
  ['mcp-cohort-heatmap-server', 'get-cohort-data', []],
  ['mcp-customer-segmentation-server', 'get-customer-data', []],
  ['mcp-system-monitor-server', 'get-system-info', ['poll-system-stats']],
  ['mcp-shadertoy-server', 'render-shadertoy', []],
  ['mcp-sheet-music-server', 'play-sheet-music', []],
  ['mcp-threejs-server', 'show_threejs_scene', []],
  ['mcp-transcript-server', 'transcribe', []],
  ['mcp-video-resource-server', 'play_video', []],
  ['mcp-wiki-explorer-server', 'get-first-degree-links', []],
];

for (const [name, declaring, appOnly] of EXAMPLES) {
  test(`${name}: the app renders, completes the handshake and receives the opening call`, async ({ page, strad }) => {
    test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
    const server = await startExample(name);
    try {
      const slug = `${name.replace(/^mcp-/, '')}-${test.info().project.name}`;
      await setUp(page, strad, slug, server.url, [declaring, ...appOnly]);
      const opening = page.waitForResponse((r) => r.url().endsWith(`/apps/${slug}/opening-call`));
      await page.goto(`/apps/${slug}`);
      const frame = page.locator('iframe.app-frame');
      await expect(frame).toHaveAttribute('data-app-session', 'initialized');
      expect((await opening).status()).toBe(200);
      await expect(frame).toHaveAttribute('data-opening-call', 'result');
      // The page reported its size and the host applied it.
      await expect.poll(async () => frame.evaluate((el) => el.style.height)).toMatch(/px$/);
    } finally {
      server.stop();
    }
  });
}

test('basic-vanillajs: the opening result reaches the page and an app-initiated call round-trips', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const server = await startExample('mcp-server-basic-vanillajs');
  try {
    await setUp(page, strad, 'clock', server.url, ['get-time']);
    await page.goto('/apps/clock');
    const app = page.frameLocator('iframe.app-frame');
    const time = app.locator('#server-time');
    await expect(time).not.toHaveText('Loading...');
    const call = page.waitForResponse((r) => r.url().endsWith('/apps/clock/tools/call'));
    await app.getByRole('button', { name: 'Get Server Time' }).click();
    expect((await call).status()).toBe(200);
    // The frame is sandboxed: an opaque origin, and no network.
    const frame = page.frames().find((f) => f.url().includes('/apps/clock/frame'));
    expect(await frame.evaluate(() => self.origin)).toBe('null');
    const fetched = await frame.evaluate(() => fetch('/healthz').then(() => 'fetched', () => 'blocked'));
    expect(fetched).toBe('blocked');
  } finally {
    server.stop();
  }
});

// Real apps that reach past what a frame here may do: the guard holds and the console says
// what happened. The map waits for a script from a CDN before its handshake; `script-src`
// names only the pinned inline scripts, so it never starts.
test('map: an app waiting for a CDN script is refused it and shown as never started', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const server = await startExample('mcp-map-server');
  try {
    await setUp(page, strad, 'map', server.url, ['show-map']);
    const refused = page.waitForEvent('console', (m) =>
      /Content Security Policy/.test(m.text()) && m.text().includes("Loading the script 'https://cesium.com/"));
    await page.clock.install();
    await page.goto('/apps/map');
    await refused;
    await expect(page.getByRole('status').filter({ hasText: 'Starting the app' })).toBeVisible();
    await page.clock.fastForward(11_000);
    await expect(page.getByRole('alert')).toContainText('never completed its handshake');
  } finally {
    server.stop();
  }
});

/** A one-page PDF holding `text`. */
function onePagePdf(text) {
  const stream = `BT /F1 18 Tf 40 100 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const at = pdf.length;
    pdf += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n \n`).join('');
  return `${pdf}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
}

// The PDF viewer: a 4 MB page opened from its card in the playground, which reads its file
// through an app-only tool, then starts PDF.js's worker from a `blob:` address and, failing
// that, imports it from a `data:` one. Both are code made at run time, not pinned: refused.
test('pdf: the viewer opens from its card and reads its file, but its generated worker is refused', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const file = test.info().outputPath('report.pdf');
  writeFileSync(file, onePagePdf('Quarterly report'));
  const server = await startExample('mcp-pdf-server', [file]);
  try {
    await setUp(page, strad, 'pdf', server.url, ['read_pdf_bytes']);
    const refused = [];
    page.on('console', (m) => {
      if (/Content Security Policy/.test(m.text())) refused.push(m.text());
    });
    await page.goto('/servers/pdf');
    const tool = page.locator('section.tool[data-tool="display_pdf"]');
    await tool.getByLabel('url').fill(file);
    await tool.getByRole('button', { name: 'Call' }).click();
    const card = tool.getByTestId('app-card');
    const read = page.waitForResponse((r) => r.url().endsWith('/apps/pdf/tools/call'));
    await card.getByRole('button', { name: 'Load app' }).click();
    const frame = card.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    const answer = await read;
    expect(answer.status()).toBe(200);
    expect(JSON.stringify((await answer.json()).result)).toContain('bytes');
    await expect.poll(() => refused.some((t) => t.includes("Creating a worker from 'blob:"))).toBe(true);
    await expect.poll(() => refused.some((t) => t.includes("Loading the script 'data:"))).toBe(true);
  } finally {
    server.stop();
  }
});

// The same app built with other UI frameworks: each one's own call reaches the server
// through the bridge and its answer reaches the page. Not Vue's: its reactive wrapper of the
// SDK's app reads a property of the host's window, which a frame of opaque origin may not
// (a SecurityError in the page, before anything is posted), so its calls never leave it.
for (const framework of ['react', 'svelte', 'preact', 'solid']) {
  test(`basic-${framework}: a call the app makes round-trips and its result is shown`, async ({ page, strad }) => {
    test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
    const server = await startExample(`mcp-server-basic-${framework}`);
    try {
      const slug = `clock-${framework}`;
      await setUp(page, strad, slug, server.url, ['get-time']);
      await page.goto(`/apps/${slug}`);
      await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
      const app = page.frameLocator('iframe.app-frame');
      const call = page.waitForResponse((r) => r.url().endsWith(`/apps/${slug}/tools/call`));
      await app.getByRole('button', { name: 'Get Server Time' }).click();
      const answer = await call;
      expect(answer.status()).toBe(200);
      const { result } = await answer.json();
      const time = result.structuredContent?.time ?? result.content[0].text;
      expect(time).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      await expect(app.locator('body')).toContainText(time);
    } finally {
      server.stop();
    }
  });
}

test('unmarked, the same app renders with no opening call and its own calls are refused', async ({ page, strad }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const server = await startExample('mcp-server-basic-vanillajs');
  try {
    await setUp(page, strad, 'clock-unmarked', server.url, []);
    let openingCalls = 0;
    page.on('request', (r) => { if (r.url().includes('/opening-call')) openingCalls += 1; });
    await page.goto('/apps/clock-unmarked');
    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-app-session', 'initialized');
    const app = page.frameLocator('iframe.app-frame');
    await expect(app.locator('#server-time')).toHaveText('Loading...');
    const call = page.waitForResponse((r) => r.url().endsWith('/apps/clock-unmarked/tools/call'));
    await app.getByRole('button', { name: 'Get Server Time' }).click();
    const refused = await call;
    expect(refused.status()).toBe(403);
    expect((await refused.json()).error).toContain('changes things');
    expect(openingCalls).toBe(0);
  } finally {
    server.stop();
  }
});

async function registerTestServer(page, strad, mcp, slug, html) {
  if (html) await mcp.control({ html });
  await page.goto(await strad.nextLink());
  const api = (name, form) => page.request.post(`/api/${name}`, { form });
  expect((await api('servers/register', { slug, display_name: slug, url: mcp.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
  expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
}

test('a script injected into the served page after hashing does not run', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'injected';
  await registerTestServer(page, strad, mcp, slug, null);
  await page.route(`**/apps/${slug}/frame**`, async (route) => {
    const response = await route.fetch();
    const body = (await response.text()).replace('</body>', "<script>document.title = 'injected';</script></body>");
    await route.fulfill({ response, body });
  });
  const violation = page.waitForEvent('console', (m) => /Content Security Policy/.test(m.text()) && /script/.test(m.text()));
  await page.goto(`/apps/${slug}`);
  await violation;
  // The pinned script (hashed) did run: the handshake completed; the injected one did not.
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  const frame = page.frames().find((f) => f.url().includes(`/apps/${slug}/frame`));
  expect(await frame.title()).not.toBe('injected');
});

test('a second document in the frame removes the frame and its bridge', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'reloader';
  const html = '<!doctype html><html><body><p>again</p><script>addEventListener("load", () => setTimeout(() => location.reload(), 100));</script></body></html>';
  await registerTestServer(page, strad, mcp, slug, html);
  try {
    await page.goto(`/apps/${slug}`);
    await expect(page.getByRole('alert')).toContainText('loaded a second document');
    await expect(page.locator('iframe.app-frame')).toHaveCount(0);
  } finally {
    await mcp.control({ reset: true });
  }
});

test('a second document loaded before the console hydrates still removes the frame', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'early-reloader';
  const html = '<!doctype html><html><body><p>again</p><script>addEventListener("load", () => setTimeout(() => location.reload(), 100));</script></body></html>';
  await registerTestServer(page, strad, mcp, slug, html);
  try {
    const frames = [];
    page.on('response', (r) => { if (r.url().includes(`/apps/${slug}/frame`)) frames.push(r.status()); });
    const { release, visit } = await holdWasm(page);
    await visit(`/apps/${slug}`);
    // Both documents were requested while the console was server-rendered.
    await expect.poll(() => frames.length).toBe(2);
    await expect(page.locator('body')).not.toHaveAttribute('data-hydrated');
    release();
    await expect(page.getByRole('alert')).toContainText('loaded a second document');
    await expect(page.locator('iframe.app-frame')).toHaveCount(0);
  } finally {
    await mcp.control({ reset: true });
  }
});

test('a page that reloads itself at once gets an inert document, not a second live copy', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'instant-reloader';
  const html = '<!doctype html><html><body><p>once</p><script>location.reload();</script></body></html>';
  await registerTestServer(page, strad, mcp, slug, html);
  try {
    const frames = [];
    page.on('response', (r) => { if (r.url().includes(`/apps/${slug}/frame`)) frames.push(r.status()); });
    await page.goto(`/apps/${slug}`);
    const app = page.frameLocator('iframe.app-frame');
    // On the sandbox origin (the local-mode default) every frame load is cross-site, so the
    // reload is refused for its spent ticket.
    await expect(app.locator('body')).toContainText('tried to load a second document');
    // The app's document was served once; the reload got the inert page.
    expect(frames).toEqual([200, 409]);
    await expect(page.locator('iframe.app-frame')).not.toHaveAttribute('data-app-session', 'initialized');
  } finally {
    await mcp.control({ reset: true });
  }
});

test('leaving the app sends ui/resource-teardown and waits for the answer before the frame goes', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'teardown';
  // On teardown, this app makes one more tool call and only then answers: the call reaching
  // the server proves the host asked and waited.
  const html = `<!doctype html><html><body><p id="s">starting</p><script type="module">
    const post = (m) => parent.postMessage({ jsonrpc: '2.0', ...m }, '*');
    let next = 1; const pending = new Map();
    const request = (method, params) => new Promise((resolve) => { const id = next++; pending.set(id, resolve); post({ id, method, params }); });
    addEventListener('message', async (e) => {
      if (e.source !== parent) return;
      const m = e.data;
      if (m.method === undefined) { pending.get(m.id)?.(m); pending.delete(m.id); return; }
      if (m.method === 'ui/resource-teardown') {
        await request('tools/call', { name: 'show-widget', arguments: { label: 'teardown' } });
        post({ id: m.id, result: {} });
      }
    });
    await request('ui/initialize', { appInfo: { name: 't', version: '1' }, appCapabilities: {}, protocolVersion: '2026-01-26' });
    post({ method: 'ui/notifications/initialized', params: {} });
    document.getElementById('s').textContent = 'running';
  </script></body></html>`;
  await registerTestServer(page, strad, mcp, slug, html);
  try {
    await page.goto(`/apps/${slug}`);
    const frame = page.locator('iframe.app-frame');
    await expect(frame).toHaveAttribute('data-opening-call', 'result');
    const before = (await mcp.state()).calls['show-widget'] ?? 0;
    const teardownCall = page.waitForResponse((r) => r.url().endsWith(`/apps/${slug}/tools/call`));
    await page.getByRole('link', { name: 'Home' }).first().click();
    expect((await teardownCall).status()).toBe(200);
    await expect(page).toHaveURL(/\/$/);
    await expect(frame).toHaveCount(0);
    expect((await mcp.state()).calls['show-widget']).toBe(before + 1);
  } finally {
    await mcp.control({ reset: true });
  }
});

test('the status line says what the app is doing, and says so when it never starts', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'silent';
  await registerTestServer(page, strad, mcp, slug, '<!doctype html><html><body><p>no script here</p></body></html>');
  try {
    await page.clock.install();
    await page.goto(`/apps/${slug}`);
    await expect(page.getByRole('status').filter({ hasText: 'Starting the app' })).toBeVisible();
    await page.clock.fastForward(11_000);
    await expect(page.getByRole('alert')).toContainText('never completed its handshake');
  } finally {
    await mcp.control({ reset: true });
  }
});

test('an app changed on its server: the page keeps the pinned copy until Refresh pinned copy', async ({ page, strad, mcp }) => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
  const slug = 'repin';
  await registerTestServer(page, strad, mcp, slug, '<!doctype html><html><body><p id="v">version one</p></body></html>');
  try {
    const app = page.frameLocator('iframe.app-frame');
    await page.goto(`/apps/${slug}`);
    await expect(app.locator('#v')).toHaveText('version one');
    await mcp.control({ html: '<!doctype html><html><body><p id="v">version two</p></body></html>' });
    expect((await page.request.post('/api/servers/refresh', { form: { slug } })).status()).toBe(200);
    await page.goto(`/apps/${slug}`);
    const differs = page.getByRole('status').filter({ hasText: "server's copy differs" });
    await expect(differs).toBeVisible();
    await expect(app.locator('#v')).toHaveText('version one');
    const refreshed = page.waitForResponse((r) => r.url().endsWith('/api/apps/open') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Refresh pinned copy' }).click();
    expect((await refreshed).status()).toBe(200);
    await expect(app.locator('#v')).toHaveText('version two');
    await expect(differs).toHaveCount(0);
  } finally {
    await mcp.control({ reset: true });
  }
});
