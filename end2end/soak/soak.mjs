// `./x soak [seconds]`: two strad instances on one database behind nginx, real example MCP
// servers from npm, concurrent load of every kind (app tool calls, frame loads, playground
// calls, `/mcp` sessions) for `seconds` (180 by default), and three faults in turn: an
// upstream server killed and restarted, PostgreSQL restarted, a strad instance killed and
// restarted. At the end: the tables of docs/benchmarks.md ("Load and faults"); it exits 1
// when an acknowledged tool call has no audit row (or more than one), or the chain is broken.
// Loopback only. STRAD_BIN and STRAD_SITE_ROOT name the build (`./x soak` chooses them);
// SOAK_WORKERS the concurrency (24); SOAK_FAULTS a subset of `upstream,postgres,strad`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNginx, PROXY } from '../support/nginx.mjs';
import { request, form } from './http.mjs';
import { Recorder, worker } from './load.mjs';
import { recoveries, auditCheck, render } from './report.mjs';
import { ExampleServer, StradInstance, npmBin, psql, restartPostgres, rssMiB, sleep } from './processes.mjs';
import { freePort } from '../support/ports.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const seconds = Number(process.argv[2] ?? 180);
if (!(seconds >= 30)) throw new Error('the load runs for at least 30 seconds (the faults need room)');
const workers = Number(process.env.SOAK_WORKERS ?? 24);
const binary = process.env.STRAD_BIN ?? path.join(root, 'target', 'debug', 'strad');
const siteRoot = process.env.STRAD_SITE_ROOT ?? path.join(root, 'target', 'site');
/** How long a killed process stays down before it is started again. */
const DOWN_MS = 3_000;
/** A fault's recovery must not take longer (SPEC §13: several instances, one database). */
const RECOVERY_TARGET_MS = 5_000;

const say = (line) => console.error(`soak: ${line}`);

/** The example servers, their slugs and the read-only tool each is called with. */
const EXAMPLES = [
  { slug: 'clock', bin: 'mcp-server-basic-vanillajs', tool: 'get-time' },
  { slug: 'budget', bin: 'mcp-budget-allocator-server', tool: 'get-budget-data' },
];
/** The workers' roles, repeated: per eight, 2 app callers, 3 `/mcp` clients, 2 frame loaders
 * and 1 playground caller. */
const ROLES = ['app', 'mcp', 'frame', 'playground', 'app', 'mcp', 'frame', 'mcp'];

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'strad-soak-'));
  const database = `strad_soak_${process.pid}`;
  const [front, portA, portB] = await Promise.all([freePort(), freePort(), freePort()]);
  const publicURL = `http://127.0.0.1:${front}`;
  const cleanup = [];
  let keepDatabase = false;
  try {
    psql('postgres', `DROP DATABASE IF EXISTS ${database}`);
    const examples = [];
    for (const example of EXAMPLES) {
      const server = await new ExampleServer(npmBin(root, example.bin), await freePort(), example.slug).start();
      cleanup.push(() => server.stop());
      examples.push(server);
    }
    const instances = [];
    for (const [name, port] of [['a', portA], ['b', portB]]) {
      const env = stradEnv({ name, port, database, publicURL, front });
      // One after another: the first creates and migrates the database.
      const instance = await new StradInstance({ name, binary, port, env, log: path.join(work, `strad-${name}.log`) }).start();
      cleanup.push(() => instance.stop());
      instances.push(instance);
    }
    const nginx = await startNginx(front, nginxConfig(front, portA, portB));
    cleanup.push(() => nginx.stop());
    say(`strad ${binary} (site ${siteRoot}), instances a :${portA} and b :${portB}, nginx :${front}, database ${database}, logs in ${work}`);

    const person = await setUp(instances[0], publicURL, front, examples);
    const probe = await firstOfEach(person);
    const memory = instances.map((instance) => ({ name: instance.name, before: rssMiB(instance.pid) }));

    const instanceOf = (address) => ({ [`127.0.0.1:${portA}`]: 'a', [`127.0.0.1:${portB}`]: 'b' })[address] ?? address;
    const recorder = new Recorder('load', instanceOf);
    // The first calls are acknowledged calls too: their rows are checked with the load's.
    for (const [kind, ids] of Object.entries(probe.acknowledged)) recorder.acknowledged[kind].push(...ids);
    const loadEnd = seconds * 1000;
    const running = () => recorder.now() < loadEnd;
    say(`${workers} workers for ${seconds} s; faults at ${[0.2, 0.45, 0.7].map((f) => Math.round(f * seconds)).join(', ')} s`);
    const load = Array.from({ length: workers }, (_, i) => worker(ROLES[i % ROLES.length], i, person, recorder, running));
    const faults = await injectFaults(recorder, examples[0], instances[1], loadEnd);
    await Promise.all(load);

    for (const [i, instance] of instances.entries()) {
      const restarted = instance.restarted ? ' (restarted during the load)' : '';
      memory[i].after = `${rssMiB(instance.pid).toFixed(0)} MiB${restarted}`;
    }
    const audit = auditCheck(database, recorder);
    const verify = spawnSync(binary, ['audit', 'verify'], {
      env: { ...process.env, DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}` }, encoding: 'utf8',
    });
    const chain = { code: verify.status, output: `${verify.stdout}${verify.stderr}` };
    const measured = recoveries(recorder.records, faults, loadEnd);
    console.log(render({ recorder, faults: measured, audit, chain, memory, instances: ['a', 'b'], seconds }));
    console.log(`\nMachine: ${cpus().length} cores (${cpus()[0].model.trim()}); strad ${binary}; ${workers} workers.`);

    const problems = [];
    for (const a of audit) {
      if (a.missing) problems.push(`${a.missing} acknowledged ${a.kind} calls have no audit row`);
      if (a.duplicated) problems.push(`${a.duplicated} acknowledged ${a.kind} calls have more than one audit row`);
    }
    if (chain.code !== 0) problems.push('the audit chain is broken');
    for (const f of measured) {
      if (f.recovery === null || f.recovery > RECOVERY_TARGET_MS) problems.push(`${f.name}: recovery ${f.recovery === null ? 'never' : `${f.recovery} ms`} (target ≤ ${RECOVERY_TARGET_MS} ms)`);
    }
    const lost = audit.some((a) => a.missing || a.duplicated) || chain.code !== 0;
    keepDatabase = lost;
    for (const problem of problems) say(`PROBLEM: ${problem}`);
    if (lost) say(`database ${database} kept for inspection`);
    process.exitCode = lost ? 1 : 0;
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => {});
    if (!keepDatabase) psql('postgres', `DROP DATABASE IF EXISTS ${database}`);
  }
}

/** The environment of one instance: local mode, the soak's database and console address,
 * the per-person limits raised so that 429s are not what the load measures. */
function stradEnv({ name, port, database, publicURL, front }) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('STRAD_') || key === 'DATABASE_URL') delete env[key];
  return {
    ...env,
    STRAD_INSTANCE: name,
    STRAD_BIND: `127.0.0.1:${port}`,
    STRAD_PUBLIC_URL: publicURL,
    STRAD_SANDBOX_ORIGIN: `http://localhost:${front}`,
    STRAD_SITE_ROOT: siteRoot,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    STRAD_DEMO: 'off',
    STRAD_TOOL_CALLS_PER_SECOND: '100000',
    STRAD_MCP_RATE_PER_SECOND: '100000',
    STRAD_MCP_SESSIONS_PER_MINUTE: '100000',
    RUST_LOG: process.env.RUST_LOG || 'warn',
  };
}

/** nginx in front: the console round-robin over both instances (a killed one's requests go
 * to the other), the sandbox origin likewise, `/mcp` by the instance named in the session
 * id (the other as backup, which answers 404 so the client starts anew). */
function nginxConfig(front, portA, portB) {
  const server = (port) => `server 127.0.0.1:${port} max_fails=1 fail_timeout=2s`;
  return `
  upstream strad { ${server(portA)}; ${server(portB)}; keepalive 32; }
  upstream mcp_a { ${server(portA)}; ${server(portB)} backup; keepalive 16; }
  upstream mcp_b { ${server(portB)}; ${server(portA)} backup; keepalive 16; }
  map $http_mcp_session_id $mcp_upstream {
    default strad;
    ~^a\\. mcp_a;
    ~^b\\. mcp_b;
  }
  add_header X-Strad-Upstream $upstream_addr always;
  proxy_next_upstream error timeout;
  proxy_connect_timeout 2s;
  server {
    listen 127.0.0.1:${front};
    server_name 127.0.0.1;
    ${PROXY}
    location /mcp { proxy_pass http://$mcp_upstream; }
    location / { proxy_pass http://strad; }
  }
  server {
    listen 127.0.0.1:${front};
    server_name localhost;
    ${PROXY}
    location / { proxy_pass http://strad; }
  }`;
}

/** Signs the local admin in (on instance `a`, which printed the link), registers the
 * example servers, marks their tools read-only, grants them, and mints a login token. */
async function setUp(first, publicURL, front, examples) {
  const link = new URL(first.lastLink());
  const signIn = await request('GET', `${publicURL}${link.pathname}${link.search}`, { connectTo: { host: '127.0.0.1', port: first.port } });
  const cookie = (signIn.headers['set-cookie'] || []).map((c) => c.split(';')[0]).join('; ');
  if (signIn.status !== 303 && signIn.status !== 302 || !cookie) throw new Error(`local sign-in answered ${signIn.status}`);
  const connectTo = { host: '127.0.0.1', port: front };
  const api = async (name, fields) => {
    const answer = await request('POST', `${publicURL}/api/${name}`, {
      connectTo, body: form(fields),
      headers: { origin: publicURL, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    });
    if (answer.status !== 200) throw new Error(`${name} ${JSON.stringify(fields)} answered ${answer.status}: ${answer.body}`);
    return answer.body ? JSON.parse(answer.body) : null;
  };
  const tools = {};
  for (const [i, server] of examples.entries()) {
    const { slug, tool } = EXAMPLES[i];
    await api('servers/register', { slug, display_name: slug, url: server.url, cap_tools: 'on', cap_apps: 'on' });
    await api('policy/mark', { slug, tool, read_only: 'true' });
    await api('entitlements/grant', { slug, grantee: 'admin@localhost' });
    tools[slug] = tool;
  }
  const { secret } = await api('tokens/mint', { name: 'soak', days: '1' });
  return { publicURL, port: front, cookie, token: secret, slugs: Object.keys(tools), tools };
}

/** One request of every kind must succeed before the load starts: a set-up mistake shows
 * here, with the answer, rather than as a table of failures. */
async function firstOfEach(person) {
  const probe = new Recorder('first', () => undefined);
  const needs = { app: ['app call'], playground: ['playground call'], frame: ['app open', 'frame load'], mcp: ['mcp initialize', 'mcp tools/list', 'mcp tools/call'] };
  await Promise.all(Object.entries(needs).map(([role, kinds], i) => worker(role, i, person, probe, () => {
    const mine = probe.records.filter((r) => kinds.includes(r.kind));
    return mine.length < kinds.length && mine.every((r) => r.outcome === 'ok') && probe.now() < 30_000;
  })));
  const bad = probe.records.filter((r) => r.outcome !== 'ok');
  if (bad.length || probe.records.length < 7) throw new Error(`the first requests failed: ${JSON.stringify(probe.records)}`);
  return probe;
}

/** The three faults in turn, each at its share of the load's time; their start and end
 * (the restart done), in the recorder's clock. */
async function injectFaults(recorder, upstream, instance, loadEnd) {
  const faults = [];
  const at = async (share) => {
    const wait = share * loadEnd - recorder.now();
    if (wait > 0) await sleep(wait);
  };
  const fault = async (name, run) => {
    const start = recorder.now();
    say(`${name} …`);
    await run();
    const end = recorder.now();
    say(`${name}: back after ${((end - start) / 1000).toFixed(1)} s`);
    faults.push({ name, start, end });
  };
  const chosen = (process.env.SOAK_FAULTS ?? 'upstream,postgres,strad').split(',');
  await at(0.2);
  if (chosen.includes('upstream')) await fault(`upstream \`${upstream.slug}\` killed, restarted after ${DOWN_MS / 1000} s`, async () => {
    await upstream.kill();
    await sleep(DOWN_MS);
    await upstream.start();
  });
  await at(0.45);
  if (chosen.includes('postgres')) await fault('PostgreSQL restarted', restartPostgres);
  await at(0.7);
  if (chosen.includes('strad')) await fault(`strad \`${instance.name}\` killed, restarted after ${DOWN_MS / 1000} s`, async () => {
    await instance.kill();
    await sleep(DOWN_MS);
    await instance.start();
    instance.restarted = true;
  });
  return faults;
}

main().then(() => process.exit(process.exitCode ?? 0), (error) => {
  console.error(error);
  process.exit(2);
});
