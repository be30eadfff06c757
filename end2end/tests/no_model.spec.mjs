// strad has no model (SPEC §6 "Bridge"): `ui/message`, `ui/update-model-context` and
// `sampling/createMessage` are answered at once with a JSON-RPC error (-32601, "not
// supported"), so a page never waits for an answer that will not come; and the host does
// not advertise what it does not do.
import { test, expect } from './fixtures.mjs';
import { sdkAppHtml } from '../support/sdk-app.mjs';
import { registerApp, run, settled } from './app-setup.mjs';

/** Well under the SDK's 60 s request timeout: an answer, not a time-out. */
const PROMPT_MS = 3_000;

test.beforeEach(() => {
  test.skip(!test.info().project.use.javaScriptEnabled, 'apps need the hydrated console');
});

async function openApp(page, strad, mcp, slug) {
  await registerApp(page, strad, mcp, { slug, html: sdkAppHtml({ name: slug }) });
  await page.goto(`/apps/${slug}`);
  await expect(page.locator('iframe.app-frame')).toHaveAttribute('data-app-session', 'initialized');
  const app = page.frameLocator('iframe.app-frame');
  await expect(app.getByRole('status')).toHaveText('connected');
  return app;
}

test('ui/message and ui/update-model-context from the SDK are answered at once with "not supported"', async ({ page, strad, mcp }) => {
  const slug = 'no-model-sdk';
  try {
    const app = await openApp(page, strad, mcp, slug);
    // Pressed as a person would, inside the frame, one after the other; each outcome is
    // found by its action, not by the order the page numbered it in.
    for (const [button, action] of [['Send message', 'send-message'], ['Update model context', 'update-context']]) {
      await app.getByRole('button', { name: button }).click();
      const outcome = app.locator(`pre[data-action="${action}"]`);
      await expect(outcome).toHaveCount(1);
      const { state, record } = await settled(outcome, PROMPT_MS);
      expect(state, action).toBe('error');
      expect(record.error.code, action).toBe(-32601);
      expect(record.error.message, action).toMatch(/not supported/);
      expect(record.ms, action).toBeLessThan(PROMPT_MS);
    }
  } finally {
    await mcp.control({ reset: true });
  }
});

test('sampling/createMessage, ui/message with a single content object, and an empty update are each answered with -32601 "not supported"', async ({ page, strad, mcp }) => {
  const slug = 'no-model-raw';
  try {
    await openApp(page, strad, mcp, slug);
    // Posted by hand: the SDK itself refuses to send sampling to a host without the capability.
    const requests = [
      ['sampling/createMessage', { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 }],
      ['ui/message', { role: 'user', content: { type: 'text', text: 'the spec text shape' } }],
      ['ui/update-model-context', {}],
    ];
    for (const [method, params] of requests) {
      const { state, record } = await settled(await run(page, slug, 'raw-request', { method, params }), PROMPT_MS);
      expect(state, method).toBe('error');
      expect(record.error.code, method).toBe(-32601);
      expect(record.error.message, method).toMatch(/not supported/);
    }
    // A method the host does not know at all is a plain "method not found".
    const { record } = await settled(await run(page, slug, 'raw-request', { method: 'ui/made-up', params: {} }), PROMPT_MS);
    expect(record.error).toEqual({ code: -32601, message: 'method not found' });
  } finally {
    await mcp.control({ reset: true });
  }
});

test('the host advertises neither messages, model context nor sampling to the page', async ({ page, strad, mcp }) => {
  const slug = 'no-model-caps';
  try {
    const app = await openApp(page, strad, mcp, slug);
    const { hostInfo, hostCapabilities } = JSON.parse(await app.locator('#host-info').textContent());
    expect(hostInfo.name).toBe('strad');
    for (const key of ['message', 'updateModelContext', 'sampling']) {
      expect(hostCapabilities, key).not.toHaveProperty(key);
    }
  } finally {
    await mcp.control({ reset: true });
  }
});
