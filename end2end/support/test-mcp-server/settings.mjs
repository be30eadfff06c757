// The test MCP server's settings, from its environment, and its log (stderr only).

export const log = (...args) => console.error('[test-mcp-server]', ...args);

const rawPort = (process.env.PORT ?? '').trim();
export const PORT = rawPort === '' ? 0 : Number(rawPort);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
  log(`PORT must be an integer between 0 and 65535, got ${JSON.stringify(rawPort)}`);
  process.exit(2);
}
export const JSON_RESPONSE = /^(1|true|yes)$/i.test(process.env.JSON_RESPONSE ?? '');
export const RESUMABLE = /^(1|true|yes)$/i.test(process.env.RESUMABLE ?? '');

export const HOST = '127.0.0.1';

export const APP_MIME = 'text/html;profile=mcp-app';
export const WIDGET_URI = 'ui://test/widget.html';
export const HUGE_BYTES = 9 * 1024 * 1024;
export const MAX_BODY = 32 * 1024 * 1024;
