// /mcp with the official clients (the TypeScript SDK in both its versions, the MCP
// Inspector's CLI, the Python SDK), against two real example servers at once: list, call,
// read the app resource and get the bytes strad pins.
import { test, expect, startExample, bin } from './fixtures.mjs';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as clientV2 from '@modelcontextprotocol/client';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Two example servers at once, registered as `<prefix>clock` and `<prefix>budget` and granted
 * to the local admin, and a login token of theirs for `check(api, secret)`.
 */
async function withTwoServers(page, strad, prefix, check) {
  const clock = await startExample('mcp-server-basic-vanillajs');
  const budget = await startExample('mcp-budget-allocator-server');
  try {
    await page.goto(await strad.nextLink());
    const api = (name, form) => page.request.post(`/api/${name}`, { form });
    for (const [slug, server] of [[`${prefix}clock`, clock], [`${prefix}budget`, budget]]) {
      expect((await api('servers/register', { slug, display_name: slug, url: server.url, cap_tools: 'on', cap_apps: 'on' })).status()).toBe(200);
      expect((await api('entitlements/grant', { slug, grantee: 'admin@localhost' })).status()).toBe(200);
    }
    const minted = await (await api('tokens/mint', { name: `${prefix}client`, days: '1' })).json();
    await check(api, minted.secret);
  } finally {
    clock.stop();
    budget.stop();
  }
}

async function connectClient(url, token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'strad-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

test('the official TypeScript client lists, calls and reads through /mcp, across two servers', async ({ page, strad }) => {
  test.skip(test.info().project.name !== 'js', 'no browser involved: run once');
  await withTwoServers(page, strad, 'ts', async (api, secret) => {
    const client = await connectClient(`${strad.baseURL}/mcp?servers=tsclock,tsbudget`, secret);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(['tsbudget__get-budget-data', 'tsclock__get-time']);
    const time = await client.callTool({ name: 'tsclock__get-time', arguments: {} });
    expect(time.isError ?? false).toBe(false);
    const budgetTool = tools.find((t) => t.name === 'tsbudget__get-budget-data');
    const uri = budgetTool._meta.ui.resourceUri;
    expect(uri.startsWith('ui://tsbudget/')).toBe(true);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain(uri);
    const read = await client.readResource({ uri });
    const text = read.contents[0].text;
    const view = await (await api('apps/open', { slug: 'tsbudget' })).json();
    expect(createHash('sha256').update(text).digest('hex')).toBe(view.digest);
    // A forged name pointing at a server outside the token's scope.
    await expect(client.callTool({ name: 'other__get-time', arguments: {} })).rejects.toThrow();
    await client.close();
    // No token: the client cannot even connect.
    await expect(connectClient(`${strad.baseURL}/mcp`, null)).rejects.toThrow();
  });
});

test('the TypeScript client of the SDK\'s second version, negotiating the revision, falls back to a session and calls through /mcp', async ({ page, strad }) => {
  test.skip(test.info().project.name !== 'js', 'no browser involved: run once');
  await withTwoServers(page, strad, 'v2', async (api, secret) => {
    const url = new URL(`${strad.baseURL}/mcp?servers=v2clock,v2budget`);
    const transport = new clientV2.StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${secret}` } },
    });
    // `auto` asks `server/discover` of the stateless revision first.
    const client = new clientV2.Client(
      { name: 'strad-e2e', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(transport);
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(transport.sessionId).toBeTruthy();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['v2budget__get-budget-data', 'v2clock__get-time']);
    const time = await client.callTool({ name: 'v2clock__get-time', arguments: {} });
    expect(time.isError ?? false).toBe(false);
    const uri = tools.find((t) => t.name === 'v2budget__get-budget-data')._meta.ui.resourceUri;
    const read = await client.readResource({ uri });
    const view = await (await api('apps/open', { slug: 'v2budget' })).json();
    expect(createHash('sha256').update(read.contents[0].text).digest('hex')).toBe(view.digest);
    await expect(client.callTool({ name: 'other__get-time', arguments: {} })).rejects.toThrow();
    const session = transport.sessionId;
    await transport.terminateSession();
    await client.close();
    expect(await sessionStatus(page, url, secret, session)).toBe(404);
  });
});

/** The status of a request naming `session` of `url`: 404 once strad has forgotten it. */
async function sessionStatus(page, url, secret, session) {
  const response = await page.request.post(String(url), {
    headers: {
      Authorization: `Bearer ${secret}`,
      'Mcp-Session-Id': session,
      Accept: 'application/json, text/event-stream',
    },
    data: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  return response.status();
}

const run = promisify(execFile);

/** The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`) against /mcp. */
async function inspector(url, token, ...args) {
  // Its own home, so nothing it keeps lands in the real one.
  const home = mkdtempSync(path.join(tmpdir(), 'strad-inspector-'));
  const { stdout } = await run(bin('mcp-inspector'), [
    '--cli', url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args,
  ], { timeout: 60_000, env: { ...process.env, HOME: home } });
  return JSON.parse(stdout);
}

test('the MCP Inspector CLI lists, calls and reads through /mcp', async ({ page, strad }) => {
  test.skip(test.info().project.name !== 'js', 'no browser involved: run once');
  await withTwoServers(page, strad, 'i', async (api, secret) => {
    const url = `${strad.baseURL}/mcp?servers=iclock,ibudget`;
    const listed = await inspector(url, secret, '--method', 'tools/list');
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['ibudget__get-budget-data', 'iclock__get-time']);
    const called = await inspector(url, secret, '--method', 'tools/call', '--tool-name', 'iclock__get-time');
    expect(called.isError ?? false).toBe(false);
    const uri = listed.tools.find((t) => t.name === 'ibudget__get-budget-data')._meta.ui.resourceUri;
    const read = await inspector(url, secret, '--method', 'resources/read', '--uri', uri);
    const view = await (await api('apps/open', { slug: 'ibudget' })).json();
    expect(createHash('sha256').update(read.contents[0].text).digest('hex')).toBe(view.digest);
  });
});

/**
 * The official Python SDK (PyPI `mcp`, pinned in end2end/support/requirements.txt) through
 * `end2end/support/python_client.py`, in the virtual environment `./x test` makes
 * (`STRAD_PYTHON`).
 */
async function pythonClient(...args) {
  const python = process.env.STRAD_PYTHON || path.join(process.env.HOME, '.cache', 'strad', 'python', 'bin', 'python');
  const script = fileURLToPath(new URL('../support/python_client.py', import.meta.url));
  const { stdout } = await run(python, [script, ...args], { timeout: 60_000 });
  return JSON.parse(stdout);
}

test('the official Python client connects, lists, calls, reads and ends its session through /mcp', async ({ page, strad }) => {
  test.skip(test.info().project.name !== 'js', 'no browser involved: run once');
  await withTwoServers(page, strad, 'py', async (api, secret) => {
    const url = `${strad.baseURL}/mcp?servers=pyclock,pybudget`;
    const out = await pythonClient(url, secret, 'pyclock__get-time', 'other__get-time');
    // Whatever its first probe of the stateless revision heard, it ends in one session of
    // the last session revision.
    expect(out.protocol_version).toBe('2025-11-25');
    expect(out.session_ids).toHaveLength(1);
    expect(out.tools).toEqual(['pybudget__get-budget-data', 'pyclock__get-time']);
    expect(out.called.is_error).toBe(false);
    expect(out.called.text.join('')).toMatch(/\d{4}-\d{2}-\d{2}T/);
    const view = await (await api('apps/open', { slug: 'pybudget' })).json();
    const uri = Object.keys(out.app_digests).find((u) => u.startsWith('ui://pybudget/'));
    expect(out.resources).toContain(uri);
    expect(out.app_digests[uri]).toBe(view.digest);
    // A name outside the token's servers is refused.
    expect(out.refused.raised || out.refused.is_error).toBe(true);
    // The SDK ended its session on close, and strad forgot it: naming it now is a 404.
    expect(out.statuses).toContainEqual(['DELETE', 200]);
    expect(await sessionStatus(page, url, secret, out.session_ids[0])).toBe(404);
  });
});
