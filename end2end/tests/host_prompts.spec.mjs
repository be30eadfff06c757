// Island actions and ask-first host actions (SPEC §6, §8): actions drawn only from the
// server's result, open-link, download and clipboard waiting for the person, the panel
// from the keyboard, and the bridge under a flood.
//
import { readFileSync } from 'node:fs';
import { test, expect } from './fixtures.mjs';
import { appFrame, run, settled, upstreamCalls } from './app-setup.mjs';
import { AXE, SERVER, PROPOSED, DRAWN, SHOW_WIDGET_WITH_ACTIONS, openMailApp, panel, askToSendMail, routeLog, auditRows, tabUntil, hostFocusIs } from './approval-setup.mjs';

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});
test.afterEach(async ({ mcp }) => {
  await mcp.control({ reset: true });
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
  // The decision is posted as the panel closes: read once it has gone out.
  await expect.poll(() => decisions.map((d) => [d.body.tool, d.body.decision])).toEqual([['archive-thread', 'approve'], ['lookup', 'decline']]);
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
  // Approve is armed a moment after the panel appears; until then Tab passes it by.
  await expect(dialog.getByRole('button', { name: 'Approve', exact: true })).toBeEnabled();
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

  // The flood spent this second's request budget; wait until a request is answered again,
  // so what follows tests the notifications' budget alone.
  await expect.poll(() => frame.evaluate(() => new Promise((resolve) => {
    const id = `probe-${Math.random()}`;
    addEventListener('message', (event) => {
      if (event.source === parent && event.data?.id === id) resolve(event.data.error ? 'refused' : 'answered');
    });
    parent.postMessage({ jsonrpc: '2.0', id, method: 'ping', params: {} }, '*');
    setTimeout(() => resolve('unanswered'), 2_000);
  })), { timeout: 10_000 }).toBe('answered');

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
  // While Inspect is closed no row is drawn (drawing them for every line is what let a
  // burst delay a request behind it); opened, it shows the last 100 lines.
  const inspect = page.locator('details.app-inspect');
  const rows = inspect.locator('ol.app-log > li');
  expect(await rows.count()).toBe(0);
  await inspect.locator('summary', { hasText: 'Inspect' }).click();
  await expect(rows).toHaveCount(100);
});
