// Three strad instances on one database behind Debian's nginx, with frames on the sandbox
// origin. nginx sends each kind of request to a different instance, so one flow crosses all
// three: sign-in on `a`, the console's pages (which issue frame tickets) on `c`, the frame on
// `b` (the sandbox origin's only upstream), approvals on `a` and tool calls on `b`. Every
// answer names the instance that gave it (X-Strad-Upstream, added by nginx).
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { test as base, expect, freePort, startStrad } from './fixtures.mjs';
import { startNginx, PROXY } from '../support/nginx.mjs';
import { openMailApp, askToSendMail, panel, MAIL } from './approval-setup.mjs';
import { settled, upstreamCalls } from './app-setup.mjs';

const test = base.extend({
  strad: [async ({}, use) => {
    const [front, ...ports] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const publicURL = `http://127.0.0.1:${front}`;
    const database = `strad_e2e_scale_${process.pid}_${front}`;
    const instances = {};
    for (const [name, port] of [['a', ports[0]], ['b', ports[1]], ['c', ports[2]]]) {
      // One after another: the first creates and migrates the database.
      instances[name] = await startStrad(
        { STRAD_INSTANCE: name, STRAD_SANDBOX_ORIGIN: `http://localhost:${front}` },
        { port, database, publicURL },
      );
      instances[name].port = port;
    }
    const upstream = (name) => `upstream ${name} { server 127.0.0.1:${instances[name].port}; keepalive 8; }`;
    const nginx = await startNginx(front, `
  ${upstream('a')}
  ${upstream('b')}
  ${upstream('c')}
  add_header X-Strad-Upstream $upstream_addr always;
  server {
    listen 127.0.0.1:${front};
    server_name 127.0.0.1;
    ${PROXY}
    location /auth/ { proxy_pass http://a; }
    location ~ ^/apps/[^/]+/approvals$ { proxy_pass http://a; }
    location ~ ^/apps/[^/]+/tools/call$ { proxy_pass http://b; }
    location / { proxy_pass http://c; }
  }
  server {
    listen 127.0.0.1:${front};
    server_name localhost;
    ${PROXY}
    location / { proxy_pass http://b; }
  }`);
    // The fixture's interface: the console's address, and sign-in links (printed by `a`).
    await use({
      baseURL: publicURL,
      front,
      instances,
      database,
      nextLink: () => instances.a.nextLink(),
    });
    await nginx.stop();
    for (const instance of Object.values(instances)) {
      instance.database = `${database}_kept`; // dropped once, below, when all have stopped
      await instance.stop();
    }
    try {
      execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `DROP DATABASE IF EXISTS ${database}`]);
    } catch { /* best effort */ }
  }, { scope: 'worker' }],
});

/** GET `path` straight from one instance, as a browser loads a frame from the sandbox
 * origin (its Host, no cookie). */
function frameFrom(port, host, path) {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, headers: { host, 'sec-fetch-dest': 'iframe', 'sec-fetch-site': 'cross-site' } }, (response) => {
      let body = '';
      response.on('data', (d) => { body += d; });
      response.on('end', () => resolve({ status: response.statusCode, body }));
    });
    request.on('error', reject);
  });
}

test('sign-in, the app page, its frame and an approved call each answered by another instance', async ({ page, strad, mcp }, testInfo) => {
  test.skip(!testInfo.project.use.javaScriptEnabled, 'the app runs in the hydrated console');
  const { instances, front } = strad;
  const by = (response) => response.headers()['x-strad-upstream'];
  const at = (name) => `127.0.0.1:${instances[name].port}`;
  const answered = [];
  page.on('response', (response) => {
    const url = new URL(response.url());
    answered.push({ host: url.host, path: url.pathname, status: response.status(), by: by(response) });
  });
  const frameRequests = [];
  page.on('request', (request) => {
    if (request.url().includes('/frame/')) frameRequests.push(request);
  });

  const slug = 'mail-across';
  const app = await openMailApp(page, strad, mcp, slug);
  const signIn = answered.find((r) => r.path === '/auth/local');
  expect(signIn.by).toBe(at('a'));
  const appPage = answered.find((r) => r.path === `/apps/${slug}`);
  expect(appPage.by).toBe(at('c'));
  const frame = answered.find((r) => r.path.startsWith(`/apps/${slug}/frame/`));
  expect(frame).toMatchObject({ host: `localhost:${front}`, status: 200, by: at('b') });

  // The frame is another site's document: its own origin (opaque, sandboxed) at the sandbox
  // host, and the console's session cookie never went with it.
  const appFrame = page.frames().find((f) => f.url().includes('/frame/'));
  expect(await appFrame.evaluate(() => [self.origin, location.host])).toEqual(['null', `localhost:${front}`]);
  expect(frameRequests).toHaveLength(1);
  const sent = await frameRequests[0].allHeaders();
  expect(sent.cookie).toBeUndefined();
  const cookies = await page.context().cookies(strad.baseURL);
  expect(cookies.map((c) => c.name)).toContain('strad_session');

  // A writing call: approved on `a`, run on `b`, upstream exactly once.
  const before = await upstreamCalls(mcp, 'send-mail');
  await askToSendMail(app);
  await expect(panel(page)).toBeVisible();
  await panel(page).getByRole('button', { name: 'Approve', exact: true }).click();
  const { state } = await settled(app.locator('#outcome-1'));
  expect(state).toBe('result');
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before + 1);
  expect((await mcp.state()).callArguments['send-mail'].at(-1)).toEqual(MAIL);
  const approvals = answered.filter((r) => r.path === `/apps/${slug}/approvals`);
  expect(approvals.map((r) => [r.status, r.by])).toEqual([[200, at('a')]]);
  const calls = answered.filter((r) => r.path === `/apps/${slug}/tools/call`);
  expect(calls.map((r) => [r.status, r.by])).toEqual([[428, at('b')], [200, at('b')]]);

  // The ticket `b` spent is refused by every instance, and by `b` again.
  const ticketed = new URL(frameRequests[0].url());
  const path = ticketed.pathname + ticketed.search;
  for (const name of ['a', 'b', 'c']) {
    const again = await frameFrom(instances[name].port, `localhost:${front}`, path);
    expect(again.status, name).toBe(409);
    expect(again.body).not.toContain('<script');
  }
});
