// The /mcp endpoint: sessions by Mcp-Session-Id, and the faults a test sets.

import { randomUUID } from 'node:crypto';

import { APP_MIME, HUGE_BYTES, JSON_RESPONSE, MAX_BODY, RESUMABLE, WIDGET_URI, log } from './settings.mjs';
import { hugeHtml, state } from './content.mjs';
import { EventLog, makeMcpServer, sessions } from './sessions.mjs';

const { StreamableHTTPServerTransport } = await import(
  '@modelcontextprotocol/sdk/server/streamableHttp.js'
);

export const hanging = new Set();

export function readBody(req, limit) {
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

export function sendJson(res, status, value, headers = {}) {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

export const rpcError = (res, status, code, message, headers) =>
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

export async function handleMcp(req, res) {
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
