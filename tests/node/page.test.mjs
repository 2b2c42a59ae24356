// The page as a new visitor meets it, in headless Chromium on the dev server (site/server.mjs): the
// model list of site/models.json with the shipped model first and chosen, nothing downloaded until
// Open; the download with visible progress (bytes, MB/s, time left: the network is slowed so that
// it lasts about eight seconds); each ready tool set's example request answered with the call
// toolsets.json gives for it; and a reload that opens the downloaded copy from the Cache API by
// itself, with no second download in the server's log, and once more with the network off (the
// service worker's copies of the page's files). docs/page.md, "Tests". The time from
// pressing Send to the first token is reported (not asserted).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import { downloads, lastTurn, opensEnded, pageSkip, screenshot, shipped, toolsets, waitOpened, withPage } from './helpers/page.mjs';

const file = path.basename(shipped.url);
const PROGRESS = /^Downloading: [\d.]+ (kB|MB) of [\d.]+ (kB|MB), [\d.]+ MB\/s, [\d.]+ s left$/;

test('the default model opens with visible progress, answers every ready-made request with the right call, and a reload reads the cache',
  { skip: pageSkip, timeout: 900000 }, async (t) => {
    const firstTokenMs = [];
    const wrong = [];
    await withPage({}, async ({ page, context, url, log, errors }) => {
      await page.goto(url);
      assert.equal(await page.evaluate(() => crossOriginIsolated), true);
      await page.waitForSelector('label.model');
      assert.equal(await page.isHidden('#support'), true);
      const listed = await page.$$eval('label.model', (ls) => ls.map((l) => ({
        url: l.dataset.url, checked: l.querySelector('input').checked, badge: !l.querySelector('.badge').hidden })));
      assert.equal(listed[0].url, new URL(shipped.url, url).href);
      assert.deepEqual(listed[0], { url: listed[0].url, checked: true, badge: false });
      assert.equal(await page.textContent('#model-status'), 'No model open.');
      assert.equal(downloads(log, file), 0, 'nothing downloads until asked');
      assert.equal(await page.isDisabled('#send'), true);

      // Open on a slowed network: the progress is seen, with speed and time left.
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions',
        { offline: false, latency: 0, downloadThroughput: Math.ceil(shipped.bytes / 8), uploadThroughput: -1 });
      await page.evaluate(() => {
        window.progressSeen = [];
        new MutationObserver(() => window.progressSeen.push(document.getElementById('progress-text').textContent))
          .observe(document.getElementById('progress-text'), { childList: true, characterData: true, subtree: true });
      });
      const since = await opensEnded(page);
      await page.click('#open');
      await page.waitForFunction(() => !document.getElementById('progress-box').hidden &&
        / s left$/.test(document.getElementById('progress-text').textContent), null, { timeout: 120000 });
      assert.equal(await page.isVisible('#cancel'), true);
      await screenshot(page, 'page-download.png');
      const status = await waitOpened(page, since);
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
      assert.match(status, new RegExp(`^${shipped.name} is open \\(.*downloaded and kept for offline use`));
      const seen = [...new Set(await page.evaluate(() => window.progressSeen))];
      assert.ok(seen.length >= 3, `progress shown ${seen.length} times`);
      for (const line of seen) assert.match(line, PROGRESS);
      assert.equal(await page.isHidden('#progress-box'), true);
      assert.equal(await page.isVisible('label.model >> nth=0 >> .badge'), true);
      assert.equal(downloads(log, file), 1);

      // Each ready tool set: its example request, sent with Enter, gives the expected call.
      for (const set of toolsets) {
        await page.selectOption('#toolset', set.id);
        assert.deepEqual(JSON.parse(await page.inputValue('#tools')), set.tools);
        await page.click('#example');
        assert.equal(await page.inputValue('#query'), set.example.request);
        await page.press('#query', 'Enter');
        await page.waitForFunction(() => document.querySelectorAll('#turns .turn').length === 1);
        const turn = await lastTurn(page);
        assert.equal(turn.state, 'done', `${set.id}: ${turn.error}`);
        // wrong calls are collected and asserted at the end, so that one run lists every one of them
        if (!isDeepStrictEqual(turn.calls, set.example.calls))
          wrong.push(`${set.id}: "${set.example.request}" -> ${turn.reply.slice(0, 200)}`);
        assert.match(turn.stats, /^\d+ prompt tokens \(\d+ from a reused prefix\) · first token (\d+ ms|\d+\.\d s) after Send · prefill \d+ tok\/s · decode \d+ tok\/s/);
        firstTokenMs.push(turn.sendToFirstMs);
        await page.click('#clear');
      }
      await page.selectOption('#toolset', toolsets[0].id);
      await page.click('#example');
      await page.press('#query', 'Enter');
      await lastTurn(page);
      await screenshot(page, 'page-answer.png');

      // A reload: the chosen model opens by itself from the downloaded copy; the server sends nothing.
      await page.reload();
      assert.match(await waitOpened(page), /is open \(.*read from the downloaded copy/);
      assert.equal(downloads(log, file), 1, 'no second download');
      await screenshot(page, 'page-reload.png');

      // Offline: the service worker's copies of the page's files and the Cache API copy of the model
      // are enough to open it and answer.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      await context.setOffline(true);
      const served = log.length;
      await page.reload();
      assert.match(await waitOpened(page), /is open \(.*read from the downloaded copy/);
      assert.equal(log.length, served, 'nothing asked of the server');
      await page.click('#example');
      await page.press('#query', 'Enter');
      const offline = await lastTurn(page);
      assert.equal(offline.state, 'done', offline.error);
      await screenshot(page, 'page-offline.png');
      await context.setOffline(false);
      assert.deepEqual(errors, []);
    });
    const sorted = [...firstTokenMs].sort((a, b) => a - b);
    t.diagnostic(`Send to first token, ${shipped.name}, ${sorted.length} requests: median ${sorted[sorted.length >> 1].toFixed(0)} ms ` +
      `(${sorted.map((x) => x.toFixed(0)).join(', ')})`);
    assert.deepEqual(wrong, [], 'every example request gives the call toolsets.json expects');
  });
