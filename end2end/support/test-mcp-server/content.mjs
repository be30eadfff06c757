// What the test MCP server serves: its app's HTML, its tools and their results, its
// resources, and the state a test changes through /control.

import { createHash } from 'node:crypto';

import { APP_MIME, HUGE_BYTES, WIDGET_URI } from './settings.mjs';

// A small MCP App view: it performs the ui/initialize handshake with its
// parent, shows the tool input and result, reports its size, and has a
// button that calls the app-only tool through the host.
export const DEFAULT_HTML = `<!doctype html>
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

export const WIDGET_UI_META = {
  csp: { resourceDomains: ['https://cdn.example.com', 'https://bad.example.com; script-src *'] },
  permissions: { clipboardWrite: {} },
};

export function initialTools() {
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

export const BUILTIN_RESULTS = {
  'show-widget': (args) => ({
    content: [{ type: 'text', text: `widget:${args?.label ?? ''}` }],
    structuredContent: { label: args?.label },
  }),
  'app-only-refresh': () => ({ content: [{ type: 'text', text: 'refreshed' }] }),
  'write-note': () => ({ content: [{ type: 'text', text: 'noted' }] }),
  'bad-link': () => ({ content: [{ type: 'text', text: 'bad-link' }] }),
};

export const state = {
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

export const sha256 = (text) => createHash('sha256').update(text).digest('hex');

export const RESOURCES = [
  { uri: WIDGET_URI, name: 'widget.html', description: 'The test widget', mimeType: APP_MIME },
  { uri: 'ui://test/blob.html', name: 'blob.html', description: 'Base64 blob widget', mimeType: APP_MIME },
  { uri: 'ui://test/wrong-mime.html', name: 'wrong-mime.html', description: 'App resource with the wrong mimeType', mimeType: 'text/html' },
  { uri: 'file:///test/readme.txt', name: 'readme.txt', description: 'Not an app resource', mimeType: 'text/plain' },
];

export function readResource(uri) {
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

export function hugeHtml() {
  const head = '<!doctype html><html><head><meta charset="utf-8"><title>huge</title></head><body><p>';
  const tail = '</p></body></html>';
  return head + 'x'.repeat(HUGE_BYTES - head.length - tail.length) + tail;
}

