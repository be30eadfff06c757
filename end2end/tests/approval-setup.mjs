// The mail app the approval suites share: strad's test MCP server with a writing tool
// `send-mail` that proposes island actions, under a page built on the official SDK.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { expect } from './fixtures.mjs';
import { sdkAppHtml } from '../support/sdk-app.mjs';
import { registerApp, appFrame, run, settled, upstreamCalls } from './app-setup.mjs';

const require = createRequire(import.meta.url);
export const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const SERVER = 'Mail Test';
export const MAIL = { to: 'alice@example.com', subject: 'Quarterly report', body: 'Attached.' };
export const TOKEN = /^v1\.[0-9a-f]{32}\.\d+\.[A-Za-z0-9_-]+$/;

/** What the server proposes after sending: two drawable actions and four it must refuse
 * (six in all: a seventh would be refused for the count alone). */
export const PROPOSED = [
  { label: 'Archive thread', tool: 'archive-thread', arguments: { thread: 't-42' }, kind: 'danger' },
  { label: 'Look up sender', tool: 'lookup', arguments: { word: 'alice' } },
  { label: 'Elsewhere', tool: 'archive-thread', server: 'another-server' },
  { label: 'Ghost', tool: 'no-such-tool' },
  { label: 'Hidden', tool: 'model-only' },
  { label: 'Bad kind', tool: 'lookup', kind: 'nuclear' },
];
export const DRAWN = ['Archive thread', 'Look up sender'];

export const TOOLS = [
  {
    name: 'send-mail',
    title: 'Send mail',
    description: 'Sends an email on your behalf',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } } },
    result: { content: [{ type: 'text', text: 'sent' }], _meta: { 'x-strad/actions': PROPOSED } },
  },
  { name: 'archive-thread', description: 'Archives a thread', inputSchema: { type: 'object', properties: { thread: { type: 'string' } } } },
  {
    name: 'lookup',
    description: 'Looks a word up',
    annotations: { readOnlyHint: true },
    inputSchema: { type: 'object', properties: { word: { type: 'string' } } },
    result: { content: [{ type: 'text', text: 'found' }] },
  },
  { name: 'model-only', description: 'Not for apps', annotations: { readOnlyHint: true }, _meta: { ui: { visibility: ['model'] } } },
];

/** The declaring tool again, read-only, its opening result proposing the same actions. */
export const SHOW_WIDGET_WITH_ACTIONS = {
  name: 'show-widget',
  description: 'Shows the widget',
  annotations: { readOnlyHint: true },
  inputSchema: { type: 'object', properties: { label: { type: 'string' } } },
  _meta: { ui: { resourceUri: 'ui://test/widget.html' }, 'ui/resourceUri': 'ui://test/widget.html' },
  result: { content: [{ type: 'text', text: 'inbox' }], _meta: { 'x-strad/actions': PROPOSED } },
};

/** Registers the mail server (writing tools ask) with an SDK page and opens its app. */
export async function openMailApp(page, strad, mcp, slug, { page: pageOptions = {}, tools = [] } = {}) {
  await registerApp(page, strad, mcp, {
    slug, displayName: SERVER, writing: 'ask', tools: [...TOOLS, ...tools], html: sdkAppHtml({ name: slug, ...pageOptions }),
  });
  await page.goto(`/apps/${slug}`);
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  const app = page.frameLocator('iframe.app-frame');
  await expect(app.getByRole('status')).toHaveText('connected');
  return app;
}

export const panel = (page) => page.locator('section.approval-panel[role="dialog"]');

/** Asks for `send-mail` from inside the frame with the page's own controls. */
export async function askToSendMail(app, args = MAIL) {
  await app.getByLabel('Tool').fill('send-mail');
  await app.getByLabel('Arguments (JSON)').fill(JSON.stringify(args));
  await app.getByRole('button', { name: 'Call tool' }).click();
}

/** Every `POST /apps/<slug>/<route>` from now on: its status and request body. */
export function routeLog(page, slug, route) {
  const seen = [];
  page.on('response', (response) => {
    if (response.url().endsWith(`/apps/${slug}/${route}`) && response.request().method() === 'POST') {
      seen.push({ status: response.status(), body: response.request().postDataJSON() });
    }
  });
  return seen;
}

/** The audit rows of `slug`, of one kind, oldest first. */
export async function auditRows(page, slug, kind) {
  const response = await page.request.get(`/audit/export.json?${new URLSearchParams({ slug, kind })}`);
  expect(response.status()).toBe(200);
  return response.json();
}

/** Presses Tab until `isTarget()` holds (at most `max` times); fails otherwise. */
export async function tabUntil(page, isTarget, what, max = 40) {
  for (let i = 0; i < max; i++) {
    if (await isTarget()) return;
    await page.keyboard.press('Tab');
  }
  expect(await isTarget(), `Tab never reached ${what}`).toBe(true);
}

/** Whether the host page's focused element is a button named `name`. */
export const hostFocusIs = (page, name) => page.evaluate((n) => {
  const el = document.activeElement;
  return el?.tagName === 'BUTTON' && el.textContent.trim() === n;
}, name);
