// The load: closed-loop workers, each making one kind of request as a person's browser or
// MCP client makes it, until told to stop. Every request is recorded with its outcome (see
// `Recorder`); every tool call carries a unique argument (`{"n": "<id>"}`), so the audit row
// of each acknowledged call can be found by its arguments' digest afterwards.
import { agent, request, form, rpcMessages, NetworkError } from './http.mjs';

/** The kinds of request, in the order the report lists them. */
export const KINDS = ['app call', 'playground call', 'app open', 'frame load', 'mcp initialize', 'mcp tools/list', 'mcp tools/call'];

/** The audit kind of each kind of tool call. */
export const AUDITED = { 'app call': 'app_tool_call', 'playground call': 'playground_tool_call', 'mcp tools/call': 'mcp_tool_call' };

/** Every request's outcome, with the time it ended (ms since the load started). */
export class Recorder {
  /** `tag` starts the ids of this recorder's tool calls, so no two recorders share one. */
  constructor(tag, instanceOf) {
    this.tag = tag;
    this.instanceOf = instanceOf;
    this.started = Date.now();
    this.records = [];
    /** Ids of acknowledged tool calls, per audit kind. */
    this.acknowledged = Object.fromEntries(Object.values(AUDITED).map((k) => [k, []]));
  }

  now() { return Date.now() - this.started; }

  /**
   * `outcome`: 'ok', 'rate' (429), 'gone' (404 of an `/mcp` session that no instance
   * holds: the client starts a new one), or a failure: 'status <n>', 'network <code>',
   * 'body <what>'.
   */
  add(kind, outcome, answer) {
    const by = answer?.headers?.['x-strad-upstream'];
    const last = by ? String(by).split(',').at(-1).trim() : undefined;
    this.records.push({ kind, t: this.now(), outcome, instance: last ? this.instanceOf(last) : undefined });
  }
}

/** What an answer to a tool call says: 'ok' or why not. */
function toolOutcome(answer) {
  if (answer.status === 429) return 'rate';
  if (answer.status !== 200) return `status ${answer.status}`;
  try {
    // The app route answers `{result, actions}`, the playground the result itself.
    const body = JSON.parse(answer.body);
    const result = body.result ?? body;
    if (result.isError) return 'body isError';
    return Array.isArray(result.content) ? 'ok' : 'body without content';
  } catch {
    return 'body not JSON';
  }
}

/** Runs `step` until `running()` is false; a NetworkError becomes a recorded outcome. */
async function loop(running, step) {
  while (running()) await step();
}

async function attempt(recorder, kind, send, judge) {
  let answer;
  try {
    answer = await send();
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    recorder.add(kind, `network ${error.message}`);
    return undefined;
  }
  const outcome = judge(answer);
  recorder.add(kind, outcome, answer);
  return outcome === 'ok' ? answer : undefined;
}

/**
 * One worker of `role` ('app', 'playground', 'frame' or 'mcp') for person `session` at the
 * console `front` (`{ publicURL, port, cookie, token, slugs, tools }`).
 */
export async function worker(role, index, front, recorder, running) {
  const via = agent();
  const connectTo = { host: '127.0.0.1', port: front.port };
  const fromConsole = { origin: front.publicURL, cookie: front.cookie };
  let seq = 0;
  const pick = () => front.slugs[(index + seq) % front.slugs.length];
  const nextId = () => `${recorder.tag}-${role}-${index}-${(seq += 1)}`;

  const toolCall = (kind, path) => async () => {
    const slug = pick();
    const id = nextId();
    const body = JSON.stringify({ name: front.tools[slug], arguments: { n: id } });
    const ok = await attempt(recorder, kind, () => request('POST', `${front.publicURL}${path(slug)}`, {
      agent: via, connectTo, body,
      headers: { ...fromConsole, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    }), toolOutcome);
    if (ok) recorder.acknowledged[AUDITED[kind]].push(id);
  };

  if (role === 'app') return loop(running, toolCall('app call', (slug) => `/apps/${slug}/tools/call`));
  if (role === 'playground') return loop(running, toolCall('playground call', (slug) => `/servers/${slug}/tools/call`));
  if (role === 'frame') return loop(running, () => openAndLoad(front, pick(), via, connectTo, recorder, () => { seq += 1; }));
  if (role === 'mcp') return mcpClient(front, index, via, connectTo, recorder, running);
  throw new Error(`no worker role ${role}`);
}

/** Opens an app as the console does (a frame ticket), then loads its frame from the
 * sandbox origin as the browser does: another site, no cookie. */
async function openAndLoad(front, slug, via, connectTo, recorder, advance) {
  advance();
  const opened = await attempt(recorder, 'app open', () => request('POST', `${front.publicURL}/api/apps/open`, {
    agent: via, connectTo, body: form({ slug }),
    headers: { origin: front.publicURL, cookie: front.cookie, 'content-type': 'application/x-www-form-urlencoded' },
  }), (answer) => {
    if (answer.status === 429) return 'rate';
    if (answer.status !== 200) return `status ${answer.status}`;
    try {
      return JSON.parse(answer.body).ticket ? 'ok' : 'body without ticket';
    } catch { return 'body not JSON'; }
  });
  if (!opened) return;
  const view = JSON.parse(opened.body);
  const origin = view.frame_origin || front.publicURL;
  const path = `/apps/${slug}/frame/${view.ticket}?uri=${encodeURIComponent(view.uri)}`;
  await attempt(recorder, 'frame load', () => request('GET', `${origin}${path}`, {
    agent: via, connectTo,
    headers: { 'sec-fetch-dest': 'iframe', 'sec-fetch-site': 'cross-site' },
  }), (answer) => {
    if (answer.status === 429) return 'rate';
    if (answer.status !== 200) return `status ${answer.status}`;
    return answer.body.includes('<script') ? 'ok' : 'body without the app';
  });
}

/** Tool calls one `/mcp` session makes before the client ends it and starts another. */
const CALLS_PER_SESSION = 20;
/** Failures in a row after which a client gives a session up and starts a new one. */
const GIVE_UP_AFTER = 3;

/** An MCP client on `/mcp` (Streamable HTTP): sessions of `CALLS_PER_SESSION` calls; a
 * session answered 404 is started again. */
async function mcpClient(front, index, via, connectTo, recorder, running) {
  const url = `${front.publicURL}/mcp`;
  let rpcId = 0;
  let seq = 0;
  const headers = (session) => ({
    authorization: `Bearer ${front.token}`,
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    ...(session ? { 'mcp-session-id': session } : {}),
  });
  const post = (session, message) => request('POST', url, { agent: via, connectTo, headers: headers(session), body: JSON.stringify(message) });
  const rpc = (method, params) => ({ jsonrpc: '2.0', id: (rpcId += 1), method, params });
  /** 'ok', 'gone', 'rate', or the failure; `check` judges the JSON-RPC result. */
  const judge = (id, check) => (answer) => {
    if (answer.status === 404) return 'gone';
    if (answer.status === 429) return 'rate';
    if (answer.status !== 200) return `status ${answer.status}`;
    let reply;
    try {
      reply = rpcMessages(answer).find((m) => m.id === id);
    } catch { return 'body not JSON'; }
    if (!reply) return 'body without a reply';
    if (reply.error) return `body error ${reply.error.code}`;
    return check(reply.result);
  };

  while (running()) {
    const init = rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'strad-soak', version: '1' } });
    const started = await attempt(recorder, 'mcp initialize', () => post(undefined, init),
      judge(init.id, (result) => (result.protocolVersion ? 'ok' : 'body without a version')));
    const session = started?.headers['mcp-session-id'];
    if (!session) continue;
    try {
      await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    } catch { /* the next request says whether the session lives */ }
    let failures = 0;
    let calls = 0;
    let listed = false;
    while (running() && calls < CALLS_PER_SESSION && failures < GIVE_UP_AFTER) {
      const slug = front.slugs[(index + seq) % front.slugs.length];
      const id = `${recorder.tag}-mcp-${index}-${(seq += 1)}`;
      const message = listed
        ? rpc('tools/call', { name: `${slug}__${front.tools[slug]}`, arguments: { n: id } })
        : rpc('tools/list', {});
      const kind = listed ? 'mcp tools/call' : 'mcp tools/list';
      const check = listed
        ? (result) => (result.isError ? 'body isError' : 'ok')
        : (result) => (result.tools?.length >= front.slugs.length ? 'ok' : 'body with tools missing');
      let outcome;
      await attempt(recorder, kind, () => post(session, message), (answer) => (outcome = judge(message.id, check)(answer)));
      if (outcome === undefined) outcome = 'network';
      if (outcome === 'gone') break;
      if (outcome === 'ok') {
        failures = 0;
        if (listed) {
          recorder.acknowledged.mcp_tool_call.push(id);
          calls += 1;
        }
        listed = true;
      } else if (outcome !== 'rate') {
        failures += 1;
      }
    }
    try {
      await request('DELETE', url, { agent: via, connectTo, headers: headers(session) });
    } catch { /* a session of a stopped instance is gone anyway */ }
  }
}
