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
//
// The server's parts are in test-mcp-server/: settings, content (tools, HTML, resources,
// state), sessions, the /mcp endpoint and the /control endpoint.

import { createServer } from 'node:http';

// stdout is reserved for the single "ready" line.
for (const method of ['log', 'info', 'debug', 'trace']) {
  console[method] = (...args) => console.error(...args);
}
// Imported after the line above, so nothing they load can write to stdout first.
const { HOST, JSON_RESPONSE, PORT, log } = await import('./test-mcp-server/settings.mjs');
const { sessions } = await import('./test-mcp-server/sessions.mjs');
const { handleMcp, hanging, rpcError, sendJson } = await import('./test-mcp-server/mcp-endpoint.mjs');
const { handleControl } = await import('./test-mcp-server/control.mjs');

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
  const control = (req, res) =>
    handleControl(req, res, { url: `http://${HOST}:${server.address().port}/mcp`, mcpConnections });
  const handler = path === '/mcp' ? handleMcp : path === '/control' ? control : null;
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
