// The page as a visitor uses it, in headless Chromium: the dev server (site/server.mjs) with its
// isolation headers, the model list, Open (download with progress into the Cache API), the tools JSON
// checked as it is typed (the error's line and column, Send disabled until it is fixed), a request
// with the default tools, the streamed reply, the constrained call shown as formatted JSON with the
// confidence, and a second visit that reads the cached copy. The page's reply must be the envelope the
// Node engine gives for the same request and seed, which is chosen so that the reply holds a call.
// Skipped only when playwright-core or Chromium is missing (npm test installs both).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { startServer } from '../../site/server.mjs';
import { browserMissing, withBrowser } from './helpers/browser.mjs';
import { buildDir, ensureWasm, model, withEngine } from './helpers/engine.mjs';

// micro.cact: cheap steps, and probe heads, so the page shows a confidence.
const archive = model('micro.cact');
const skip = browserMissing || (!archive ? 'needs build/models' : false);

const MAX_TOKENS = 128;  // a call of get_weather needs about 50 tokens at worst (byte pieces)

async function openMicro(page) {
  await page.waitForFunction(() => document.getElementById('model-select').options.length > 0);
  const labels = await page.$$eval('#model-select option', (os) => os.map((o) => o.textContent));
  const index = labels.findIndex((l) => l.startsWith('micro.cact '));
  assert.ok(index >= 0, `micro.cact is not offered: ${labels.join(', ')}`);
  await page.selectOption('#model-select', { index });
  await page.fill('#threads', '2');
  await page.click('#open');
  await page.waitForFunction(() => /is open|Could not open/.test(document.getElementById('model-status').textContent),
    null, { timeout: 60000 });
  const status = await page.textContent('#model-status');
  assert.match(status, /micro\.cact is open/, status);
  return labels[index];
}

// The page's request for a seed (what app.mjs sends with the sampling fields set as below).
const pageRequest = (tools, query, seed) => ({
  tools, request: query, max_tokens: MAX_TOKENS, temperature: 1, top_k: 0, top_p: 1, min_p: 0,
  repeat_penalty: 1, seed: String(seed),
});

test('a visitor opens a model, types tools, sends a request and gets the constrained call the engine gives',
  { skip, timeout: 240000 }, async () => {
    ensureWasm();
    const server = await startServer({ port: 0, buildDir });
    const errors = [];
    let expected;
    let shown;
    try {
      await withBrowser(async (context) => {
        const page = await context.newPage();
        page.on('pageerror', (e) => errors.push(String(e)));
        const url = `http://127.0.0.1:${server.address().port}/`;
        await page.goto(url);
        assert.equal(await page.evaluate(() => crossOriginIsolated), true);
        assert.equal(await page.isHidden('#isolation'), true);

        // The tools are checked as they are typed, by the tool-call module on the page's thread.
        await page.waitForFunction(() => /valid for the call grammar/.test(document.getElementById('tools-status').textContent));
        const tools = await page.inputValue('#tools');
        const query = await page.inputValue('#query');
        await page.fill('#tools', '[\n  {"name": "t",\n   "parameters": {"type": "object" "properties": {}}}\n]');
        assert.equal(await page.textContent('#tools-status'),
          'tools JSON at line 3, column 36: expected \',\' or \'}\' after an object member');
        await page.fill('#tools', '[{"name": "t", "parameters": {"type": "object", "properties": {"p": {"type": "string", "format": "date"}}}}]');
        assert.equal(await page.textContent('#tools-status'), 'tool "t" parameter "p": "format" is not supported');
        await page.fill('#tools', tools);
        assert.match(await page.textContent('#tools-status'), /^2 tools, valid/);

        const firstLabel = await openMicro(page);
        assert.ok(!firstLabel.includes('downloaded'), 'a fresh browser has no cached copy');

        // A seed whose reply holds a call, found with the Node engine (random weights: most replies
        // are [] or think text, some call a tool).
        expected = await withEngine({ threads: 1 }, 120000, async (engine) => {
          await engine.load(archive);
          for (let seed = 0; seed < 200; seed++) {
            const envelope = await engine.complete(pageRequest(tools, query, seed));
            if (envelope.function_calls.length > 0 && envelope.success) return { seed, envelope };
          }
          throw new Error('no seed below 200 gives a call');
        });

        // With invalid tools Send is disabled; with valid ones it sends.
        await page.fill('#tools', '[{"name": ');
        assert.equal(await page.isDisabled('#send'), true);
        await page.fill('#tools', tools);
        assert.equal(await page.isDisabled('#send'), false);

        await page.click('details summary');  // the sampling settings are folded away by default
        await page.fill('#max-tokens', String(MAX_TOKENS));
        await page.fill('#temperature', '1');
        await page.fill('#seed', String(expected.seed));
        await page.click('#send');
        await page.waitForFunction(() => document.getElementById('timing').textContent !== '' ||
          document.querySelector('#calls .error'), null, { timeout: 90000 });
        shown = {
          reply: await page.textContent('#reply'),
          timing: await page.textContent('#timing'),
          calls: await page.$$eval('#calls .call pre', (ps) => ps.map((p) => p.textContent)),
          confidence: await page.textContent('#confidence'),
          error: await page.$$eval('#calls .error', (ps) => ps.map((p) => p.textContent)),
        };

        // A second visit lists the cached copy and opens it from the Cache API.
        await page.reload();
        const secondLabel = await openMicro(page);
        assert.match(secondLabel, /downloaded/);
      });
    } finally {
      server.close();
    }
    assert.deepEqual(errors, []);
    assert.deepEqual(shown.error, []);
    const envelope = expected.envelope;
    assert.equal(shown.reply, envelope.text);
    assert.deepEqual(shown.calls, envelope.function_calls.map((call) => JSON.stringify(call, null, 2)));
    assert.equal(shown.confidence, `Confidence: ${envelope.confidence.toFixed(3)}`);
    assert.match(shown.timing, new RegExp(`^${envelope.prompt_tokens} prompt tokens \\(${envelope.pinned_tokens} pinned\\) ` +
      `at \\d+ tokens/s; ${envelope.generated_tokens} generated \\(${envelope.forced_tokens} forced\\)`));
  });
