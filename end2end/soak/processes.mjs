// The processes of the soak: strad instances, the npm example servers, and PostgreSQL, each
// startable, killable (SIGKILL) and restartable on the same port.
import { spawn, execFile, execFileSync } from 'node:child_process';
import { listening } from '../support/ports.mjs';
import { createInterface } from 'node:readline';
import { openSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `ready` every 50 ms until it holds; throws after `ms`. */
async function until(what, ready, ms, child) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    if (await ready()) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready in ${ms / 1000} s`);
    await sleep(50);
  }
}

async function killed(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function stopped(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Resident memory of a process, in MiB (VmRSS). */
export function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(status.match(/^VmRSS:\s+(\d+) kB/m)[1]);
  return kb / 1024;
}

/**
 * One strad instance: `binary` with `env`, on `port`; its stderr appended to `log`. The
 * one-time sign-in links it prints are kept (`nextLink`).
 */
export class StradInstance {
  constructor({ name, binary, port, env, log }) {
    Object.assign(this, { name, binary, port, env, log });
    this.links = [];
  }

  async start() {
    const err = openSync(this.log, 'a');
    this.child = spawn(this.binary, [], { env: this.env, stdio: ['ignore', 'pipe', err] });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const match = line.match(/sign in \(one time\) at (\S+)/);
      if (match) this.links.push(match[1]);
    });
    await until(`strad ${this.name}`, async () => {
      try {
        const answer = await fetch(`http://127.0.0.1:${this.port}/readyz`);
        return answer.ok;
      } catch { return false; }
    }, 60_000, this.child);
    return this;
  }

  get pid() { return this.child.pid; }

  kill() { return killed(this.child); }

  stop() { return stopped(this.child); }

  /** The link this instance printed last (it prints one at start and after each use). */
  lastLink() {
    if (!this.links.length) throw new Error(`strad ${this.name} printed no sign-in link`);
    return this.links.at(-1);
  }
}

/** An npm example server in Streamable HTTP mode (`PORT=<port> <bin>`), on `port`. */
export class ExampleServer {
  constructor(bin, port, slug) {
    Object.assign(this, { bin, port, slug });
    this.url = `http://127.0.0.1:${port}/mcp`;
  }

  async start() {
    this.child = spawn(this.bin, [], { env: { ...process.env, PORT: String(this.port) }, stdio: 'ignore' });
    await until(this.slug, () => listening(this.port), 20_000, this.child);
    return this;
  }

  kill() { return killed(this.child); }

  stop() { return stopped(this.child); }
}

/** An npm bin of end2end/ (found on PATH, as `./x` sets it, else in node_modules/.bin). */
export function npmBin(root, name) {
  const local = path.join(root, 'end2end', 'node_modules', '.bin', name);
  for (const dir of (process.env.PATH || '').split(':')) {
    try {
      if (readdirSync(dir).includes(name)) return path.join(dir, name);
    } catch { /* not a directory */ }
  }
  return local;
}

/** The newest PostgreSQL cluster version under /etc/postgresql (as `./x` starts it). */
function clusterVersion() {
  return readdirSync('/etc/postgresql').sort((a, b) => Number(a) - Number(b)).at(-1);
}

/** Whether PostgreSQL accepts connections (asked without blocking the load's event loop). */
export function postgresReady() {
  return new Promise((resolve) => {
    execFile('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432'], (error) => resolve(!error));
  });
}

/** Restarts the PostgreSQL cluster and waits until it accepts connections again. */
export async function restartPostgres() {
  const version = clusterVersion();
  await new Promise((resolve, reject) => {
    const child = spawn('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], { stdio: 'ignore' });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctlcluster restart exited with ${code}`))));
    child.on('error', reject);
  });
  await until('PostgreSQL', postgresReady, 30_000);
}

/** psql against `database` as postgres; the unaligned, tuples-only output. The audit check
 * reads a line per tool call (about 80 bytes; tens of thousands on a release build), far
 * past execFileSync's default 1 MiB of output. */
export function psql(database, sql) {
  return execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', database, '-XAtqc', sql],
    { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 });
}
