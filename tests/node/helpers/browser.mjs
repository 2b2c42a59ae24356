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

const TYPES = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

// Runs `html` (a module script that sets window.result when it is done) in a cross-origin isolated
// page (COOP/COEP: shared memory and workers) served on 127.0.0.1: `/` is the html, `files` maps
// URL paths to files, and any other path is a file under one of `dirs` (folders of the repository
// `root`, e.g. site/). Resolves to window.result, or to {error} when Chromium cannot run or the page
// fails (its last errors in the message). The benches' Chromium figures use it.
export async function runIsolatedPage({ root, html, files = {}, dirs = [], timeoutMs = 20 * 60 * 1000 }) {
  if (browserMissing) return { error: `skipped (${browserMissing})` };
  const http = await import('node:http');
  const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/') { res.writeHead(200, { ...headers, 'Content-Type': 'text/html' }); res.end(html); return; }
    const file = files[url.pathname] ?? path.join(root, path.normalize(url.pathname));
    const allowed = files[url.pathname] || dirs.some((dir) => file.startsWith(path.join(root, dir) + path.sep));
    if (!allowed || !fs.existsSync(file)) { res.writeHead(404, headers); res.end(); return; }
    const body = fs.readFileSync(file);
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'Content-Length': body.length });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const seen = [];  // what the page said (its errors, a crash), for a failure's message
  try {
    return await withBrowser(async (context) => {
      const tab = await context.newPage();
      tab.on('console', (m) => seen.push(`console: ${m.text()}`));
      tab.on('pageerror', (e) => seen.push(`page error: ${e.message}`));
      tab.on('crash', () => seen.push('the page crashed'));
      await tab.goto(`http://127.0.0.1:${server.address().port}/`);
      await tab.waitForFunction(() => window.result, null, { timeout: timeoutMs, polling: 1000 });
      return tab.evaluate(() => window.result);
    });
  } catch (e) {
    return { error: `${e.message}${seen.length ? ` (${seen.slice(-5).join('; ')})` : ''}` };
  } finally {
    server.close();
  }
}
