// Host-drawn approvals, island actions and ask-first host actions (SPEC §6, §8),
// driven through a page built on the official SDK (support/sdk-app.mjs) and strad's test
// MCP server, whose writing tool `send-mail` proposes island actions in
// `_meta["x-strad/actions"]`.
//
import { test, expect } from './fixtures.mjs';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { sdkAppHtml } from '../support/sdk-app.mjs';
import { registerApp, appFrame, run, settled, upstreamCalls } from './app-setup.mjs';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const SERVER = 'Mail Test';
const MAIL = { to: 'alice@example.com', subject: 'Quarterly report', body: 'Attached.' };
const TOKEN = /^v1\.[0-9a-f]{32}\.\d+\.[A-Za-z0-9_-]+$/;

/** What the server proposes after sending: two drawable actions and four it must refuse
 * (six in all: a seventh would be refused for the count alone). */
const PROPOSED = [
  { label: 'Archive thread', tool: 'archive-thread', arguments: { thread: 't-42' }, kind: 'danger' },
  { label: 'Look up sender', tool: 'lookup', arguments: { word: 'alice' } },
  { label: 'Elsewhere', tool: 'archive-thread', server: 'another-server' },
  { label: 'Ghost', tool: 'no-such-tool' },
  { label: 'Hidden', tool: 'model-only' },
  { label: 'Bad kind', tool: 'lookup', kind: 'nuclear' },
];
const DRAWN = ['Archive thread', 'Look up sender'];

const TOOLS = [
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
const SHOW_WIDGET_WITH_ACTIONS = {
  name: 'show-widget',
  description: 'Shows the widget',
  annotations: { readOnlyHint: true },
  inputSchema: { type: 'object', properties: { label: { type: 'string' } } },
  _meta: { ui: { resourceUri: 'ui://test/widget.html' }, 'ui/resourceUri': 'ui://test/widget.html' },
  result: { content: [{ type: 'text', text: 'inbox' }], _meta: { 'x-strad/actions': PROPOSED } },
};

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});
test.afterEach(async ({ mcp }) => {
  await mcp.control({ reset: true });
});

/** Registers the mail server (writing tools ask) with an SDK page and opens its app. */
async function openMailApp(page, strad, mcp, slug, { page: pageOptions = {}, tools = [] } = {}) {
  await registerApp(page, strad, mcp, {
    slug, displayName: SERVER, writing: 'ask', tools: [...TOOLS, ...tools], html: sdkAppHtml({ name: slug, ...pageOptions }),
  });
  await page.goto(`/apps/${slug}`);
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  const app = page.frameLocator('iframe.app-frame');
  await expect(app.getByRole('status')).toHaveText('connected');
  return app;
}

const panel = (page) => page.locator('section.approval-panel[role="dialog"]');

/** Asks for `send-mail` from inside the frame with the page's own controls. */
async function askToSendMail(app, args = MAIL) {
  await app.getByLabel('Tool').fill('send-mail');
  await app.getByLabel('Arguments (JSON)').fill(JSON.stringify(args));
  await app.getByRole('button', { name: 'Call tool' }).click();
}

/** Every `POST /apps/<slug>/<route>` from now on: its status and request body. */
function routeLog(page, slug, route) {
  const seen = [];
  page.on('response', (response) => {
    if (response.url().endsWith(`/apps/${slug}/${route}`) && response.request().method() === 'POST') {
      seen.push({ status: response.status(), body: response.request().postDataJSON() });
    }
  });
  return seen;
}

/** The audit rows of `slug`, of one kind, oldest first. */
async function auditRows(page, slug, kind) {
  const response = await page.request.get(`/audit/export.json?${new URLSearchParams({ slug, kind })}`);
  expect(response.status()).toBe(200);
  return response.json();
}

/** Presses Tab until `isTarget()` holds (at most `max` times); fails otherwise. */
async function tabUntil(page, isTarget, what, max = 40) {
  for (let i = 0; i < max; i++) {
    if (await isTarget()) return;
    await page.keyboard.press('Tab');
  }
  expect(await isTarget(), `Tab never reached ${what}`).toBe(true);
}

/** Whether the host page's focused element is a button named `name`. */
const hostFocusIs = (page, name) => page.evaluate((n) => {
  const el = document.activeElement;
  return el?.tagName === 'BUTTON' && el.textContent.trim() === n;
}, name);

test('a call from the frame waits for Approve and then reaches the server exactly once; Decline and Esc send nothing upstream', async ({ page, strad, mcp }) => {
  const slug = 'approve-frame-call';
  const app = await openMailApp(page, strad, mcp, slug);
  const calls = routeLog(page, slug, 'tools/call');
  const decisions = routeLog(page, slug, 'approvals');
  const frame = page.locator('iframe.app-frame');
  const before = await upstreamCalls(mcp, 'send-mail');

  // Approve.
  await askToSendMail(app);
  const dialog = panel(page);
  await expect(dialog).toBeVisible();
  await expect(dialog).toHaveAttribute('data-prompt', 'tool-call');
  await expect(dialog).toHaveAttribute('aria-modal', 'true');
  await expect(page.getByRole('dialog', { name: /send mail|send-mail/i })).toBeVisible();
  await expect(dialog).toContainText(SERVER);
  await expect(dialog.locator('[data-field="tool"]')).toHaveText('send-mail');
  await expect(dialog).toContainText('Sends an email on your behalf');
  expect(JSON.parse(await dialog.locator('pre[data-field="arguments"]').textContent())).toEqual(MAIL);
  await expect(frame).toHaveAttribute('data-pending-approval', '1');
  // Focus is in the panel; the frame cannot be used behind it.
  expect(await page.evaluate(() => !!document.activeElement?.closest('.approval-panel'))).toBe(true);
  expect(await frame.evaluate((el) => !!el.closest('[inert]'))).toBe(true);
  // Until the person decides, the page has no answer and the server has seen nothing. A wait
  // without an event to wait for: the host is given a moment to misbehave.
  await page.waitForTimeout(1500);
  const first = app.locator('#outcome-1');
  await expect(first).toHaveAttribute('data-state', 'pending');
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before);
  expect(calls.map((c) => c.status)).toEqual([428]);

  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  const { state, record } = await settled(first);
  expect(state).toBe('result');
  const answered = record.result;
  expect(answered.content).toEqual([{ type: 'text', text: 'sent' }]);
  await expect(dialog).toHaveCount(0);
  await expect(page.locator('p.approval-outcome[role="status"]')).toBeVisible();
  await expect(frame).not.toHaveAttribute('data-pending-approval', /[1-9]/);
  const upstream = await mcp.state();
  expect(upstream.calls['send-mail']).toBe(before + 1);
  expect(upstream.callArguments['send-mail'].at(-1)).toEqual(MAIL);
  expect(decisions.map((d) => d.body.decision)).toEqual(['approve']);
  expect(calls.map((c) => c.status)).toEqual([428, 200]);
  const approval = calls[1].body.approval;
  expect(approval).toMatch(TOKEN);

  // The same approval, spent, opens nothing again.
  const replay = await page.request.post(`/apps/${slug}/tools/call`, { data: calls[1].body });
  expect(replay.status()).toBe(403);
  expect((await replay.json()).error).toBe('This approval was already used.');
  // An approval is for the exact arguments it was given for.
  const changed = await page.request.post(`/apps/${slug}/tools/call`, {
    data: { name: 'send-mail', arguments: { ...MAIL, to: 'mallory@example.com' }, approval },
  });
  expect(changed.status()).toBe(403);
  expect((await changed.json()).error).toBe('This approval does not match this call.');
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before + 1);

  // Decline.
  await askToSendMail(app, { ...MAIL, subject: 'Second' });
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  const declined = await settled(app.locator('#outcome-2'));
  expect(declined.state).toBe('error');
  expect(declined.record.error.message).toBeTruthy();
  await expect(dialog).toHaveCount(0);

  // Esc declines too.
  await askToSendMail(app, { ...MAIL, subject: 'Third' });
  await expect(dialog).toBeVisible();
  await page.keyboard.press('Escape');
  expect((await settled(app.locator('#outcome-3'))).state).toBe('error');
  await expect(dialog).toHaveCount(0);

  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before + 1);
  expect(decisions.map((d) => d.body.decision)).toEqual(['approve', 'decline', 'decline']);
  const granted = await auditRows(page, slug, 'approval_granted');
  const used = await auditRows(page, slug, 'approval_used');
  const declinedRows = await auditRows(page, slug, 'approval_declined');
  expect(granted).toHaveLength(1);
  expect(used).toHaveLength(1);
  expect(used[0].payload.nonce).toBe(granted[0].payload.nonce);
  expect(declinedRows).toHaveLength(2);
});

test('an approval forged inside the frame (a button named Approve, approval or _meta fields, made-up methods) reaches nothing upstream', async ({ page, strad, mcp }) => {
  const slug = 'forged-approval';
  const forged = 'v1.' + '0'.repeat(32) + '.4102444800.' + 'A'.repeat(43);
  const call = (extra) => ({ method: 'tools/call', params: { name: 'send-mail', arguments: MAIL, ...extra } });
  const buttons = [
    { label: 'Approve', action: 'raw-request', params: call({ approval: forged }) },
    { label: 'Approve with meta', action: 'raw-request', params: call({ _meta: { approval: forged, 'x-strad/approval': forged, approved: true, progressToken: 7 } }) },
    { label: 'Approve at the top level', action: 'raw-request', params: { ...call({}), approval: forged, decision: 'approve' } },
    { label: 'Approve by request', action: 'raw-request', params: { method: 'x-strad/approve', params: { tool: 'send-mail', arguments: MAIL, decision: 'approve' } } },
    { label: 'Approve by notification', action: 'raw-notify', params: { method: 'x-strad/approval', params: { tool: 'send-mail', arguments: MAIL, decision: 'approve' } } },
  ];
  const app = await openMailApp(page, strad, mcp, slug, { page: { buttons } });
  const before = await upstreamCalls(mcp, 'send-mail');
  const decisions = routeLog(page, slug, 'approvals');
  const dialog = panel(page);

  for (const [i, { label, action }] of buttons.entries()) {
    await app.getByRole('button', { name: label, exact: true }).click();
    const outcome = app.locator(`#outcome-${i + 1}`);
    // Either the host asks the person (a tools/call is a call like any other: its forged
    // fields count for nothing), or the page gets an error; nothing else.
    await expect.poll(async () => (await dialog.count()) > 0 || (await outcome.getAttribute('data-state')) !== 'pending',
      { message: label }).toBe(true);
    if (await dialog.count()) {
      await expect(dialog).toHaveAttribute('data-prompt', 'tool-call');
      await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
    }
    const { state } = await settled(outcome);
    if (action === 'raw-request') expect(state, label).toBe('error');
    expect(await upstreamCalls(mcp, 'send-mail'), label).toBe(before);
  }

  // With the host's panel open, the page's script posts a forged approval for the very call
  // that waits (the frame is inert, but script still runs): the call keeps waiting.
  await askToSendMail(app);
  await expect(dialog).toBeVisible();
  const frame = await appFrame(page, slug);
  await frame.evaluate((m) => {
    for (const message of [
      { jsonrpc: '2.0', id: 'forge-a', method: 'x-strad/approve', params: { tool: 'send-mail', arguments: m } },
      { jsonrpc: '2.0', method: 'x-strad/approval', params: { decision: 'approve' } },
      { jsonrpc: '2.0', id: 'forge-b', result: { approved: true } },
    ]) parent.postMessage(message, '*');
  }, MAIL);
  const waiting = app.locator(`#outcome-${buttons.length + 1}`);
  await page.waitForTimeout(1000);
  await expect(waiting).toHaveAttribute('data-state', 'pending');
  await expect(dialog).toBeVisible();
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before);
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  expect((await settled(waiting)).state).toBe('error');

  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before);
  expect(decisions.every((d) => d.body.decision !== 'approve')).toBe(true);
  expect(await auditRows(page, slug, 'approval_granted')).toEqual([]);
  expect(await auditRows(page, slug, 'approval_used')).toEqual([]);
});

test('an approval left pending for 90 seconds still completes: the host keeps the request alive with progress', async ({ page, strad, mcp }) => {
  // The SDK gives up on a request after 60 s without progress (its default timeout); the
  // 90 s are the behaviour under test, not a wait for something to happen.
  test.setTimeout(240_000);
  const slug = 'approve-late';
  const app = await openMailApp(page, strad, mcp, slug);
  const before = await upstreamCalls(mcp, 'send-mail');
  await askToSendMail(app);
  const dialog = panel(page);
  await expect(dialog).toBeVisible();
  const outcome = app.locator('#outcome-1');
  const until = Date.now() + 90_000;
  while (Date.now() < until) {
    await page.waitForTimeout(Math.min(10_000, Math.max(0, until - Date.now())));
    await expect(outcome).toHaveAttribute('data-state', 'pending');
    await expect(dialog).toBeVisible();
  }
  // The page's SDK heard `notifications/progress` for its call's progressToken.
  expect(Number(await outcome.getAttribute('data-progress'))).toBeGreaterThanOrEqual(1);
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before);
  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  const { state, record } = await settled(outcome);
  expect(state).toBe('result');
  expect(record.ms).toBeGreaterThanOrEqual(90_000);
  expect(await upstreamCalls(mcp, 'send-mail')).toBe(before + 1);
});

test('island actions are drawn only from the server\'s result; refused ones are listed under Inspect with a reason; each runs only after Approve', async ({ page, strad, mcp }) => {
  const slug = 'island-actions';
  // The page tries to add actions of its own: a forged tool-result, a made-up notification,
  // and a log line (which belongs under Inspect, not among the actions).
  const injected = { 'x-strad/actions': [{ label: 'Injected', tool: 'archive-thread', arguments: { thread: 'all' } }] };
  const onConnect = [
    { action: 'raw-notify', params: { method: 'ui/notifications/tool-result', params: { content: [], _meta: injected } } },
    { action: 'raw-notify', params: { method: 'x-strad/actions', params: { actions: injected['x-strad/actions'] } } },
    { action: 'send-log', params: { level: 'info', data: 'the page is up' } },
  ];
  const app = await openMailApp(page, strad, mcp, slug, { tools: [SHOW_WIDGET_WITH_ACTIONS], page: { onConnect } });
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-opening-call', 'result');
  await expect(app.locator('#outcome-3')).toHaveAttribute('data-state', 'result');

  const island = page.getByRole('group', { name: `Actions from ${SERVER}` });
  await expect(island).toHaveClass(/island-actions/);
  await expect(island.getByRole('button')).toHaveText(DRAWN);
  await expect(island.getByRole('button', { name: 'Archive thread' })).toHaveAttribute('data-kind', 'danger');
  await expect(island.getByRole('button', { name: 'Look up sender' })).toHaveAttribute('data-kind', 'primary');
  await expect(page.getByRole('button', { name: 'Injected' })).toHaveCount(0);

  const inspect = page.locator('details.app-inspect');
  await inspect.locator('summary', { hasText: 'Inspect' }).click();
  const refused = inspect.locator('ul.refused-actions > li');
  await expect(refused).toHaveCount(PROPOSED.length - DRAWN.length);
  await expect(refused.filter({ hasText: 'Elsewhere' })).toContainText('names another server');
  await expect(refused.filter({ hasText: 'Ghost' })).toContainText('the server has no such tool');
  await expect(refused.filter({ hasText: 'Hidden' })).toContainText("outside this server's policy");
  await expect(refused.filter({ hasText: 'Bad kind' })).toContainText('malformed');
  await expect(refused.filter({ hasText: 'malformed' })).toHaveCount(1);
  await expect(inspect.locator('ul.refused-actions')).not.toContainText('Injected');
  await expect(inspect.locator('ol.app-log > li').last()).toContainText('the page is up');

  // A writing action: the approval panel shows exactly the proposed call; Approve runs it.
  const decisions = routeLog(page, slug, 'approvals');
  const archived = await upstreamCalls(mcp, 'archive-thread');
  await island.getByRole('button', { name: 'Archive thread' }).click();
  const dialog = panel(page);
  await expect(dialog).toHaveAttribute('data-prompt', 'tool-call');
  await expect(dialog.locator('[data-field="tool"]')).toHaveText('archive-thread');
  await expect(dialog).toContainText('Archives a thread');
  expect(JSON.parse(await dialog.locator('pre[data-field="arguments"]').textContent())).toEqual({ thread: 't-42' });
  expect(await upstreamCalls(mcp, 'archive-thread')).toBe(archived);
  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  await expect(page.locator('p.approval-outcome[role="status"]')).toBeVisible();
  await expect.poll(() => upstreamCalls(mcp, 'archive-thread')).toBe(archived + 1);
  expect((await mcp.state()).callArguments['archive-thread'].at(-1)).toEqual({ thread: 't-42' });

  // A read-only action asks too; declined, it runs nothing.
  const looked = await upstreamCalls(mcp, 'lookup');
  await island.getByRole('button', { name: 'Look up sender' }).click();
  await expect(dialog).toBeVisible();
  expect(JSON.parse(await dialog.locator('pre[data-field="arguments"]').textContent())).toEqual({ word: 'alice' });
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  expect(decisions.map((d) => [d.body.tool, d.body.decision])).toEqual([['archive-thread', 'approve'], ['lookup', 'decline']]);
  expect(await upstreamCalls(mcp, 'lookup')).toBe(looked);
  expect(await upstreamCalls(mcp, 'archive-thread')).toBe(archived + 1);
});

test('open-link outside the allow-list, download and clipboard each wait for the person; declined, nothing is done; the audit shows each decision', async ({ page, strad, mcp, context }) => {
  const slug = 'host-actions';
  // Links go nowhere off this machine: the browser answers them itself.
  await context.route(/^https:\/\/[^/]*\.example(\.org)?\//, (route) =>
    route.fulfill({ status: 200, contentType: 'text/plain', body: 'a page elsewhere' }));
  const app = await openMailApp(page, strad, mcp, slug);
  // The allow-list is set on the server's admin page, one host per line.
  await page.goto(`/admin/servers/${slug}`);
  await page.getByLabel(/Hosts, one per line/).fill('docs.example.org\n*.allowed.example');
  await page.getByRole('button', { name: 'Save hosts' }).click();
  await expect.poll(async () => (await auditRows(page, slug, 'link_hosts_changed')).length).toBe(1);
  await page.goto(`/apps/${slug}`);
  await expect(app.getByRole('status')).toHaveText('connected');
  const dialog = panel(page);
  const opened = [];
  context.on('page', (p) => opened.push(p));
  const downloads = [];
  page.on('download', (d) => downloads.push(d));

  // An allow-listed host opens at once, with no prompt.
  const tab = context.waitForEvent('page');
  const allowed = await settled(await run(page, slug, 'open-link', { url: 'https://docs.example.org/guide' }));
  expect(allowed.state).toBe('result');
  expect((await tab).url()).toContain('docs.example.org/guide');
  await expect(dialog).toHaveCount(0);

  // Outside the list: the prompt shows the full URL and the host, decoded and encoded.
  const outside = 'https://bücher.example/path?q=1#top';
  let outcome = await run(page, slug, 'open-link', { url: outside });
  await expect(dialog).toHaveAttribute('data-prompt', 'open-link');
  await expect(dialog.locator('[data-field="url"]')).toContainText('/path?q=1#top');
  await expect(dialog.locator('[data-field="host"]')).toHaveText('bücher.example');
  await expect(dialog.locator('[data-field="host-ascii"]')).toHaveText('xn--bcher-kva.example');
  await page.waitForTimeout(500);
  await expect(outcome).toHaveAttribute('data-state', 'pending');
  const before = opened.length;
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  let declined = await settled(outcome);
  expect(declined.state === 'error' || declined.record.result?.isError === true).toBe(true);
  expect(opened.length).toBe(before);
  outcome = await run(page, slug, 'open-link', { url: outside });
  const approvedTab = context.waitForEvent('page');
  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  expect(new URL((await approvedTab).url()).hostname).toBe('xn--bcher-kva.example');
  expect((await settled(outcome)).state).toBe('result');

  // Download: each file is listed; declined, no file is saved.
  const contents = [
    { type: 'resource', resource: { uri: 'file:///report.txt', mimeType: 'text/plain', text: 'a report' } },
    { type: 'resource_link', uri: 'file:///test/readme.txt', name: 'readme.txt', mimeType: 'text/plain' },
  ];
  outcome = await run(page, slug, 'download-file', { contents });
  await expect(dialog).toHaveAttribute('data-prompt', 'download');
  await expect(dialog).toContainText('report.txt');
  await expect(dialog).toContainText('readme.txt');
  await expect(dialog).toContainText('text/plain');
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  declined = await settled(outcome);
  expect(declined.state === 'error' || declined.record.result?.isError === true).toBe(true);
  expect(downloads).toEqual([]);
  outcome = await run(page, slug, 'download-file', { contents });
  await expect(dialog).toHaveAttribute('data-prompt', 'download');
  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  expect((await settled(outcome)).state).toBe('result');
  await expect.poll(() => downloads.map((d) => d.suggestedFilename()).sort()).toEqual(['readme.txt', 'report.txt']);
  const saved = Object.fromEntries(await Promise.all(downloads.map(async (d) => [d.suggestedFilename(), readFileSync(await d.path(), 'utf8')])));
  expect(saved).toEqual({ 'report.txt': 'a report', 'readme.txt': 'This is not an app resource.\n' });

  // Clipboard: the text is shown; declined, the clipboard keeps what it had.
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: strad.baseURL });
  await page.evaluate(() => navigator.clipboard.writeText('before'));
  const text = 'copied from the app';
  outcome = await run(page, slug, 'raw-request', { method: 'x-strad/clipboard-write', params: { text } });
  await expect(dialog).toHaveAttribute('data-prompt', 'clipboard');
  await expect(dialog).toContainText(text);
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  expect((await settled(outcome)).state).toBe('error');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('before');
  outcome = await run(page, slug, 'raw-request', { method: 'x-strad/clipboard-write', params: { text } });
  await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
  expect((await settled(outcome)).state).toBe('result');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(text);

  // Each decision is in the audit, through the API and on the auditor's page.
  const rows = (await auditRows(page, slug, 'host_action')).map((r) => [r.payload.action, r.payload.decision]);
  expect(rows).toEqual([
    ['open-link', 'allowed'], ['open-link', 'declined'], ['open-link', 'approved'],
    ['download', 'declined'], ['download', 'approved'],
    ['clipboard', 'declined'], ['clipboard', 'approved'],
  ]);
  await page.goto(`/audit?${new URLSearchParams({ slug, kind: 'host_action' })}`);
  await expect(page.locator('tr[data-kind="host_action"]')).toHaveCount(rows.length);
});

test('full screen and back work from the keyboard alone, and the approval panel is keyboard-operable and clean under axe', async ({ page, strad, mcp }) => {
  const slug = 'display-mode';
  const app = await openMailApp(page, strad, mcp, slug);
  const area = page.locator('.app-area');
  await expect(area).toHaveAttribute('data-display-mode', 'inline');
  const init = JSON.parse(await app.locator('#host-info').textContent());
  expect(init.hostContext.availableDisplayModes).toContain('fullscreen');
  const frame = await appFrame(page, slug);
  const frameFocusIs = (name) => frame.evaluate((n) => document.activeElement?.textContent?.trim() === n, name);

  // Into full screen with the page's own button, reached with Tab (the host focuses the frame).
  await tabUntil(page, () => frameFocusIs('Full screen'), 'the app\'s Full screen button');
  await page.keyboard.press('Enter');
  await expect(area).toHaveAttribute('data-display-mode', 'fullscreen');
  expect((await settled(app.locator('#outcome-1'))).record.result).toEqual({ mode: 'fullscreen' });
  await expect.poll(async () => JSON.parse((await app.locator('#host-context').textContent()) || '{}').displayMode).toBe('fullscreen');
  const viewport = page.viewportSize();
  const box = await page.locator('iframe.app-frame').boundingBox();
  expect(box.width).toBeGreaterThanOrEqual(viewport.width * 0.9);
  expect(box.height).toBeGreaterThanOrEqual(viewport.height * 0.75);

  // Back with the host's button, reached with Tab.
  await tabUntil(page, () => hostFocusIs(page, 'Exit full screen'), 'Exit full screen');
  await page.keyboard.press('Enter');
  await expect(area).toHaveAttribute('data-display-mode', 'inline');
  await expect.poll(async () => JSON.parse(await app.locator('#host-context').textContent()).displayMode).toBe('inline');
  await expect(page.getByRole('button', { name: 'Exit full screen' })).toHaveCount(0);

  // Again, and Esc on the host page returns to inline.
  await tabUntil(page, () => frameFocusIs('Full screen'), 'the app\'s Full screen button');
  await page.keyboard.press('Enter');
  await expect(area).toHaveAttribute('data-display-mode', 'fullscreen');
  await tabUntil(page, () => hostFocusIs(page, 'Exit full screen'), 'Exit full screen');
  await page.keyboard.press('Escape');
  await expect(area).toHaveAttribute('data-display-mode', 'inline');

  // The approval panel: focus moves into it, Tab stays in it, axe finds nothing, Esc declines.
  await askToSendMail(app);
  const dialog = panel(page);
  await expect(dialog).toBeVisible();
  await expect(dialog.locator('#approval-title')).toBeVisible();
  await expect(dialog).toHaveAttribute('aria-labelledby', 'approval-title');
  expect(await page.evaluate(() => !!document.activeElement?.closest('.approval-panel'))).toBe(true);
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => !!document.activeElement?.closest('.approval-panel')), `Tab ${i + 1}`).toBe(true);
  }
  await page.evaluate(AXE);
  const inPanel = await page.evaluate(() => window.axe.run('.approval-panel', { resultTypes: ['violations'] }));
  expect(inPanel.violations.map((v) => `${v.id} (${v.impact})`)).toEqual([]);
  const whole = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  expect(whole.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
  await tabUntil(page, () => hostFocusIs(page, 'Approve'), 'Approve', 10);
  await tabUntil(page, () => hostFocusIs(page, 'Decline'), 'Decline', 10);
  await page.keyboard.press('Enter');
  await expect(dialog).toHaveCount(0);
  // Outcomes 1 and 2 were the two requests for full screen.
  expect((await settled(app.locator('#outcome-3'))).state).toBe('error');
});

test('a flood of thousands of requests is answered in full and promptly, and a request right after thousands of notifications gets its result', async ({ page, strad, mcp }) => {
  const slug = 'flood';
  await openMailApp(page, strad, mcp, slug);
  const frame = await appFrame(page, slug);

  // 3000 requests at once, posted by the page's script as fast as it can.
  const flood = await frame.evaluate(async (count) => {
    const started = performance.now();
    const answers = new Map();
    const heard = new Promise((resolve) => {
      addEventListener('message', (event) => {
        const m = event.data;
        if (event.source !== parent || typeof m?.id !== 'string' || !m.id.startsWith('flood-')) return;
        if (!answers.has(m.id)) answers.set(m.id, { ms: performance.now() - started, error: m.error ?? null });
        if (answers.size === count) resolve();
      });
    });
    for (let i = 0; i < count; i++) parent.postMessage({ jsonrpc: '2.0', id: `flood-${i}`, method: 'ping', params: {} }, '*');
    await Promise.race([heard, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    const all = [...answers.values()];
    return {
      answered: all.length,
      errors: all.filter((a) => a.error).length,
      errorsWithoutMessage: all.filter((a) => a.error && !a.error.message).length,
      slowestMs: Math.max(0, ...all.map((a) => a.ms)),
    };
  }, 3000);
  expect(flood.answered).toBe(3000);
  expect(flood.errorsWithoutMessage).toBe(0);
  expect(flood.slowestMs).toBeLessThan(10_000);

  // Thousands of notifications, then at once an ordinary request: it gets its result.
  const after = await frame.evaluate(async (count) => {
    for (let i = 0; i < count; i++) {
      parent.postMessage({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'debug', data: `n${i}` } }, '*');
    }
    return new Promise((resolve) => {
      const started = performance.now();
      addEventListener('message', (event) => {
        if (event.source === parent && event.data?.id === 'after-burst') resolve({ ...event.data, ms: performance.now() - started });
      });
      parent.postMessage({ jsonrpc: '2.0', id: 'after-burst', method: 'ping', params: {} }, '*');
      setTimeout(() => resolve({ unanswered: true }), 5_000);
    });
  }, 5000);
  expect(after.unanswered).toBeUndefined();
  expect(after.error).toBeUndefined();
  expect(after.result).toEqual({});

  // The app keeps working: a real call round-trips, and the log under Inspect stays bounded.
  const { state } = await settled(await run(page, slug, 'call-tool', { name: 'lookup', arguments: { word: 'after' } }));
  expect(state).toBe('result');
  const inspect = page.locator('details.app-inspect');
  await inspect.locator('summary', { hasText: 'Inspect' }).click();
  expect(await inspect.locator('ol.app-log > li').count()).toBeLessThanOrEqual(100);
});
