// The load generator's HTTP client: plain `node:http` over keep-alive agents, so the Host
// header can name the sandbox origin while the connection goes to nginx on 127.0.0.1, and
// every answer reports which instance gave it (nginx's X-Strad-Upstream).
import http from 'node:http';

/** A keep-alive agent; every worker gets its own, so workers never queue for a socket. */
export function agent() {
  return new http.Agent({ keepAlive: true, maxSockets: 4 });
}

/** How a request ended when it did not get an answer. */
export class NetworkError extends Error {}

/**
 * One request. `url` names the path and, by its host, the Host header; the connection goes
 * to `connectTo` ({host, port}) when given. Answers {status, headers, body} (body a string);
 * throws NetworkError when no answer came within `timeout` ms.
 */
export function request(method, url, { headers = {}, body, agent: via, connectTo, timeout = 10_000 } = {}) {
  const target = new URL(url);
  const payload = body === undefined ? undefined : Buffer.from(body);
  return new Promise((resolve, reject) => {
    const req = http.request({
      method,
      host: connectTo?.host ?? target.hostname,
      port: connectTo?.port ?? target.port,
      path: target.pathname + target.search,
      agent: via,
      headers: {
        host: target.host,
        ...(payload ? { 'content-length': payload.length } : {}),
        ...headers,
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (error) => reject(new NetworkError(error.code || error.message)));
    });
    req.setTimeout(timeout, () => req.destroy(new Error('timeout')));
    req.on('error', (error) => reject(new NetworkError(error.code || error.message)));
    if (payload) req.write(payload);
    req.end();
  });
}

/** A form body, as the console's server functions take it. */
export const form = (fields) => new URLSearchParams(fields).toString();

/** The JSON-RPC messages of an MCP answer: a JSON body, or the `data:` lines of SSE. */
export function rpcMessages(answer) {
  const type = answer.headers['content-type'] || '';
  if (type.includes('text/event-stream')) {
    return answer.body.split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .filter((data) => data.length > 0)
      .map((data) => JSON.parse(data));
  }
  if (answer.body.trim() === '') return [];
  const parsed = JSON.parse(answer.body);
  return Array.isArray(parsed) ? parsed : [parsed];
}
