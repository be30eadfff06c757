// strad's own controllable MCP server for end-to-end tests.
//
// Built on `@modelcontextprotocol/sdk` 1.x: one `McpServer` per session, each
// behind a STATEFUL `StreamableHTTPServerTransport` (Mcp-Session-Id), so the
// server can push `notifications/tools/list_changed` and
// `notifications/resources/list_changed` on the standalone GET SSE stream.
// The request handlers are set on `McpServer.server` (the low-level Server)
// rather than through `registerTool`, so tools and resources go out exactly as
// written here: raw JSON Schemas, `_meta` and deliberately invalid metadata.
//
// Usage:
//   PORT=0 node end2end/support/test-mcp-server.mjs
//     PORT unset, empty or 0 = an ephemeral port; always binds 127.0.0.1.
//     JSON_RESPONSE=1 answers POSTs with application/json instead of SSE.
//     RESUMABLE=1 keeps every session's events (ids on every event, `retry: 50`),
//       so a client can resume a stream with Last-Event-ID.
//
// On start it prints exactly one line of JSON to stdout:
//   {"url":"http://127.0.0.1:NNNN/mcp","port":NNNN}
// and nothing else ever goes to stdout (all logging goes to stderr).
// SIGTERM / SIGINT close every session and exit 0.
//
// MCP endpoint: /mcp (POST, GET, DELETE)
//   POST without Mcp-Session-Id must be `initialize` (else 400, JSON-RPC
//   error -32000); an unknown Mcp-Session-Id gets 404 (-32001 "Session not
//   found"); GET/DELETE without Mcp-Session-Id get 400, with an unknown one
//   404. Other methods: 405.
//
// Control endpoint (same port): POST /control with a JSON object holding any
// of the keys below (applied in this order); answers 204, or 400 with
// {"error": "..."} for a bad body (then nothing is applied).
//   {"reset": true}        back to the initial tools, HTML and no fault
//                          (sends both list_changed notifications)
//   {"notify": false}       with any of the below: change without sending list_changed
//   {"html": "<!doctype html>..."}
//                          replaces ui://test/widget.html's text; sends
//                          notifications/resources/list_changed
//   {"uiMeta": {...}}       replaces ui://test/widget.html's _meta.ui (its CSP
//                          domains, permissions); sends resources/list_changed
//   {"addTool": {"name", "description"?, "title"?, "inputSchema"?, "_meta"?,
//                "annotations"?, "outputSchema"?, "result"?, "progress"?}}
//                          adds (or replaces) a tool; `result` is the
//                          CallToolResult it returns (default: text
//                          "<name>:<arguments JSON>"); sends tools/list_changed.
//                          `progress: {steps, wait, intervalMs}` takes `steps`
//                          steps `intervalMs` apart, each sending a progress
//                          notification when the call carries a progressToken,
//                          `chatter: {ping, listChanged, closeStream}` makes each
//                          call, before it answers, send the client `ping` (and
//                          wait for its answer, counted in `pings`), send
//                          tools/list_changed on the call's own stream, and close
//                          the call's stream (RESUMABLE=1: the client must resume
//                          it to get the answer),
//                          then (wait) holds the call open until the client
//                          cancels it, counted in GET /control's `cancelled`
//   {"removeTool": "name"} removes a tool; sends tools/list_changed
//   {"describe": {"name": "show-widget", "description": "new text"}}
//                          changes a tool's description; sends tools/list_changed
//   {"forgetSessions": true} drops every session without closing it: their
//                          next request gets 404 "Session not found"
//   {"fault": {"kind": "hang"|"die"|"garbage"|"huge"|null, "on": METHOD}}
//   {"fault": null}        METHOD is a JSON-RPC method name such as
//                          "tools/list", "resources/list", "resources/read",
//                          "tools/call", "initialize", or "any" (every
//                          request). From then on a POSTed JSON-RPC request
//                          (with an id; notifications are never faulted) with
//                          that method is answered badly:
//                            hang    never answered, the HTTP request stays open
//                            die     process.exit(1) as soon as it arrives
//                            garbage HTTP 200, Content-Type application/json,
//                                    body `{"jsonrpc":"2.0", "id":` (not JSON)
//                            huge    resources/read only: a valid JSON result
//                                    whose HTML text is 9 MiB (other methods
//                                    are served normally)
//                          kind null (or "fault": null) clears the fault.
//                          Requests already hanging stay open until the
//                          client gives up or the server stops.
// GET /control returns the current state as JSON:
//   {url, tools: [names], html: {sha256, bytes}, fault, sessions: [{id, sse}],
//    hanging, calls, callIds, cancelled, pings, mcpConnections}
//   `callIds` holds the JSON-RPC id of each tool's latest call; `callArguments` the
//   arguments of each tool's calls, oldest first (the latest 100 per tool).
//   `sse` is true while that session's standalone GET stream is open, so a
//   test can wait for it before triggering a list_changed notification.

import { createServer } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';

// stdout is reserved for the single "ready" line.
for (const method of ['log', 'info', 'debug', 'trace']) {
  console[method] = (...args) => console.error(...args);
}
const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await import(
  '@modelcontextprotocol/sdk/server/streamableHttp.js'
);
const {
  CallToolRequestSchema,
  EmptyResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} = await import('@modelcontextprotocol/sdk/types.js');

const log = (...args) => console.error('[test-mcp-server]', ...args);

const rawPort = (process.env.PORT ?? '').trim();
const PORT = rawPort === '' ? 0 : Number(rawPort);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
  log(`PORT must be an integer between 0 and 65535, got ${JSON.stringify(rawPort)}`);
  process.exit(2);
}
const JSON_RESPONSE = /^(1|true|yes)$/i.test(process.env.JSON_RESPONSE ?? '');
const RESUMABLE = /^(1|true|yes)$/i.test(process.env.RESUMABLE ?? '');

/** Every event of a session's streams, in order, for resumption (RESUMABLE=1). */
class EventLog {
  constructor() {
    this.events = [];
  }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}.${this.events.length}`;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((e) => e.eventId === lastEventId);
    if (at < 0) return '';
    const { streamId } = this.events[at];
    for (const event of this.events.slice(at + 1)) {
      if (event.streamId === streamId) await send(event.eventId, event.message);
    }
    return streamId;
  }
}
const HOST = '127.0.0.1';

const APP_MIME = 'text/html;profile=mcp-app';
const WIDGET_URI = 'ui://test/widget.html';
const HUGE_BYTES = 9 * 1024 * 1024;
const MAX_BODY = 32 * 1024 * 1024;

// ---------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------

// A small MCP App view: it performs the ui/initialize handshake with its
// parent, shows the tool input and result, reports its size, and has a
// button that calls the app-only tool through the host.
const DEFAULT_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>strad test widget</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 8px; color: #222; }
  #status { font-weight: bold; }
  pre { background: #f4f4f4; padding: 4px; margin: 4px 0; white-space: pre-wrap; }
</style>
</head>
<body>
<div id="status" data-testid="status">loading</div>
<pre id="input" data-testid="input"></pre>
<pre id="result" data-testid="result"></pre>
<button id="refresh" data-testid="refresh" type="button">refresh</button>
<pre id="log" data-testid="log"></pre>
<script type="module">
  const $ = (id) => document.getElementById(id);
  const log = (line) => { $('log').textContent += line + '\\n'; };
  const post = (msg) => window.parent.postMessage({ jsonrpc: '2.0', ...msg }, '*');
  const pending = new Map();
  let nextId = 0;
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    post({ id, method, params });
  });
  const textOf = (result) => (result?.content ?? []).map((c) => c.text ?? '').join(' ');
  window.addEventListener('message', (event) => {
    if (event.source !== window.parent) return;
    const msg = event.data;
    if (!msg || msg.jsonrpc !== '2.0') return;
    if (msg.method === undefined) {
      const p = pending.get(msg.id);
      if (p) { pending.delete(msg.id); msg.error ? p.reject(msg.error) : p.resolve(msg.result); }
      return;
    }
    log('<- ' + msg.method);
    if (msg.method === 'ui/notifications/tool-input') {
      $('input').textContent = JSON.stringify(msg.params?.arguments ?? {});
    } else if (msg.method === 'ui/notifications/tool-result') {
      $('result').textContent = textOf(msg.params);
    } else if (msg.id !== undefined) {
      const known = msg.method === 'ping' || msg.method === 'ui/resource-teardown';
      post(known ? { id: msg.id, result: {} }
                 : { id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  $('refresh').addEventListener('click', async () => {
    try {
      const r = await request('tools/call', { name: 'app-only-refresh', arguments: {} });
      $('result').textContent = textOf(r);
    } catch (e) {
      $('result').textContent = 'error: ' + (e?.message ?? JSON.stringify(e));
    }
  });
  try {
    const init = await request('ui/initialize', {
      appInfo: { name: 'strad-test-widget', version: '1.0.0' },
      appCapabilities: {},
      protocolVersion: '2026-01-26',
    });
    $('status').textContent = 'initialized';
    log('host: ' + (init?.hostInfo?.name ?? '?'));
    post({ method: 'ui/notifications/initialized', params: {} });
    const el = document.documentElement;
    post({ method: 'ui/notifications/size-changed',
           params: { width: el.scrollWidth, height: el.scrollHeight } });
  } catch (e) {
    $('status').textContent = 'initialize failed: ' + (e?.message ?? JSON.stringify(e));
  }
</script>
</body>
</html>
`;

const BLOB_HTML =
  '<!doctype html><html><head><meta charset="utf-8"><title>blob</title></head>' +
  '<body><p id="blob">blob widget</p></body></html>';

const WIDGET_UI_META = {
  csp: { resourceDomains: ['https://cdn.example.com', 'https://bad.example.com; script-src *'] },
  permissions: { clipboardWrite: {} },
};

function initialTools() {
  const emptySchema = () => ({ type: 'object', properties: {} });
  return new Map(
    [
      {
        name: 'show-widget',
        description: 'Shows the widget',
        inputSchema: { type: 'object', properties: { label: { type: 'string' } } },
        annotations: { readOnlyHint: true },
        _meta: { ui: { resourceUri: WIDGET_URI }, 'ui/resourceUri': WIDGET_URI },
      },
      {
        name: 'app-only-refresh',
        description: 'Refreshes the widget (callable by the app only)',
        inputSchema: emptySchema(),
        _meta: { ui: { visibility: ['app'] } },
      },
      {
        name: 'write-note',
        description: 'Writes a note',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      },
      {
        name: 'bad-link',
        description: 'Tool whose ui resourceUri is not a ui:// URI',
        inputSchema: emptySchema(),
        _meta: { ui: { resourceUri: 'https://example.com/not-ui.html' } },
      },
    ].map((t) => [t.name, t]),
  );
}

const BUILTIN_RESULTS = {
  'show-widget': (args) => ({
    content: [{ type: 'text', text: `widget:${args?.label ?? ''}` }],
    structuredContent: { label: args?.label },
  }),
  'app-only-refresh': () => ({ content: [{ type: 'text', text: 'refreshed' }] }),
  'write-note': () => ({ content: [{ type: 'text', text: 'noted' }] }),
  'bad-link': () => ({ content: [{ type: 'text', text: 'bad-link' }] }),
};

const state = {
  tools: initialTools(),
  html: DEFAULT_HTML,
  uiMeta: structuredClone(WIDGET_UI_META),
  fault: null, // {kind, on}
  calls: {}, // tool name -> how many tools/call it received (GET /control shows it)
  callIds: {}, // tool name -> the JSON-RPC id of its latest call
  callArguments: {}, // tool name -> the arguments of its calls (the latest 100)
  pings: 0, // pings the client answered in the middle of a call
  cancelled: {}, // tool name -> how many of its calls the client cancelled
};

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

const RESOURCES = [
  { uri: WIDGET_URI, name: 'widget.html', description: 'The test widget', mimeType: APP_MIME },
  { uri: 'ui://test/blob.html', name: 'blob.html', description: 'Base64 blob widget', mimeType: APP_MIME },
  { uri: 'ui://test/wrong-mime.html', name: 'wrong-mime.html', description: 'App resource with the wrong mimeType', mimeType: 'text/html' },
  { uri: 'file:///test/readme.txt', name: 'readme.txt', description: 'Not an app resource', mimeType: 'text/plain' },
];

function readResource(uri) {
  switch (uri) {
    case WIDGET_URI:
      return { uri, mimeType: APP_MIME, text: state.html, _meta: { ui: structuredClone(state.uiMeta) } };
    case 'ui://test/blob.html':
      return { uri, mimeType: APP_MIME, blob: Buffer.from(BLOB_HTML).toString('base64') };
    case 'ui://test/wrong-mime.html':
      return {
        uri,
        mimeType: 'text/html',
        text: '<!doctype html><html><head><title>wrong mime</title></head><body><p>wrong mime</p></body></html>',
      };
    case 'file:///test/readme.txt':
      return { uri, mimeType: 'text/plain', text: 'This is not an app resource.\n' };
    default:
      if (uri.startsWith('file:///test/notes/')) {
        return { uri, mimeType: 'text/plain', text: `note ${uri.slice('file:///test/notes/'.length)}` };
      }
      return undefined;
  }
}

function hugeHtml() {
  const head = '<!doctype html><html><head><meta charset="utf-8"><title>huge</title></head><body><p>';
  const tail = '</p></body></html>';
  return head + 'x'.repeat(HUGE_BYTES - head.length - tail.length) + tail;
}

// ---------------------------------------------------------------------------
// MCP sessions
// ---------------------------------------------------------------------------

/** sessionId -> {transport, mcp, sse: number of open standalone GET streams} */
const sessions = new Map();

function makeMcpServer() {
  const mcp = new McpServer(
    { name: 'strad-test-mcp-server', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: {} } },
  );
  const server = mcp.server;
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...state.tools.values()].map(({ result: _r, progress: _p, chatter: _c, ...tool }) =>
      structuredClone(tool),
    ),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    state.calls[name] = (state.calls[name] ?? 0) + 1;
    state.callIds[name] = extra.requestId;
    const seen = (state.callArguments[name] ??= []);
    seen.push(structuredClone(args));
    if (seen.length > 100) seen.shift();
    const tool = state.tools.get(name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    if (tool.progress) {
      const token = request.params._meta?.progressToken;
      const { steps = 0, wait = false, intervalMs = 0 } = tool.progress;
      for (let step = 1; step <= steps; step++) {
        if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
        if (token === undefined) continue;
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: step, total: steps, message: `step ${step}` },
        });
      }
      if (wait) {
        await new Promise((resolve) => {
          if (extra.signal.aborted) resolve();
          extra.signal.addEventListener('abort', resolve, { once: true });
        });
        state.cancelled[name] = (state.cancelled[name] ?? 0) + 1;
        throw new McpError(ErrorCode.InternalError, 'cancelled');
      }
    }
    if (tool.chatter) {
      const { ping = false, listChanged = false, closeStream = false } = tool.chatter;
      if (ping) {
        await extra.sendRequest({ method: 'ping' }, EmptyResultSchema);
        state.pings += 1;
      }
      if (listChanged) await extra.sendNotification({ method: 'notifications/tools/list_changed' });
      if (closeStream && extra.closeSSEStream) {
        extra.closeSSEStream();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    if (tool.result !== undefined) return structuredClone(tool.result);
    const builtin = BUILTIN_RESULTS[name];
    if (builtin) return builtin(args);
    return { content: [{ type: 'text', text: `${name}:${JSON.stringify(args)}` }] };
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.map((r) => ({ ...r })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: 'file:///test/notes/{name}', name: 'note', mimeType: 'text/plain' }],
  }));
  // One prompt, for relays that pass prompts on.
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: [{ name: 'summarize', description: 'Summarize a topic', arguments: [{ name: 'topic', required: true }] }],
  }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    if (request.params.name !== 'summarize') {
      throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
    }
    const topic = request.params.arguments?.topic ?? '';
    return { messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${topic}.` } }] };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const content = readResource(request.params.uri);
    if (!content) {
      throw new McpError(-32002, `Resource not found: ${request.params.uri}`, { uri: request.params.uri });
    }
    return { contents: [content] };
  });
  return mcp;
}

function broadcast(kind) {
  for (const [id, s] of sessions) {
    const send =
      kind === 'tools' ? s.mcp.server.sendToolListChanged() : s.mcp.server.sendResourceListChanged();
    Promise.resolve(send).catch((e) => log(`session ${id}: cannot send ${kind} list_changed: ${e.message}`));
  }
  log(`sent notifications/${kind}/list_changed to ${sessions.size} session(s)`);
}

// ---------------------------------------------------------------------------
// HTTP layer
// ---------------------------------------------------------------------------

const hanging = new Set();

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res, status, value, headers = {}) {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

const rpcError = (res, status, code, message, headers) =>
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers);

/** Applies the configured fault; returns true if it took over the response. */
function applyFault(req, res, message, isBatch) {
  const fault = state.fault;
  if (!fault) return false;
  const requests = (isBatch ? message : [message]).filter(
    (m) => m && typeof m === 'object' && typeof m.method === 'string' && m.id !== undefined,
  );
  const hit = requests.find((m) => fault.on === 'any' || m.method === fault.on);
  if (!hit) return false;
  const sid = req.headers['mcp-session-id'];
  const sidHeader = typeof sid === 'string' ? { 'mcp-session-id': sid } : {};
  switch (fault.kind) {
    case 'die':
      log(`fault die on ${hit.method}: exiting with status 1`);
      process.exit(1);
      return true;
    case 'hang':
      log(`fault hang on ${hit.method}: leaving the request open`);
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return true;
    case 'garbage': {
      log(`fault garbage on ${hit.method}`);
      const body = '{"jsonrpc":"2.0", "id":';
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...sidHeader });
      res.end(body);
      return true;
    }
    case 'huge': {
      if (hit.method !== 'resources/read' || isBatch) return false;
      const uri = hit.params?.uri ?? WIDGET_URI;
      log(`fault huge on resources/read ${uri}: answering ${HUGE_BYTES} bytes of HTML`);
      sendJson(
        res,
        200,
        { jsonrpc: '2.0', id: hit.id, result: { contents: [{ uri, mimeType: APP_MIME, text: hugeHtml() }] } },
        sidHeader,
      );
      return true;
    }
    default:
      return false;
  }
}

async function handleMcp(req, res) {
  const sidRaw = req.headers['mcp-session-id'];
  const sid = typeof sidRaw === 'string' ? sidRaw : undefined;

  if (req.method === 'POST') {
    let text;
    try {
      text = await readBody(req, MAX_BODY);
    } catch (e) {
      return rpcError(res, e.status ?? 400, -32600, e.message);
    }
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return rpcError(res, 400, -32700, 'Parse error: Invalid JSON');
    }
    const isBatch = Array.isArray(message);
    if (applyFault(req, res, message, isBatch)) return;

    if (sid !== undefined) {
      const session = sessions.get(sid);
      if (!session) return rpcError(res, 404, -32001, 'Session not found');
      return session.transport.handleRequest(req, res, message);
    }
    const isInit = (isBatch ? message : [message]).some((m) => m?.method === 'initialize');
    if (!isInit) return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');

    const mcp = makeMcpServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: JSON_RESPONSE,
      ...(RESUMABLE ? { eventStore: new EventLog(), retryInterval: 50 } : {}),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, mcp, sse: 0 });
        log(`session ${id} initialized`);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId && sessions.delete(transport.sessionId)) {
        log(`session ${transport.sessionId} closed`);
      }
    };
    transport.onerror = (e) => log(`transport: ${e.message}`);
    await mcp.connect(transport);
    await transport.handleRequest(req, res, message);
    if (!transport.sessionId) await mcp.close().catch(() => {});
    return;
  }

  if (req.method === 'GET' || req.method === 'DELETE') {
    if (sid === undefined) return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const session = sessions.get(sid);
    if (!session) return rpcError(res, 404, -32001, 'Session not found');
    if (req.method === 'GET') {
      // Count the standalone SSE stream once its 200 goes out.
      const writeHead = res.writeHead;
      res.writeHead = function (status, ...rest) {
        if (status === 200) {
          session.sse += 1;
          res.once('close', () => {
            session.sse -= 1;
          });
        }
        return writeHead.call(this, status, ...rest);
      };
    }
    return session.transport.handleRequest(req, res);
  }

  return rpcError(res, 405, -32000, 'Method not allowed.', { Allow: 'GET, POST, DELETE' });
}

function validateControl(body) {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'body must be a JSON object';
  const known = ['reset', 'notify', 'html', 'uiMeta', 'addTool', 'removeTool', 'describe', 'forgetSessions', 'fault'];
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length) return `unknown key(s): ${unknown.join(', ')}`;
  if ('html' in body && typeof body.html !== 'string') return 'html must be a string';
  if ('uiMeta' in body && (!body.uiMeta || typeof body.uiMeta !== 'object')) return 'uiMeta must be an object';
  if ('addTool' in body) {
    const t = body.addTool;
    if (!t || typeof t !== 'object' || typeof t.name !== 'string' || !t.name) return 'addTool needs a name';
    if (t.inputSchema !== undefined && (typeof t.inputSchema !== 'object' || t.inputSchema === null)) {
      return 'addTool.inputSchema must be an object';
    }
  }
  if ('removeTool' in body) {
    if (typeof body.removeTool !== 'string') return 'removeTool must be a tool name';
    const willExist = body.addTool?.name === body.removeTool || state.tools.has(body.removeTool);
    if (!willExist && !body.reset) return `no tool named ${body.removeTool}`;
  }
  if ('describe' in body) {
    const d = body.describe;
    if (!d || typeof d.name !== 'string' || typeof d.description !== 'string') {
      return 'describe needs name and description strings';
    }
    if (!state.tools.has(d.name) && body.addTool?.name !== d.name && !(body.reset && initialTools().has(d.name))) {
      return `no tool named ${d.name}`;
    }
  }
  if ('fault' in body && body.fault !== null) {
    const f = body.fault;
    if (typeof f !== 'object') return 'fault must be an object or null';
    if (![null, undefined, 'hang', 'die', 'garbage', 'huge'].includes(f.kind)) return `unknown fault kind ${f.kind}`;
    if (f.kind != null && (typeof f.on !== 'string' || !f.on)) return 'fault.on must be a method name or "any"';
  }
  return null;
}

async function handleControl(req, res) {
  if (req.method === 'GET') {
    return sendJson(res, 200, {
      url: `http://${HOST}:${server.address().port}/mcp`,
      tools: [...state.tools.keys()],
      html: { sha256: sha256(state.html), bytes: Buffer.byteLength(state.html) },
      fault: state.fault,
      sessions: [...sessions].map(([id, s]) => ({ id, sse: s.sse > 0 })),
      hanging: hanging.size,
      calls: state.calls,
      callIds: state.callIds,
      callArguments: state.callArguments,
      cancelled: state.cancelled,
      pings: state.pings,
      mcpConnections,
    });
  }
  if (req.method !== 'POST') return sendJson(res, 405, { error: 'use GET or POST' }, { Allow: 'GET, POST' });
  let body;
  try {
    body = JSON.parse(await readBody(req, MAX_BODY));
  } catch (e) {
    return sendJson(res, e.status ?? 400, { error: `bad JSON body: ${e.message}` });
  }
  const problem = validateControl(body);
  if (problem) return sendJson(res, 400, { error: problem });

  let toolsChanged = false;
  let resourcesChanged = false;
  if (body.reset) {
    state.tools = initialTools();
    state.html = DEFAULT_HTML;
    state.uiMeta = structuredClone(WIDGET_UI_META);
    state.fault = null;
    toolsChanged = resourcesChanged = true;
    log('reset');
  }
  if ('html' in body) {
    state.html = body.html;
    resourcesChanged = true;
    log(`html replaced (${Buffer.byteLength(body.html)} bytes, sha256 ${sha256(body.html).slice(0, 12)})`);
  }
  if ('uiMeta' in body) {
    state.uiMeta = structuredClone(body.uiMeta);
    resourcesChanged = true;
    log('ui meta replaced');
  }
  if ('addTool' in body) {
    const { name, title, description, inputSchema, outputSchema, annotations, _meta, result, progress, chatter } =
      body.addTool;
    const tool = { name };
    if (title !== undefined) tool.title = title;
    if (description !== undefined) tool.description = description;
    tool.inputSchema = inputSchema ?? { type: 'object', properties: {} };
    if (outputSchema !== undefined) tool.outputSchema = outputSchema;
    if (annotations !== undefined) tool.annotations = annotations;
    if (_meta !== undefined) tool._meta = _meta;
    if (result !== undefined) tool.result = result;
    if (progress !== undefined) tool.progress = progress;
    if (chatter !== undefined) tool.chatter = chatter;
    state.tools.set(name, tool);
    toolsChanged = true;
    log(`tool ${name} added`);
  }
  if ('removeTool' in body) {
    state.tools.delete(body.removeTool);
    toolsChanged = true;
    log(`tool ${body.removeTool} removed`);
  }
  if ('describe' in body) {
    state.tools.get(body.describe.name).description = body.describe.description;
    toolsChanged = true;
    log(`tool ${body.describe.name} described anew`);
  }
  if (body.forgetSessions) {
    sessions.clear();
    log('every session forgotten');
  }
  if ('fault' in body) {
    const f = body.fault;
    state.fault = f && f.kind != null ? { kind: f.kind, on: f.on } : null;
    log(state.fault ? `fault set: ${state.fault.kind} on ${state.fault.on}` : 'fault cleared');
  }
  // `"notify": false` changes things silently, as a server without notifications would.
  if (body.notify === false) toolsChanged = resourcesChanged = false;
  if (toolsChanged) broadcast('tools');
  if (resourcesChanged) broadcast('resources');
  res.writeHead(204);
  res.end();
}

// The TCP connections that have carried /mcp requests (a client that keeps its connections
// opens few; one that does not opens one per request).
const mcpSockets = new WeakSet();
let mcpConnections = 0;

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path === '/mcp' && !mcpSockets.has(req.socket)) {
    mcpSockets.add(req.socket);
    mcpConnections += 1;
  }
  const handler = path === '/mcp' ? handleMcp : path === '/control' ? handleControl : null;
  if (!handler) return sendJson(res, 404, { error: 'not found' });
  handler(req, res).catch((e) => {
    log(`error handling ${req.method} ${path}:`, e);
    if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error');
    else res.destroy();
  });
});

server.on('error', (e) => {
  log(`server error: ${e.message}`);
  process.exit(2);
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  process.stdout.write(JSON.stringify({ url: `http://${HOST}:${port}/mcp`, port }) + '\n');
  log(`listening on http://${HOST}:${port}/mcp${JSON_RESPONSE ? ' (JSON responses)' : ''}`);
});

let stopping = false;
async function shutdown(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: shutting down`);
  setTimeout(() => process.exit(0), 2000).unref();
  for (const res of hanging) res.destroy();
  await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
