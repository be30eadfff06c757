// How every browser test and benchmark starts Chromium: Debian's package (never a
// downloaded browser), headless, with nothing of its own reaching the network.

/** Launch options for Debian's Chromium; `extraArgs` after the usual flags. */
export function chromiumOptions(extraArgs = []) {
  return {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', ...extraArgs],
  };
}
