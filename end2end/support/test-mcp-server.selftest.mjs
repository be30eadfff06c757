// Standalone self-test for test-mcp-server.mjs, driven by the official SDK
// client (`Client` + `StreamableHTTPClientTransport`); no browser.
//
//   node end2end/support/test-mcp-server.selftest.mjs
//
// Exits 0 and prints a short summary on success; exits 1 on the first failure.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const SERVER_SCRIPT = fileURLToPath(new URL('./test-mcp-server.mjs', import.meta.url));
const APP_MIME = 'text/html;profile=mcp-app';
const WIDGET = 'ui://test/widget.html';

let passed = 0;
const children = new Set();
async function step(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    console.error(`FAIL ${name}\n`, e);
    for (const c of children) c.kill('SIGKILL');
    process.exit(1);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

/** Starts the server; resolves with {child, url, port, base, stdoutLines, exited}. */
async function startServer(env = {}) {
  const child = spawn(process.execPath, [SERVER_SCRIPT], {
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
    if (process.env.VERBOSE) process.stderr.write(d);
  });
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const stdoutLines = [];
  const lines = createInterface({ input: child.stdout });
  const first = new Promise((resolve, reject) => {
    lines.on('line', (line) => {
      stdoutLines.push(line);
      if (stdoutLines.length === 1) resolve(line);
    });
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before it was ready:\n${stderr}`)));
  });
  const line = await withTimeout(first, 15_000, 'ready line');
  const m = /^\{"url":"http:\/\/127\.0\.0\.1:(\d+)\/mcp","port":(\d+)\}$/.exec(line);
  assert.ok(m, `unexpected ready line: ${line}`);
  assert.equal(m[1], m[2]);
  const port = Number(m[2]);
  assert.ok(port > 0);
  return {
    child,
    port,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    base: `http://127.0.0.1:${port}`,
    stdoutLines,
    exited,
    stderr: () => stderr,
  };
}

async function connect(srv, { timeout } = {}) {
  const client = new Client({ name: 'selftest', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(srv.url);
  await client.connect(transport, timeout ? { timeout } : undefined);
  return { client, transport };
}

async function control(srv, body, expectStatus = 204) {
  const res = await fetch(`${srv.base}/control`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, expectStatus, `POST /control ${JSON.stringify(body).slice(0, 100)} -> ${res.status} ${text}`);
  return text;
}

async function controlState(srv) {
  const res = await fetch(`${srv.base}/control`);
  assert.equal(res.status, 200);
  return res.json();
}

async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Resolves with the next notification of the given schema. */
function nextNotification(client, schema) {
  return new Promise((resolve) => {
    client.setNotificationHandler(schema, (n) => {
      client.removeNotificationHandler(schema.shape.method.value);
      resolve(n);
    });
  });
}

async function rawPost(srv, body, headers = {}) {
  return fetch(srv.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

// ---------------------------------------------------------------------------

const srv = await startServer();
let client;
let transport;

await step('connects and initializes with a session id', async () => {
  ({ client, transport } = await connect(srv));
  assert.match(transport.sessionId ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(client.getServerCapabilities(), {
    tools: { listChanged: true },
    resources: { listChanged: true },
    prompts: { listChanged: true },
  });
  assert.equal(client.getServerVersion()?.name, 'strad-test-mcp-server');
});

await step('tools/list has the four tools exactly as specified', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ['show-widget', 'app-only-refresh', 'write-note', 'bad-link']);
  const [show, appOnly, note, bad] = tools;
  assert.equal(show.description, 'Shows the widget');
  assert.deepEqual(show.inputSchema, { type: 'object', properties: { label: { type: 'string' } } });
  assert.deepEqual(show.annotations, { readOnlyHint: true });
  assert.deepEqual(show._meta, { ui: { resourceUri: WIDGET }, 'ui/resourceUri': WIDGET });
  assert.deepEqual(appOnly._meta, { ui: { visibility: ['app'] } });
  assert.equal(note.annotations, undefined);
  assert.equal(note._meta, undefined);
  assert.deepEqual(bad._meta, { ui: { resourceUri: 'https://example.com/not-ui.html' } });
});

await step('tools/call results', async () => {
  const r = await client.callTool({ name: 'show-widget', arguments: { label: 'hello' } });
  assert.deepEqual(r.content, [{ type: 'text', text: 'widget:hello' }]);
  assert.deepEqual(r.structuredContent, { label: 'hello' });
  assert.deepEqual((await client.callTool({ name: 'app-only-refresh', arguments: {} })).content, [
    { type: 'text', text: 'refreshed' },
  ]);
  assert.deepEqual((await client.callTool({ name: 'write-note', arguments: { text: 'x' } })).content, [
    { type: 'text', text: 'noted' },
  ]);
  await assert.rejects(client.callTool({ name: 'no-such-tool', arguments: {} }), /Unknown tool/);
});

await step('resources/list and resources/read', async () => {
  const { resources } = await client.listResources();
  assert.deepEqual(
    resources.map((r) => [r.uri, r.mimeType]),
    [
      [WIDGET, APP_MIME],
      ['ui://test/blob.html', APP_MIME],
      ['ui://test/wrong-mime.html', 'text/html'],
      ['file:///test/readme.txt', 'text/plain'],
    ],
  );
  assert.ok(resources.every((r) => r._meta === undefined), 'list entries carry no _meta');

  const { contents } = await client.readResource({ uri: WIDGET });
  assert.equal(contents.length, 1);
  const [w] = contents;
  assert.equal(w.uri, WIDGET);
  assert.equal(w.mimeType, APP_MIME);
  assert.match(w.text, /^<!doctype html>/i);
  assert.match(w.text, /<\/html>\s*$/);
  assert.equal(w.text.match(/<script\b[^>]*>/g)?.join(), '<script type="module">');
  assert.equal(w.text.match(/<style\b[^>]*>/g)?.length, 1);
  assert.deepEqual(w._meta, {
    ui: {
      csp: { resourceDomains: ['https://cdn.example.com', 'https://bad.example.com; script-src *'] },
      permissions: { clipboardWrite: {} },
    },
  });
  const state = await controlState(srv);
  assert.equal(state.html.sha256, sha256(w.text));

  const blob = (await client.readResource({ uri: 'ui://test/blob.html' })).contents[0];
  assert.equal(blob.mimeType, APP_MIME);
  assert.equal(blob.text, undefined);
  assert.match(Buffer.from(blob.blob, 'base64').toString('utf8'), /^<!doctype html>.*<\/html>$/i);

  const wrong = (await client.readResource({ uri: 'ui://test/wrong-mime.html' })).contents[0];
  assert.equal(wrong.mimeType, 'text/html');
  const readme = (await client.readResource({ uri: 'file:///test/readme.txt' })).contents[0];
  assert.equal(readme.mimeType, 'text/plain');

  await assert.rejects(client.readResource({ uri: 'ui://test/missing.html' }), (e) => e.code === -32002);
});

await step('the client opens the standalone GET SSE stream', async () => {
  await waitFor(
    async () => (await controlState(srv)).sessions.find((s) => s.id === transport.sessionId)?.sse,
    5_000,
    'sse stream of the session',
  );
});

await step('POST /control {html} -> resources/list_changed and the new text', async () => {
  const html = '<!doctype html><html><head><title>v2</title></head><body><p>version 2</p></body></html>';
  const notified = nextNotification(client, ResourceListChangedNotificationSchema);
  await control(srv, { html });
  await withTimeout(notified, 5_000, 'resources/list_changed');
  const text = (await client.readResource({ uri: WIDGET })).contents[0].text;
  assert.equal(text, html);
  assert.equal((await controlState(srv)).html.sha256, sha256(html));
});

await step('addTool / describe / removeTool -> tools/list_changed', async () => {
  let notified = nextNotification(client, ToolListChangedNotificationSchema);
  await control(srv, {
    addTool: {
      name: 'extra',
      description: 'An extra tool',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      _meta: { ui: { resourceUri: WIDGET } },
      annotations: { destructiveHint: true },
    },
  });
  await withTimeout(notified, 5_000, 'tools/list_changed after addTool');
  let tools = (await client.listTools()).tools;
  const extra = tools.find((t) => t.name === 'extra');
  assert.deepEqual(extra, {
    name: 'extra',
    description: 'An extra tool',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    _meta: { ui: { resourceUri: WIDGET } },
    annotations: { destructiveHint: true },
  });
  assert.deepEqual((await client.callTool({ name: 'extra', arguments: { n: 1 } })).content, [
    { type: 'text', text: 'extra:{"n":1}' },
  ]);

  notified = nextNotification(client, ToolListChangedNotificationSchema);
  await control(srv, { addTool: { name: 'canned', result: { content: [{ type: 'text', text: 'canned!' }], isError: true } } });
  await withTimeout(notified, 5_000, 'tools/list_changed after second addTool');
  const canned = await client.callTool({ name: 'canned', arguments: {} });
  assert.equal(canned.isError, true);
  assert.equal(canned.content[0].text, 'canned!');
  assert.deepEqual((await client.listTools()).tools.find((t) => t.name === 'canned').inputSchema, {
    type: 'object',
    properties: {},
  });

  notified = nextNotification(client, ToolListChangedNotificationSchema);
  await control(srv, { describe: { name: 'show-widget', description: 'Shows the widget, now better' } });
  await withTimeout(notified, 5_000, 'tools/list_changed after describe');
  tools = (await client.listTools()).tools;
  assert.equal(tools.find((t) => t.name === 'show-widget').description, 'Shows the widget, now better');

  notified = nextNotification(client, ToolListChangedNotificationSchema);
  await control(srv, { removeTool: 'extra' });
  await withTimeout(notified, 5_000, 'tools/list_changed after removeTool');
  tools = (await client.listTools()).tools;
  assert.ok(!tools.some((t) => t.name === 'extra'));
});

await step('control rejects bad bodies with 400', async () => {
  await control(srv, 'not json', 400);
  await control(srv, { bogus: 1 }, 400);
  await control(srv, { removeTool: 'nope' }, 400);
  await control(srv, { describe: { name: 'nope', description: 'x' } }, 400);
  await control(srv, { fault: { kind: 'explode', on: 'any' } }, 400);
  await control(srv, { html: 42 }, 400);
});

await step('reset restores the initial state', async () => {
  const both = Promise.all([
    nextNotification(client, ToolListChangedNotificationSchema),
    nextNotification(client, ResourceListChangedNotificationSchema),
  ]);
  await control(srv, { reset: true });
  await withTimeout(both, 5_000, 'both list_changed after reset');
  const state = await controlState(srv);
  assert.deepEqual(state.tools, ['show-widget', 'app-only-refresh', 'write-note', 'bad-link']);
  assert.equal(state.fault, null);
  const text = (await client.readResource({ uri: WIDGET })).contents[0].text;
  assert.match(text, /<script type="module">/);
});

await step('HTTP edges: no session, unknown session, wrong method', async () => {
  let res = await fetch(srv.url, { headers: { accept: 'text/event-stream' } });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, -32000);
  res = await fetch(srv.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' } });
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.code, -32001);
  res = await rawPost(srv, { jsonrpc: '2.0', id: 5, method: 'tools/list' });
  assert.equal(res.status, 400);
  res = await rawPost(srv, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, { 'mcp-session-id': 'nope' });
  assert.equal(res.status, 404);
  res = await fetch(srv.url, { method: 'PUT' });
  assert.equal(res.status, 405);
  res = await fetch(`${srv.base}/elsewhere`);
  assert.equal(res.status, 404);
  // A raw session: initialize, then DELETE ends it.
  res = await rawPost(srv, INIT);
  assert.equal(res.status, 200);
  const sid = res.headers.get('mcp-session-id');
  assert.ok(sid);
  await res.text();
  res = await fetch(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(res.status, 200);
  await waitFor(async () => !(await controlState(srv)).sessions.some((s) => s.id === sid), 2_000, 'session gone');
});

await step('fault garbage on tools/list -> client error; cleared -> fine', async () => {
  await control(srv, { fault: { kind: 'garbage', on: 'tools/list' } });
  const raw = await rawPost(srv, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'mcp-session-id': transport.sessionId });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('content-type'), 'application/json');
  const body = await raw.text();
  assert.throws(() => JSON.parse(body));
  await assert.rejects(withTimeout(client.listTools(undefined, { timeout: 3_000 }), 5_000, 'listTools'), (e) => {
    // The SDK's transport fails on response.json(); it must not be our own timeout.
    assert.doesNotMatch(String(e.message), /timed out/i);
    return true;
  });
  // Other methods are unaffected while the fault is on.
  assert.equal((await client.listResources()).resources.length, 4);
  await control(srv, { fault: null });
  assert.equal((await client.listTools()).tools.length, 4);
});

await step('fault garbage on initialize -> connect fails', async () => {
  await control(srv, { fault: { kind: 'garbage', on: 'initialize' } });
  await assert.rejects(withTimeout(connect(srv, { timeout: 3_000 }), 5_000, 'connect'));
  await control(srv, { fault: { kind: null } });
  const other = await connect(srv);
  assert.equal((await other.client.listTools()).tools.length, 4);
  await other.client.close();
});

await step('fault hang on tools/call -> client timeout; cleared -> fine', async () => {
  await control(srv, { fault: { kind: 'hang', on: 'tools/call' } });
  const t0 = Date.now();
  await assert.rejects(
    withTimeout(client.callTool({ name: 'write-note', arguments: {} }, undefined, { timeout: 500 }), 5_000, 'callTool'),
    (e) => e.code === -32001 && /timed out/i.test(e.message),
  );
  assert.ok(Date.now() - t0 < 3_000);
  assert.ok((await controlState(srv)).hanging >= 1, 'the server holds the request open');
  // Listing still works while calls hang.
  assert.equal((await client.listTools()).tools.length, 4);
  await control(srv, { fault: null });
  assert.equal((await client.callTool({ name: 'write-note', arguments: {} })).content[0].text, 'noted');
});

await step('fault hang on any -> even initialize hangs', async () => {
  await control(srv, { fault: { kind: 'hang', on: 'any' } });
  await assert.rejects(withTimeout(connect(srv, { timeout: 500 }), 5_000, 'connect'), /timed out/i);
  await control(srv, { fault: null });
  assert.equal((await client.listResources()).resources.length, 4);
});

await step('fault huge on resources/read -> > 8 MiB valid HTML; cleared -> fine', async () => {
  await control(srv, { fault: { kind: 'huge', on: 'resources/read' } });
  const { contents } = await client.readResource({ uri: WIDGET });
  assert.equal(contents[0].uri, WIDGET);
  assert.equal(contents[0].mimeType, APP_MIME);
  const bytes = Buffer.byteLength(contents[0].text);
  assert.ok(bytes > 8 * 1024 * 1024, `got ${bytes} bytes`);
  assert.equal(bytes, 9 * 1024 * 1024);
  assert.match(contents[0].text, /^<!doctype html>.*<\/html>$/is);
  // huge on any: only resources/read is affected.
  await control(srv, { fault: { kind: 'huge', on: 'any' } });
  assert.equal((await client.listTools()).tools.length, 4);
  await control(srv, { fault: null });
  const normal = (await client.readResource({ uri: WIDGET })).contents[0].text;
  assert.ok(Buffer.byteLength(normal) < 64 * 1024);
});

await step('fault die on resources/list -> the child exits with 1', async () => {
  await control(srv, { fault: { kind: 'die', on: 'resources/list' } });
  await assert.rejects(withTimeout(client.listResources(undefined, { timeout: 3_000 }), 5_000, 'listResources'));
  const { code } = await withTimeout(srv.exited, 5_000, 'child exit');
  assert.equal(code, 1);
  assert.deepEqual(srv.stdoutLines.length, 1, `stdout had extra lines: ${srv.stdoutLines.slice(1).join('\n')}`);
  await client.close().catch(() => {});
});

await step('JSON_RESPONSE=1 mode and a clean SIGTERM with an open SSE stream', async () => {
  const s2 = await startServer({ JSON_RESPONSE: '1' });
  const c2 = await connect(s2);
  const res = await rawPost(s2, INIT);
  assert.equal(res.headers.get('content-type'), 'application/json');
  await res.json();
  assert.equal((await c2.client.listTools()).tools.length, 4);
  await waitFor(
    async () => (await controlState(s2)).sessions.find((s) => s.id === c2.transport.sessionId)?.sse,
    5_000,
    'sse stream',
  );
  const notified = nextNotification(c2.client, ToolListChangedNotificationSchema);
  await control(s2, { removeTool: 'bad-link' });
  await withTimeout(notified, 5_000, 'tools/list_changed in JSON mode');
  await control(s2, { fault: { kind: 'hang', on: 'tools/call' } });
  c2.client.callTool({ name: 'write-note', arguments: {} }, undefined, { timeout: 10_000 }).catch(() => {});
  await waitFor(async () => (await controlState(s2)).hanging === 1, 2_000, 'hanging call');
  const t0 = Date.now();
  s2.child.kill('SIGTERM');
  const { code, signal } = await withTimeout(s2.exited, 5_000, 'exit after SIGTERM');
  assert.equal(code, 0, `exit ${code} ${signal}\n${s2.stderr()}`);
  assert.ok(Date.now() - t0 < 2_500);
  assert.equal(s2.stdoutLines.length, 1);
  await c2.client.close().catch(() => {});
});

console.log(`\n${passed} checks passed`);
process.exit(0);
