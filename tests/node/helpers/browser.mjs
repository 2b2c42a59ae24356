// browser.mjs (test helper): headless Chromium through playwright-core, launched the way this
// machine needs (toolchain-notes: Debian's /usr/bin/chromium, a fresh profile, no background
// networking). NEEDLE_PLAYWRIGHT names another playwright-core module, NEEDLE_CHROMIUM another binary.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const chromium = process.env.NEEDLE_CHROMIUM ?? '/usr/bin/chromium';
let playwright = null;
try { playwright = await import(process.env.NEEDLE_PLAYWRIGHT ?? 'playwright-core'); } catch { playwright = null; }

// Why a browser test cannot run here (false when it can).
export const browserMissing = !playwright ? 'needs playwright-core' : !fs.existsSync(chromium) ? 'needs Chromium' : false;

// Runs body(context) in a fresh persistent browser context; closes it and removes its profile after.
// `options`: more launchPersistentContext options (viewport, serviceWorkers, ...); `args`: more
// command-line flags.
export async function withBrowser(body, { args = [], ...options } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-chromium-'));
  const context = await playwright.chromium.launchPersistentContext(dir, {
    executablePath: chromium, headless: true, ...options,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', ...args],
  });
  try {
    return await body(context);
  } finally {
    await context.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
