// Writes come from the console only (SPEC §3): a page on another port of the same host is
// the same *site*, so SameSite=Lax sends it the admin's cookie with its form posts. The
// write gate refuses them by their Origin, and nothing changes.
import { test, expect } from './fixtures.mjs';
import { createServer } from 'node:http';

/** A web page of someone else's on another loopback port: three forms aimed at strad. */
async function elsewhere(stradURL) {
  const form = (id, path, fields) => `
    <form id="${id}" method="post" action="${stradURL}${path}">
      ${Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`).join('')}
      <button type="submit">${id}</button>
    </form>`;
  const html = `<!doctype html><title>elsewhere</title>
    ${form('roles', '/api/roles/set', { email: 'mallory@example.com', role: 'admin', granted: 'true' })}
    ${form('grant', '/api/entitlements/grant', { slug: 'evil', grantee: 'mallory@example.com' })}
    ${form('register', '/api/servers/register', { slug: 'evil', display_name: 'Evil', url: 'http://127.0.0.1:9/mcp', cap_tools: 'on' })}`;
  const server = createServer((_, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(html);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

test('forms posted from another loopback port with the admin\'s cookie change nothing', async ({ page, strad }) => {
  await page.goto(await strad.nextLink());
  // What a write would change; not when periodic discovery last ran (it runs meanwhile).
  const state = async () => ({
    servers: (await (await page.request.get('/api/servers/list')).json())
      .map(({ last_discovery: _, ...server }) => server),
    grants: await (await page.request.get('/api/entitlements/list')).json(),
    people: await (await page.request.get('/api/people')).json(),
  });
  const before = await state();
  const other = await elsewhere(strad.baseURL);
  try {
    for (const [id, path] of [['roles', '/api/roles/set'], ['grant', '/api/entitlements/grant'], ['register', '/api/servers/register']]) {
      await page.goto(other.url);
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${strad.baseURL}${path}`),
        page.getByRole('button', { name: id }).click(),
      ]);
      // The browser sent the cookie (same site) and its own Origin: refused by the Origin.
      expect((await response.request().allHeaders())['origin']).toBe(new URL(other.url).origin);
      expect(response.status()).toBe(403);
    }
  } finally {
    other.close();
  }
  expect(await state()).toEqual(before);
  // Still signed in, still the only admin.
  await page.goto('/');
  await expect(page.getByTestId('home-email')).toHaveText('admin@localhost');
});
