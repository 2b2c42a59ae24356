// The page as a visitor uses it, in headless Chromium: the dev server (site/server.mjs) with its
// isolation headers, the model list, Open (download with progress into the Cache API), a request
// with the default tools, the streamed reply, and a second visit that reads the cached copy. The
// reply must be the same text the Node engine gives for the same prompt (greedy). Skipped only when
// playwright-core or Chromium is missing (npm test installs both).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { startServer } from '../../site/server.mjs';
import { renderPrompt } from '../../site/prompt.mjs';
import { browserMissing, withBrowser } from './helpers/browser.mjs';
import { buildDir, ensureWasm, model, withEngine } from './helpers/engine.mjs';

const archive = model('tiny.cact');
const skip = browserMissing || (!archive ? 'needs build/models' : false);

const MAX_TOKENS = 24;

async function openTiny(page) {
  await page.waitForFunction(() => document.getElementById('model-select').options.length > 0);
  const labels = await page.$$eval('#model-select option', (os) => os.map((o) => o.textContent));
  const index = labels.findIndex((l) => l.startsWith('tiny.cact '));
  assert.ok(index >= 0, `tiny.cact is not offered: ${labels.join(', ')}`);
  await page.selectOption('#model-select', { index });
  await page.fill('#threads', '2');
  await page.click('#open');
  await page.waitForFunction(() => /is open|Could not open/.test(document.getElementById('model-status').textContent),
    null, { timeout: 60000 });
  const status = await page.textContent('#model-status');
  assert.match(status, /tiny\.cact is open/, status);
  return labels[index];
}

test('a visitor opens a model, sends a request and gets the reply the engine gives', { skip, timeout: 180000 }, async () => {
  ensureWasm();
  const server = await startServer({ port: 0, buildDir });
  const errors = [];
  let shown;
  try {
    await withBrowser(async (context) => {
      const page = await context.newPage();
      page.on('pageerror', (e) => errors.push(String(e)));
      const url = `http://127.0.0.1:${server.address().port}/`;
      await page.goto(url);
      assert.equal(await page.evaluate(() => crossOriginIsolated), true);
      assert.equal(await page.isHidden('#isolation'), true);
      const firstLabel = await openTiny(page);
      assert.ok(!firstLabel.includes('downloaded'), 'a fresh browser has no cached copy');

      await page.click('details summary');  // the sampling settings are folded away by default
      await page.fill('#max-tokens', String(MAX_TOKENS));
      await page.click('#send');
      await page.waitForFunction(() => document.getElementById('timing').textContent !== '' ||
        document.querySelector('#calls .error'), null, { timeout: 90000 });
      shown = {
        reply: await page.textContent('#reply'),
        timing: await page.textContent('#timing'),
        tools: JSON.parse(await page.inputValue('#tools')),
        query: await page.inputValue('#query'),
        calls: await page.textContent('#calls'),
      };
      assert.match(shown.timing, /prompt tokens at \d+ tokens\/s; \d+ generated/);

      // A second visit lists the cached copy and opens it from the Cache API.
      await page.reload();
      const secondLabel = await openTiny(page);
      assert.match(secondLabel, /downloaded/);
    });
  } finally {
    server.close();
  }
  assert.deepEqual(errors, []);

  // The same request through the Node engine, greedy, with the page's stop tokens.
  const expected = await withEngine({ threads: 1 }, 60000, async (engine) => {
    await engine.load(archive);
    const prompt = renderPrompt({ tools: shown.tools, query: shown.query });
    const ids = [engine.tokenizer.bos_id, ...await engine.encode(prompt)];
    const imEnd = (await engine.encode('<|im_end|>', { raw: true }))[0];
    const out = await engine.generate(ids, { maxTokens: MAX_TOKENS, stopIds: [engine.tokenizer.eos_id, imEnd] });
    return engine.decode(out.generated);
  });
  assert.equal(shown.reply, expected);
  assert.ok(shown.calls.length > 0, 'the reply is judged (a tool call or why there is none)');
});
