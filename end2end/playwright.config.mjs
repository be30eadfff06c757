// Browser tests: Playwright driving Debian's Chromium (never a downloaded browser).
// Every test runs twice, as in lemmy-ui-leptos: with JavaScript (the hydrated console)
// and without (the server-rendered console must stand on its own).
import { defineConfig } from '@playwright/test';
import { chromiumOptions } from './chromium.mjs';

const chromium = chromiumOptions(['--disable-quic']);

export default defineConfig({
  testDir: './tests',
  // One strad per worker; one worker keeps the machine's two cores for strad and Chromium.
  workers: 1,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: { launchOptions: chromium, trace: 'retain-on-failure' },
  projects: [
    { name: 'js', use: { javaScriptEnabled: true } },
    { name: 'no-js', use: { javaScriptEnabled: false } },
  ],
});
