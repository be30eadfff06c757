// MCP sessions: one SDK `McpServer` per session, its handlers answering from the shared
// state, and the list_changed notifications sent to every session.

import { BUILTIN_RESULTS, RESOURCES, readResource, state } from './content.mjs';
import { log } from './settings.mjs';

const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
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

/** Every event of a session's streams, in order, for resumption (RESUMABLE=1). */
export class EventLog {
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

/** sessionId -> {transport, mcp, sse: number of open standalone GET streams} */
export const sessions = new Map();

export function makeMcpServer() {
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

export function broadcast(kind) {
  for (const [id, s] of sessions) {
    const send =
      kind === 'tools' ? s.mcp.server.sendToolListChanged() : s.mcp.server.sendResourceListChanged();
    Promise.resolve(send).catch((e) => log(`session ${id}: cannot send ${kind} list_changed: ${e.message}`));
  }
  log(`sent notifications/${kind}/list_changed to ${sessions.size} session(s)`);
}
