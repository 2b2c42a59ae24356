// The published page and the browsers that cannot run it, in headless Chromium: the folder that
// scripts/build-site.sh writes (BUILD/site/), served under a sub-path by a plain static file server
// that sends no isolation headers, becomes cross-origin isolated through its service worker (one
// reload) and answers a ready-made request with the expected call; with service workers blocked it
// shows why it cannot run; and a browser without SharedArrayBuffer gets the plain message, never a
// broken page. docs/page.md, "Tests".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { withBrowser } from './helpers/browser.mjs';
import { buildDir, ensureWasm, root } from './helpers/engine.mjs';
import { STEP_TIMEOUT, lastTurn, modelsDir, opening, pageSkip, pageSkipNoModel, screenshot, shipped, toolsets, withPage } from './helpers/page.mjs';

const siteDir = path.join(buildDir, 'site');
const PREFIX = '/needlework/';
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm' };

// A plain static file server of `dir` under PREFIX: a content type and the bytes, no other header.
function staticServer(dir) {
  const server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const rel = p.startsWith(PREFIX) ? p.slice(PREFIX.length) || 'index.html' : null;
    const file = rel && path.join(dir, rel);
    if (!file || !file.startsWith(dir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    const body = fs.readFileSync(file);
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Waits for a condition across the service worker's reload (which destroys the page's context).
async function until(page, fn, ms = 180000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await new Promise((r) => setTimeout(r, 100))) {
    try { if (await page.evaluate(fn)) return; } catch { /* the page is reloading */ }
  }
  throw new Error(`not within ${ms} ms: ${fn}`);
}

test('the build/site folder on a static server without isolation headers becomes isolated and answers a request',
  { skip: pageSkip, timeout: 900000 }, async () => {
    ensureWasm();
    execFileSync('bash', [path.join(root, 'scripts', 'build-site.sh'), buildDir],
      { stdio: 'pipe', env: { ...process.env, NEEDLE_MODELS_DIR: modelsDir } });
    const files = fs.readdirSync(siteDir, { recursive: true }).map(String).sort();
    for (const f of ['index.html', 'app.mjs', 'sw.js', 'engine.wasm', 'toolcall.mjs', 'toolcall.wasm', 'models.json',
      'toolsets.json', path.join('engine', 'worker.mjs'), path.join('ui', 'download.mjs'), path.join('models', path.basename(shipped.url))])
      assert.ok(files.includes(f), `build/site has ${f}`);
    assert.ok(!files.includes('server.mjs'), 'the dev server is not published');
    const archive = fs.readFileSync(path.join(siteDir, shipped.url));
    assert.equal(crypto.createHash('sha256').update(archive).digest('hex'), shipped.sha256);

    const server = await staticServer(siteDir);
    const url = `http://127.0.0.1:${server.address().port}${PREFIX}`;
    try {
      // With service workers blocked the page cannot become isolated: it says so.
      await withBrowser(async (context) => {
        context.setDefaultTimeout(STEP_TIMEOUT);
        const page = await context.newPage();
        await page.goto(url);
        await page.waitForSelector('#support:not([hidden])');
        assert.equal(await page.getAttribute('#support', 'data-reason'), 'isolation');
        assert.match(await page.textContent('#support-title'), /not cross-origin isolated/);
        assert.equal(await page.isHidden('#app'), true);
        await screenshot(page, 'page-no-isolation.png');
      }, { serviceWorkers: 'block' });

      await withBrowser(async (context) => {
        context.setDefaultTimeout(STEP_TIMEOUT);
        const page = await context.newPage();
        const errors = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        const response = await page.goto(url);
        assert.equal(response.headers()['cross-origin-embedder-policy'], undefined, 'the server sends no isolation header');
        await until(page, () => globalThis.crossOriginIsolated === true && !!document.querySelector('label.model'));
        assert.equal(await page.isHidden('#support'), true);
        const set = toolsets[3];
        await page.selectOption('#toolset', set.id);
        assert.match(await opening(page, () => page.click('#open')), /is open \(.*downloaded and kept for offline use/);
        await page.click('#example');
        await page.press('#query', 'Enter');
        const turn = await lastTurn(page);
        assert.equal(turn.state, 'done', turn.error);
        assert.deepEqual(turn.calls, set.example.calls, `"${set.example.request}" -> ${turn.reply}`);
        await screenshot(page, 'page-static.png');
        assert.deepEqual(errors, []);
      });
    } finally {
      server.close();
    }
  });

test('a browser without SharedArrayBuffer gets a plain message, not a broken page', { skip: pageSkipNoModel, timeout: 600000 }, async () => {
  await withPage({}, async ({ page, url, errors }) => {
    await page.addInitScript(() => { delete globalThis.SharedArrayBuffer; });
    await page.goto(url);
    await page.waitForSelector('#support:not([hidden])');
    assert.equal(await page.getAttribute('#support', 'data-reason'), 'sab');
    assert.equal(await page.textContent('#support-title'), 'This browser does not offer SharedArrayBuffer.');
    assert.match(await page.textContent('#support-text'), /Update the browser/);
    assert.equal(await page.isHidden('#app'), true);
    await screenshot(page, 'page-no-sab.png');
    assert.deepEqual(errors, []);
  });
});
