// The /control endpoint: a test reads the server's state and changes its tools, HTML,
// sessions and faults.

import { MAX_BODY, log } from './settings.mjs';
import { DEFAULT_HTML, WIDGET_UI_META, initialTools, sha256, state } from './content.mjs';
import { broadcast, sessions } from './sessions.mjs';
import { hanging, readBody, sendJson } from './mcp-endpoint.mjs';

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

/** `url` and `mcpConnections` are the listening server's. */
export async function handleControl(req, res, { url, mcpConnections }) {
  if (req.method === 'GET') {
    return sendJson(res, 200, {
      url,
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
