// Opening, keeping and letting go of a model, in headless Chromium on the dev server: a Cache API
// copy of the wrong size is dropped and downloaded again, and so is one of the right size with the
// wrong bytes (the sha256 computed while streaming); Cancel in the middle of a download keeps
// nothing; Delete removes the copy; a truncated file from disk is refused with the engine's reason
// and the page stays usable; a file dropped on the page opens; a URL on a server that allows no
// cross-origin reads gets a plain message, one that allows them opens; Unload frees the memory
// (shown before and after) and the model opens again. docs/page.md, "Tests".
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { downloads, lastTurn, opening, openListed, pageSkip, screenshot, send, shipped, shippedPath, toolsets, waitOpened, withPage }
  from './helpers/page.mjs';

const file = path.basename(shipped.url);

// The Cache API copy of the shipped model as the page holds it: null, or {bytes, sha256} of its body.
const cachedCopy = (page, url) => page.evaluate(async (key) => {
  const hit = await (await caches.open('needlework-models')).match(key);
  if (!hit) return null;
  const body = new Uint8Array(await hit.arrayBuffer());
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body));
  return { bytes: body.length, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('') };
}, url);

// Puts `bytes` (an array of numbers) into the cache as the shipped model's copy, with `headers`.
const plantCopy = (page, url, bytes, headers) => page.evaluate(async ({ key, body, h }) => {
  await (await caches.open('needlework-models')).put(key, new Response(new Uint8Array(body), { headers: h }));
}, { key: url, body: bytes, h: headers });

const badgeShown = (page) => page.isVisible('label.model >> nth=0 >> .badge');

test('a wrong cached copy is replaced, Cancel keeps nothing, Delete removes the copy', { skip: pageSkip, timeout: 900000 }, async () => {
  await withPage({}, async ({ page, context, url, log, errors }) => {
    const modelUrl = new URL(shipped.url, url).href;
    await page.goto(url);
    await page.waitForSelector('label.model');

    // A copy of the wrong size: the probe drops it (no badge, nothing opens by itself).
    await plantCopy(page, modelUrl, [1, 2, 3], { 'Content-Length': '3', 'X-Needlework-SHA256': shipped.sha256 });
    await page.reload();
    await page.waitForSelector('label.model');
    await page.waitForFunction(() => !document.getElementById('open').disabled);
    assert.equal(await badgeShown(page), false);
    assert.equal(await cachedCopy(page, modelUrl), null);
    assert.equal(await page.textContent('#model-status'), 'No model open.');

    // A copy of the right size and recorded sha256 whose bytes differ: it opens by itself, fails the
    // sha256 computed while it streams, is deleted and downloaded again.
    const wrong = Array.from(fs.readFileSync(shippedPath));
    wrong[wrong.length >> 1] ^= 0xff;
    await plantCopy(page, modelUrl, wrong, { 'Content-Length': String(shipped.bytes), 'X-Needlework-SHA256': shipped.sha256 });
    assert.equal(downloads(log, file), 0);
    await page.reload();
    assert.match(await waitOpened(page), /is open \(.*downloaded and kept for offline use/);
    assert.equal(downloads(log, file), 1);
    assert.deepEqual(await cachedCopy(page, modelUrl), { bytes: shipped.bytes, sha256: shipped.sha256 });
    assert.equal(await badgeShown(page), true);
    await screenshot(page, 'page-cache-replaced.png');

    // Delete: the copy and its badge go; the open model stays open.
    await page.click('#delete');
    await page.waitForFunction(() => /^Deleted the downloaded copy/.test(document.getElementById('model-status').textContent));
    assert.equal(await cachedCopy(page, modelUrl), null);
    assert.equal(await badgeShown(page), false);
    assert.equal(await page.isDisabled('#delete'), true);

    // Cancel during a slow download: nothing is stored, no engine is left, Open works again.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions',
      { offline: false, latency: 0, downloadThroughput: Math.ceil(shipped.bytes / 20), uploadThroughput: -1 });
    const cancelled = await opening(page, async () => {
      await page.click('#open');
      await page.waitForFunction(() => /^Downloading: [1-9]/.test(document.getElementById('progress-text').textContent));
      await page.click('#cancel');
    });
    assert.equal(cancelled, 'Cancelled. Nothing was kept.');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await screenshot(page, 'page-cancelled.png');
    assert.equal(await cachedCopy(page, modelUrl), null);
    assert.equal(await badgeShown(page), false);
    assert.equal(await page.isDisabled('#send'), true);
    assert.equal(await page.isDisabled('#open'), false);
    assert.match(await openListed(page, file), /downloaded and kept for offline use/);
    assert.deepEqual(await cachedCopy(page, modelUrl), { bytes: shipped.bytes, sha256: shipped.sha256 });
    assert.deepEqual(errors, []);
  });
});

// A server on another origin (another port) that serves the shipped archive, with or without the
// headers that let another site read it.
function otherOrigin(allow) {
  const server = http.createServer((req, res) => {
    const headers = allow ? { 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' } : {};
    const body = fs.readFileSync(shippedPath);
    res.writeHead(200, { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Length': body.length }).end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a truncated file is refused and the page stays usable; a dropped file, a URL, Unload and Open again', { skip: pageSkip, timeout: 900000 }, async () => {
  const closed = await otherOrigin(false);
  const open = await otherOrigin(true);
  try {
    await withPage({}, async ({ page, url, errors }) => {
      await page.goto(url);
      await page.waitForSelector('label.model');
      const archive = fs.readFileSync(shippedPath);

      // A truncated archive from disk: the engine's reason, nothing open, the page works on.
      await page.click('#own-archive summary');
      const refused = await opening(page, () => page.setInputFiles('#file', { name: 'truncated.cact',
        mimeType: 'application/octet-stream', buffer: archive.subarray(0, archive.length >> 1) }));
      assert.match(refused, /^Could not open truncated\.cact: it is not a valid Needle 2 archive \(ERR_[A-Z_]+, record -?\d+\)\.$/);
      assert.equal(await page.isDisabled('#send'), true);
      await screenshot(page, 'page-truncated.png');

      // The same archive whole, dropped on the page.
      const dropped = await opening(page, () => page.evaluate(async (bytes) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([new Uint8Array(bytes)], 'dropped.cact'));
        window.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }, Array.from(archive)));
      const sha = crypto.createHash('sha256').update(archive).digest('hex');
      assert.match(dropped, new RegExp(`^dropped\\.cact is open \\(.*from this computer, sha256 ${sha.slice(0, 16)}…`));
      const set = toolsets[0];
      assert.equal((await send(page, set.example.request)).state, 'done');

      // URLs: a server that allows no cross-origin reads, then one that does.
      const closedUrl = `http://127.0.0.1:${closed.address().port}/model.cact`;
      await page.fill('#url', closedUrl);
      assert.match(await opening(page, () => page.click('#open-url')),
        new RegExp(`^Could not open ${closedUrl.replace(/[.]/g, '\\.')}: the browser could not read it\\. If 127\\.0\\.0\\.1:\\d+ answers at all, ` +
          'it does not allow other sites to read the file \\(it sends no Access-Control-Allow-Origin header\\)'));
      await screenshot(page, 'page-url-refused.png');
      const openUrl = `http://127.0.0.1:${open.address().port}/model.cact`;
      await page.fill('#url', openUrl);
      assert.match(await opening(page, () => page.click('#open-url')), new RegExp(`is open \\(.*from the URL, sha256 ${sha.slice(0, 16)}…`));

      // Unload: the memory before and after; then the listed model opens again and answers.
      await page.click('#unload');
      await page.waitForFunction(() => document.getElementById('memory').dataset.after !== undefined, null, { timeout: 180000 });
      assert.match(await page.textContent('#model-status'), /is unloaded: its \d+ workers? (is|are) stopped and its memory released\.$/);
      const memory = await page.evaluate(() => ({ ...document.getElementById('memory').dataset,
        text: document.getElementById('memory').textContent }));
      assert.match(memory.text, /^Memory: the engine held [\d.]+ MiB; the tab used [\d.]+ MiB before unloading and [\d.]+ MiB after\.$/);
      assert.ok(Number(memory.after) < Number(memory.before), `after ${memory.after} < before ${memory.before}`);
      assert.equal(await page.isDisabled('#send'), true);
      await screenshot(page, 'page-unloaded.png');
      assert.match(await openListed(page, file), /is open/);
      const turn = await send(page, set.example.request);
      assert.equal(turn.state, 'done');
      assert.ok((await lastTurn(page)).stats.length > 0);
      assert.deepEqual(errors, []);
    });
  } finally {
    closed.close();
    open.close();
  }
});
