// The engine in a real browser (headless Chromium through playwright-core), as the page runs it:
// the same driver module and workers on one shared memory, on a cross-origin isolated page. The same
// archive, prompt, sampler options and seed must give the same tokens and the same logits as in
// Node. Skipped when playwright-core (NEEDLE_PLAYWRIGHT names another module path) or Chromium
// (/usr/bin/chromium, or NEEDLE_CHROMIUM) is missing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { browserMissing, withBrowser } from './helpers/browser.mjs';
import { ensureWasm, model, root, wasmPath, withEngine } from './helpers/engine.mjs';

const archive = model('tiny.cact');
const skip = browserMissing || (!archive ? 'needs build/models' : false);

const TYPES = { '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html', '.cact': 'application/octet-stream' };

// Serves the repository (the archive at /model.cact, the engine at /engine.wasm) with the headers
// that allow shared memory.
function serve(page) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
    if (url.pathname === '/') { res.writeHead(200, { ...headers, 'Content-Type': 'text/html' }); res.end(page); return; }
    const file = url.pathname === '/model.cact' ? archive : url.pathname === '/engine.wasm' ? wasmPath : path.join(root, url.pathname);
    const allowed = file === archive || file === wasmPath || file.startsWith(root + path.sep);
    if (!allowed || !fs.existsSync(file)) { res.writeHead(404, headers); res.end(); return; }
    const body = fs.readFileSync(file);
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'Content-Length': body.length });
    res.end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const request = { prompt: 'hello there <tool_call>', maxTokens: 16, seed: 4242,
  sampler: { temperature: 0.8, topK: 40, topP: 0.9, minP: 0.02, repetitionPenalty: 1.1 } };

const pageScript = `
import { createEngine } from '/site/engine/needle.mjs';
const r = ${JSON.stringify(request)};
try {
  const engine = await createEngine({ threads: 2, wasm: new URL('/engine.wasm', location.href), maxMemoryBytes: 256 << 20 });
  await engine.load(await fetch('/model.cact'));
  const ids = [engine.tokenizer.bos_id, ...await engine.encode(r.prompt)];
  const out = await engine.generate(ids, { maxTokens: r.maxTokens, sampler: r.sampler, seed: r.seed, stopIds: [], wantRows: true });
  window.result = { ids, generated: out.generated, rows: out.rows.map((row) => Array.from(row)), text: await engine.decode(out.generated),
                    isolated: crossOriginIsolated };
  await engine.close();
} catch (e) { window.result = { error: String(e && e.stack || e) }; }
`;

test('Chromium and Node give the same tokens and logits for the same seed', { skip, timeout: 120000 }, async () => {
  ensureWasm();
  const server = await serve(`<!doctype html><meta charset="utf-8"><script type="module">${pageScript}</script>`);
  let browser;
  try {
    browser = await withBrowser(async (context) => {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${server.address().port}/`);
      await page.waitForFunction(() => window.result, null, { timeout: 100000 });
      return page.evaluate(() => window.result);
    });
  } finally {
    server.close();
  }
  assert.equal(browser.error, undefined, browser.error);
  assert.equal(browser.isolated, true);
  const node = await withEngine({ threads: 2 }, 60000, async (engine) => {
    await engine.load(archive);
    const ids = [engine.tokenizer.bos_id, ...await engine.encode(request.prompt)];
    const out = await engine.generate(ids, { maxTokens: request.maxTokens, sampler: request.sampler, seed: request.seed, stopIds: [], wantRows: true });
    return { ids, generated: out.generated, rows: out.rows.map((row) => Array.from(row)), text: await engine.decode(out.generated) };
  });
  assert.deepEqual(browser.ids, node.ids);
  assert.deepEqual(browser.generated, node.generated);
  assert.equal(browser.text, node.text);
  assert.equal(browser.rows.length, node.rows.length);
  browser.rows.forEach((row, p) => assert.deepEqual(row, node.rows[p], `logits row ${p}`));
});
