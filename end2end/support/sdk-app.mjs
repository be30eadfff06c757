// An MCP App page built on the official SDK (`@modelcontextprotocol/ext-apps`, `App`), for
// browser tests that need a real SDK client in strad's frame rather than a hand-written one.
//
// The frame's CSP allows inline scripts by hash only and no network at all, so the page is
// one self-contained document: the SDK's browser bundle (`app-with-deps.js`, an ES module
// ending in `export{…}`) is inlined in ONE `<script type="module">` with the page's own code,
// its export statement turned into an assignment onto `globalThis.McpApps`.
//
// The page connects at once and writes everything it hears and does into the DOM, so a test
// reads it through `page.frameLocator('iframe.app-frame')`:
//   #status            "connecting", then "connected" (or "connect failed: …")
//   #host-info         the init result's hostInfo / hostCapabilities / hostContext (JSON)
//   #tool-input, #tool-result, #tool-cancelled
//                      the last notification of each kind (JSON), with data-count
//   #host-context      the host context as the SDK holds it after each
//                      host-context-changed (JSON), with data-count
//   #outcome-N         one per action the page ran, N from 1: data-action, data-state
//                      ("pending", "result", "error"), data-progress (progress notifications
//                      heard for it), and text = JSON {action, params, startedAt, endedAt, ms,
//                      result | error: {code, message}}
// Actions (each writes one #outcome-N):
//   call-tool {name, arguments}   app.callServerTool (progress counted)
//   read-resource {uri}           app.readServerResource
//   open-link {url}               app.openLink
//   download-file {contents}      app.downloadFile
//   display-mode {mode}           app.requestDisplayMode
//   size-changed {width?, height?}   app.sendSizeChanged (a notification)
//   send-log {level, data, logger?}   app.sendLog (a notification: result is null once sent)
//   send-message {role, content}  app.sendMessage
//   update-context {content?, structuredContent?}   app.updateModelContext
//   raw-request {method, params, id?}   posted by hand to the parent (for what the SDK will
//                                 not send, e.g. sampling/createMessage without the host
//                                 capability, or forged fields); the answer with the same id
//                                 (string ids "raw-N" unless given) is the outcome
//   raw-notify {method, params}   posted by hand; result null once posted
// A test drives them with the form's controls (role/label locators: "Tool", "Arguments
// (JSON)", "Call tool", "URL", "Open link", …), with `buttons` drawn by the test, or from the
// driver: `frame.evaluate(([a, p]) => sdkApp.run(a, p), [action, params])` returns N.
// `sdkApp.runMany(action, paramsList)` starts many at once and returns their numbers.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const BUNDLE_PATH = require.resolve('@modelcontextprotocol/ext-apps/app-with-deps');

/**
 * The bundle as a classic block of statements: its final `export{a as B, c}` becomes
 * `globalThis.McpApps = {B: a, c: c};`, names read from the statement itself.
 */
export function sdkBundleAsGlobal(source = readFileSync(BUNDLE_PATH, 'utf8'), global = 'McpApps') {
  const match = source.match(/export\s*\{([^{}]*)\}\s*;?\s*$/);
  if (!match) throw new Error('the SDK bundle does not end in an export statement');
  const entries = match[1].split(',').map((s) => s.trim()).filter(Boolean).map((spec) => {
    const parts = spec.split(/\s+as\s+/);
    const [local, exported] = parts.length === 2 ? parts : [parts[0], parts[0]];
    if (!/^[\w$]+$/.test(local) || !/^[\w$]+$/.test(exported)) {
      throw new Error(`unexpected export specifier ${spec}`);
    }
    return `${JSON.stringify(exported)}: ${local}`;
  });
  const body = source.slice(0, match.index);
  if (/<\/script/i.test(body) || /<!--/.test(body)) {
    throw new Error('the SDK bundle cannot be inlined in a <script> as it is');
  }
  return `${body}\nglobalThis.${global} = {${entries.join(', ')}};\n`;
}

let cachedBundle;

/** Text safe inside HTML. */
const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A self-contained MCP App page on the official SDK.
 *
 * @param {object} [options]
 * @param {string} [options.name]     appInfo.name (also the page title)
 * @param {string} [options.version]  appInfo.version
 * @param {boolean} [options.autoResize]  the SDK's size reporting (default true)
 * @param {{action: string, params?: object}[]} [options.onConnect]
 *        actions run, in order without waiting, as soon as the handshake is done
 * @param {{label: string, action: string, params?: object}[]} [options.buttons]
 *        extra buttons drawn inside the frame, each running one action when pressed
 * @param {string} [options.script]   more page code, run after connect, with `app`, `run`
 *        and `McpApps` in scope (no `</script>` in it)
 */
export function sdkAppHtml({
  name = 'strad-sdk-test-app',
  version = '1.0.0',
  autoResize = true,
  onConnect = [],
  buttons = [],
  script = '',
} = {}) {
  cachedBundle ??= sdkBundleAsGlobal();
  if (/<\/script/i.test(script)) throw new Error('the page script cannot contain </script>');
  // JSON inside a script: `<` escaped so no `</script>` or `<!--` can appear.
  const config = JSON.stringify({ name, version, autoResize, onConnect, buttons }).replace(/</g, '\\u003c');
  const extraButtons = buttons
    .map((b, i) => `<button type="button" data-extra="${i}">${escapeHtml(b.label)}</button>`)
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(name)}</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 8px; }
  pre { background: #f4f4f4; padding: 4px; margin: 2px 0; white-space: pre-wrap; word-break: break-all; }
  fieldset { margin: 4px 0; }
  label { display: inline-block; margin-right: 8px; }
</style>
</head>
<body>
<h1>${escapeHtml(name)}</h1>
<p id="status" role="status">connecting</p>
<pre id="host-info"></pre>
<pre id="tool-input" data-count="0"></pre>
<pre id="tool-result" data-count="0"></pre>
<pre id="tool-cancelled" data-count="0"></pre>
<pre id="host-context" data-count="0"></pre>
<fieldset>
  <legend>Server tools</legend>
  <label>Tool <input id="tool-name" type="text"></label>
  <label>Arguments (JSON) <textarea id="tool-arguments" rows="2" cols="40">{}</textarea></label>
  <button type="button" id="call-tool">Call tool</button>
</fieldset>
<fieldset>
  <legend>Host</legend>
  <label>URL <input id="link-url" type="text"></label>
  <button type="button" id="open-link">Open link</button>
  <button type="button" id="download-file">Download file</button>
  <button type="button" id="fullscreen">Full screen</button>
  <button type="button" id="inline">Inline</button>
  <button type="button" id="send-log">Send log</button>
  <button type="button" id="send-message">Send message</button>
  <button type="button" id="update-context">Update model context</button>
</fieldset>
<div id="extra-buttons">${extraButtons}</div>
<ol id="outcomes"></ol>
<script type="module">
${cachedBundle}
{
  const config = ${config};
  const { App } = globalThis.McpApps;
  const $ = (id) => document.getElementById(id);
  const show = (id, value) => {
    const el = $(id);
    el.textContent = JSON.stringify(value);
    el.dataset.count = String(Number(el.dataset.count || 0) + 1);
  };
  const app = new App({ name: config.name, version: config.version }, {}, { autoResize: config.autoResize });
  app.ontoolinput = (params) => show('tool-input', params);
  app.ontoolresult = (params) => show('tool-result', params);
  app.ontoolcancelled = (params) => show('tool-cancelled', params);
  app.onhostcontextchanged = () => show('host-context', app.getHostContext());
  app.onteardown = async () => ({});

  // Requests posted by hand: answered by id, apart from the SDK's own.
  const rawPending = new Map();
  let rawNext = 1;
  addEventListener('message', (event) => {
    if (event.source !== parent) return;
    const m = event.data;
    if (m && m.method === undefined && rawPending.has(m.id)) {
      const settle = rawPending.get(m.id);
      rawPending.delete(m.id);
      settle(m);
    }
  });
  const rawRequest = ({ method, params, id, ...extra }) => new Promise((resolve, reject) => {
    const rid = id ?? 'raw-' + rawNext++;
    rawPending.set(rid, (m) => (m.error ? reject(Object.assign(new Error(m.error.message), { code: m.error.code })) : resolve(m.result)));
    parent.postMessage({ jsonrpc: '2.0', id: rid, method, params, ...extra }, '*');
  });

  const actions = {
    'call-tool': (p, progress) => app.callServerTool({ name: p.name, arguments: p.arguments ?? {}, ...(p._meta ? { _meta: p._meta } : {}) },
      { onprogress: progress }),
    'read-resource': (p) => app.readServerResource({ uri: p.uri }),
    'open-link': (p) => app.openLink({ url: p.url }),
    'download-file': (p) => app.downloadFile({ contents: p.contents }),
    'display-mode': (p) => app.requestDisplayMode({ mode: p.mode }),
    'size-changed': async (p) => { await app.sendSizeChanged(p); return null; },
    'send-log': async (p) => { await app.sendLog({ level: p.level ?? 'info', data: p.data, ...(p.logger ? { logger: p.logger } : {}) }); return null; },
    'send-message': (p) => app.sendMessage({ role: p.role ?? 'user', content: p.content ?? [{ type: 'text', text: 'hello' }] }),
    'update-context': (p) => app.updateModelContext(p),
    'raw-request': (p) => rawRequest(p),
    'raw-notify': async (p) => { parent.postMessage({ jsonrpc: '2.0', method: p.method, params: p.params }, '*'); return null; },
  };

  let outcomes = 0;
  /** Runs one action; returns its outcome number at once (the outcome fills in later). */
  const run = (action, params = {}) => {
    const n = ++outcomes;
    const item = document.createElement('li');
    const pre = document.createElement('pre');
    pre.id = 'outcome-' + n;
    pre.dataset.action = action;
    pre.dataset.state = 'pending';
    pre.dataset.progress = '0';
    const record = { action, params, startedAt: Date.now() };
    pre.textContent = JSON.stringify(record);
    item.append(pre);
    $('outcomes').append(item);
    const progress = () => { pre.dataset.progress = String(Number(pre.dataset.progress) + 1); };
    const settle = (state, field, value) => {
      record.endedAt = Date.now();
      record.ms = record.endedAt - record.startedAt;
      record[field] = value;
      pre.textContent = JSON.stringify(record);
      pre.dataset.state = state;
    };
    Promise.resolve()
      .then(() => {
        const act = actions[action];
        if (!act) throw new Error('unknown action ' + action);
        return act(params, progress);
      })
      .then(
        (result) => settle('result', 'result', result ?? null),
        (error) => settle('error', 'error', { code: error?.code ?? null, message: String(error?.message ?? error) }),
      );
    return n;
  };
  const runMany = (action, list) => list.map((params) => run(action, params));
  globalThis.sdkApp = { app, run, runMany, McpApps: globalThis.McpApps };

  const argumentsFromForm = () => {
    const text = $('tool-arguments').value.trim();
    return text ? JSON.parse(text) : {};
  };
  $('call-tool').addEventListener('click', () => {
    let args;
    try { args = argumentsFromForm(); } catch (e) { run('call-tool-invalid-json', { text: $('tool-arguments').value }); return; }
    run('call-tool', { name: $('tool-name').value, arguments: args });
  });
  $('open-link').addEventListener('click', () => run('open-link', { url: $('link-url').value }));
  $('download-file').addEventListener('click', () => run('download-file', {
    contents: [{ type: 'resource', resource: { uri: 'file:///report.txt', mimeType: 'text/plain', text: 'a report' } }],
  }));
  $('fullscreen').addEventListener('click', () => run('display-mode', { mode: 'fullscreen' }));
  $('inline').addEventListener('click', () => run('display-mode', { mode: 'inline' }));
  $('send-log').addEventListener('click', () => run('send-log', { level: 'info', data: 'pressed Send log' }));
  $('send-message').addEventListener('click', () => run('send-message', { role: 'user', content: [{ type: 'text', text: 'hello' }] }));
  $('update-context').addEventListener('click', () => run('update-context', { content: [{ type: 'text', text: 'context' }] }));
  for (const button of document.querySelectorAll('#extra-buttons button')) {
    const spec = config.buttons[Number(button.dataset.extra)];
    button.addEventListener('click', () => run(spec.action, spec.params ?? {}));
  }

  try {
    await app.connect();
    $('host-info').textContent = JSON.stringify({
      hostInfo: app.getHostVersion(),
      hostCapabilities: app.getHostCapabilities(),
      hostContext: app.getHostContext(),
    });
    $('status').textContent = 'connected';
    for (const { action, params } of config.onConnect) run(action, params ?? {});
    ${script}
  } catch (error) {
    $('status').textContent = 'connect failed: ' + String(error?.message ?? error);
  }
}
</script>
</body>
</html>
`;
}
