// A real strad for each worker: the compiled server binary in local mode, on a free
// loopback port, over a database of its own (strad creates it at start-up). The one-time
// sign-in links it prints are read from its stdout.
import { test as base, expect } from '@playwright/test';
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, listening } from '../support/ports.mjs';

export { freePort };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const targetDir = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
const binary = process.env.STRAD_BIN || path.join(targetDir, 'debug', 'strad');

class Strad {
  constructor(child, baseURL, database) {
    this.child = child;
    this.baseURL = baseURL;
    this.database = database;
    this.links = [];
    this.waiters = [];
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const match = line.match(/sign in \(one time\) at (\S+)/);
      if (!match) return;
      const waiter = this.waiters.shift();
      if (waiter) waiter(match[1]);
      else this.links.push(match[1]);
    });
  }

  /** The newest one-time sign-in link strad printed (each use prints the next). */
  async nextLink() {
    if (this.links.length) return this.links.pop();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no sign-in link printed')), 15_000);
      this.waiters.push((link) => { clearTimeout(timer); resolve(link); });
    });
  }

  async stop() {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    try {
      execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', `DROP DATABASE IF EXISTS ${this.database}`]);
    } catch { /* best effort */ }
  }
}

/** strad in local mode on a database of its own; `env` adds to (or, with `undefined`,
 * removes from) the settings below. The demo server is off unless a test turns it on.
 * Several instances of one console (behind a proxy) share `database` and `publicURL`, each
 * on a `port` of its own. */
export async function startStrad(env = {}, { port, database, publicURL } = {}) {
  port = port ?? await freePort();
  database = database ?? `strad_e2e_${process.pid}_${port}`;
  const baseURL = `http://127.0.0.1:${port}`;
  const settings = {
    ...process.env,
    STRAD_BIND: `127.0.0.1:${port}`,
    STRAD_PUBLIC_URL: publicURL ?? baseURL,
    // The dev site by default; STRAD_SITE_ROOT tests another (`dist/site` of `./x dist`).
    STRAD_SITE_ROOT: process.env.STRAD_SITE_ROOT || path.join(root, 'target', 'site'),
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    RUST_LOG: process.env.RUST_LOG || 'warn',
    STRAD_DEMO: 'off',
    ...env,
  };
  for (const [key, value] of Object.entries(settings)) if (value === undefined) delete settings[key];
  const child = spawn(binary, [], { cwd: root, env: settings, stdio: ['ignore', 'pipe', 'inherit'] });
  const strad = new Strad(child, publicURL ?? baseURL, database);
  // Ready when /healthz answers.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`strad exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${baseURL}/readyz`);
      if (response.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error('strad did not become ready in 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return strad;
}

/** Path of an npm bin in end2end/node_modules. */
export const bin = (name) => path.join(root, 'end2end', 'node_modules', '.bin', name);

/** An npm example server serving Streamable HTTP on a free loopback port; `args` follow its own. */
export async function startExample(name, args = []) {
  const port = await freePort();
  const child = spawn(bin(name), [`--log-file=/tmp/strad-e2e-${port}.log`, ...args], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' });
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (await listening(port)) break;
    if (Date.now() > deadline) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill('SIGTERM') };
}

/** strad's own MCP test server (support/test-mcp-server.mjs) on a free loopback port. */
async function startTestMcpServer() {
  const child = spawn(process.execPath, [path.join(root, 'end2end', 'support', 'test-mcp-server.mjs')], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the test MCP server did not start')), 15_000);
    createInterface({ input: child.stdout }).once('line', (first) => { clearTimeout(timer); resolve(first); });
  });
  const { url, port } = JSON.parse(line);
  return {
    url,
    control: (body) => fetch(`http://127.0.0.1:${port}/control`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    }),
    /** What the server saw: calls per tool, sessions. */
    state: () => fetch(`http://127.0.0.1:${port}/control`).then((r) => r.json()),
    stop: () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); }),
  };
}

export const test = base.extend({
  mcp: [async ({}, use) => {
    const server = await startTestMcpServer();
    await use(server);
    await server.stop();
  }, { scope: 'worker' }],
  strad: [async ({}, use) => {
    const strad = await startStrad();
    await use(strad);
    await strad.stop();
  }, { scope: 'worker' }],
  baseURL: async ({ strad }, use) => use(strad.baseURL),
  // With JavaScript, a console page is usable once the wasm has hydrated it; on a loaded
  // machine that can take seconds, and a click before it does nothing. So every navigation
  // to a console page waits for hydration (pages that are not the console's do not).
  page: async ({ page, baseURL }, use, testInfo) => {
    // The tests' own API calls (page.request) stand for the console's pages: they carry its
    // Origin, as a browser's fetch from a console page does, so the write gate lets them by.
    const request = page.request;
    for (const method of ['post', 'put', 'patch', 'delete', 'fetch']) {
      const call = request[method].bind(request);
      request[method] = (url, options = {}) =>
        call(url, { ...options, headers: { origin: baseURL, ...(options.headers || {}) } });
    }
    if (testInfo.project.use.javaScriptEnabled) {
      const goto = page.goto.bind(page);
      page.goto = async (url, options) => {
        const response = await goto(url, options);
        const consolePage = await page.locator('link#leptos[rel="stylesheet"]').count();
        if (consolePage > 0) {
          await page.locator('body[data-hydrated]').waitFor({ state: 'attached', timeout: 60_000 });
        }
        return response;
      };
    }
    await use(page);
  },
});

/** Holds the console's WebAssembly back, so a page stays server-rendered until `release()`;
 * `visit` navigates without waiting for hydration (the page fixture's `goto` does). */
export async function holdWasm(page) {
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  await page.route('**/pkg/*.wasm', async (route) => { await released; await route.continue(); });
  const visit = (url) => page.mainFrame().goto(url, { waitUntil: 'commit' });
  return { release, visit };
}

export { expect };
