// The session and the settings, in headless Chromium on the dev server: a call, a tool result typed
// back and the model's continuation, each reply equal to the envelope the Node engine gives for the
// same request with the same history; Clear forgets the history; Enter sends, Shift+Enter breaks
// the line, an Enter during IME composition never sends; settings survive a reload and Defaults
// restores them; a call the no-call doubt withdraws is shown as written, said so, offered no result
// boxes and kept as the empty list; Stop ends a reply within a token of the press, and during the
// prefill before any reply token (on the dev server's base.cact, random weights, whose steps are slow
// enough to see).
// docs/page.md, "Tests".
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { modelFields } from '../../site/ui/settings.mjs';
import { withEngine } from './helpers/engine.mjs';
import { lastTurn, openListed, pageSkip, screenshot, send, shipped, shippedPath, toolsets, withPage } from './helpers/page.mjs';

const file = path.basename(shipped.url);

// The request the page sends for the settings below (site/ui/settings.mjs samplingFields), with the
// shipped model's no-call bias and doubt and span strings (modelFields).
const SETTINGS = { max_tokens: 256, temperature: 0, top_p: 1, seed: '0', constrain: true, ...modelFields(shipped) };

test('a two-turn session with a tool result, each reply the Node engine\'s; Clear; the Enter key', { skip: pageSkip, timeout: 900000 }, async () => {
  const set = toolsets[0];
  const tools = JSON.stringify(set.tools, null, 2);
  const result = { status: 'started', ends_at: '10:42' };
  let shown;
  await withPage({}, async ({ page, url, errors }) => {
    await page.goto(url);
    assert.match(await openListed(page, file), /is open/);
    await page.selectOption('#toolset', set.id);

    // Shift+Enter breaks the line; an Enter that ends an IME composition (isComposing, keyCode 229)
    // does not send; Enter sends.
    await page.fill('#query', 'first line');
    await page.press('#query', 'Shift+Enter');
    await page.type('#query', 'second line');
    assert.equal(await page.inputValue('#query'), 'first line\nsecond line');
    for (const init of [{ isComposing: true, keyCode: 13 }, { isComposing: false, keyCode: 229 }]) {
      await page.evaluate((i) => document.getElementById('query').dispatchEvent(
        new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true, ...i })), init);
    }
    assert.equal(await page.$$eval('#turns .turn', (ts) => ts.length), 0);
    assert.equal(await page.inputValue('#query'), 'first line\nsecond line');

    const first = await send(page, set.example.request);
    assert.equal(first.state, 'done', first.error);
    assert.equal(await page.isVisible('#turns .turn >> nth=0 >> form.results'), true);
    await page.fill('#turns .turn >> nth=0 >> form.results textarea >> nth=0', JSON.stringify(result));
    await page.click('#turns .turn >> nth=0 >> form.results button');
    await page.waitForFunction(() => document.querySelectorAll('#turns .turn').length === 2);
    const second = await lastTurn(page);
    assert.match(second.sent, /^Tool result/);
    assert.equal(await page.isVisible('#turns .turn >> nth=0 >> form.results'), false, 'the boxes go once the session moves on');
    await screenshot(page, 'page-session.png');

    // Clear: the next request has no history (the same prompt length as the first request).
    await page.click('#clear');
    assert.equal(await page.$$eval('#turns .turn', (ts) => ts.length), 0);
    const again = await send(page, set.example.request);
    shown = { first, second, again };
    assert.deepEqual(errors, []);
  });

  const expected = await withEngine({ threads: 1 }, 120000, async (engine) => {
    await engine.load(shippedPath);
    const one = await engine.complete({ tools, ...SETTINGS, history: [], request: set.example.request });
    const names = one.function_calls.map((c) => c.name);
    const two = await engine.complete({ tools, ...SETTINGS, history: [
      { role: 'user', content: set.example.request }, { role: 'assistant', content: one.text },
      { role: 'tool', content: names.map((name) => ({ name, result })) }] });
    return { one, two };
  });
  const promptTokens = (stats) => Number(/^(\d+) prompt tokens/.exec(stats)[1]);
  assert.ok(expected.one.function_calls.length > 0, 'the first reply calls a tool');
  assert.equal(shown.first.reply, expected.one.text);
  assert.deepEqual(shown.first.calls, expected.one.function_calls);
  assert.equal(promptTokens(shown.first.stats), expected.one.prompt_tokens);
  assert.equal(shown.second.reply, expected.two.text);
  assert.deepEqual(shown.second.calls, expected.two.function_calls);
  assert.equal(promptTokens(shown.second.stats), expected.two.prompt_tokens);
  assert.ok(expected.two.prompt_tokens > expected.one.prompt_tokens);
  assert.equal(shown.again.reply, expected.one.text);
  assert.equal(promptTokens(shown.again.stats), expected.one.prompt_tokens);
});

test('a call the doubt withdraws is shown as written and said so, with no result boxes, and kept as the empty list', { skip: pageSkip, timeout: 900000 }, async () => {
  // A request no messaging tool fits, though it names the contact tool, whose call_contact call the
  // shipped model writes with doubt enough for its calibrated no_call_doubt to withdraw it, the named
  // credit notwithstanding (docs/toolcall.md §8.4); then one more request.
  const set = toolsets.find((t) => t.id === 'messaging');
  const tools = JSON.stringify(set.tools, null, 2);
  const [ask, next] = ['my contact list is a mess', 'Send Ben a message saying hi'];
  let shown;
  await withPage({}, async ({ page, url, errors }) => {
    await page.goto(url);
    assert.match(await openListed(page, file), /is open/);
    await page.selectOption('#toolset', set.id);
    const first = await send(page, ask);
    const boxes = await page.isVisible('#turns .turn >> nth=0 >> form.results');
    const second = await send(page, next);
    shown = { first, second, boxes };
    assert.deepEqual(errors, []);
  });
  const expected = await withEngine({ threads: 1 }, 120000, async (engine) => {
    await engine.load(shippedPath);
    const one = await engine.complete({ tools, ...SETTINGS, history: [], request: ask });
    const two = await engine.complete({ tools, ...SETTINGS, request: next, history: [
      { role: 'user', content: ask }, { role: 'assistant', content: '<tool_call>[]</tool_call>' }] });
    return { one, two };
  });
  assert.deepEqual(expected.one.function_calls, []);
  assert.deepEqual(expected.one.withdrawn_calls.map((c) => c.name), ['call_contact']);
  assert.equal(shown.first.state, 'done', shown.first.error);
  assert.equal(shown.first.reply, expected.one.text, 'the withdrawn call is shown as it was written');
  assert.deepEqual(shown.first.calls, []);
  assert.equal(expected.one.calls_named, true);
  assert.match(shown.first.status.join(' '),
    /^No call made: the model wrote call_contact, but doubted it \(doubt \d\.\d\d\), so the list counts as empty\./);
  assert.equal(shown.boxes, false, 'no result boxes for a withdrawn call');
  // The next request's history holds the empty list the reply counts as, not the withdrawn call.
  assert.equal(shown.second.reply, expected.two.text);
  assert.equal(Number(/^(\d+) prompt tokens/.exec(shown.second.stats)[1]), expected.two.prompt_tokens);
});

test('settings survive a reload; Defaults restores them', { skip: pageSkip, timeout: 600000 }, async () => {
  await withPage({}, async ({ page, url }) => {
    await page.goto(url);
    await page.waitForSelector('label.model');
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const defaults = { threads: String(Math.max(1, Math.min(16, Math.floor(cores * 0.75)))), temperature: '0', 'top-p': '1',
      'max-tokens': '256', seed: '0', constrained: true };
    const read = () => page.evaluate(() => ({
      threads: document.getElementById('threads').value, temperature: document.getElementById('temperature').value,
      'top-p': document.getElementById('top-p').value, 'max-tokens': document.getElementById('max-tokens').value,
      seed: document.getElementById('seed').value, constrained: document.getElementById('constrained').checked }));
    assert.deepEqual(await read(), defaults);
    await page.click('#settings summary');
    const chosen = { threads: '2', temperature: '0.7', 'top-p': '0.9', 'max-tokens': '64', seed: '18446744073709551615' };
    for (const [id, value] of Object.entries(chosen)) {
      await page.fill(`#${id}`, value);
      await page.dispatchEvent(`#${id}`, 'change');
    }
    await page.uncheck('#constrained');
    await page.reload();
    await page.waitForSelector('label.model');
    assert.deepEqual(await read(), { ...chosen, constrained: false });
    // a value out of range is clamped as it is read
    await page.click('#settings summary');
    await page.fill('#max-tokens', '100000');
    await page.dispatchEvent('#max-tokens', 'change');
    await page.reload();
    await page.waitForSelector('label.model');
    assert.equal((await read())['max-tokens'], '4096');
    await page.click('#settings summary');
    await screenshot(page, 'page-settings.png');
    await page.click('#defaults');
    assert.deepEqual(await read(), defaults);
    await page.reload();
    await page.waitForSelector('label.model');
    assert.deepEqual(await read(), defaults);
  });
});

test('Stop ends a reply within a token, and during the prefill before any token', { skip: pageSkip, timeout: 900000 }, async () => {
  await withPage({ dev: true }, async ({ page, url, errors }) => {
    await page.goto(url);
    assert.match(await openListed(page, 'base.cact'), /base\.cact is open/);
    await page.click('#settings summary');
    for (const [id, value] of Object.entries({ temperature: '1', 'max-tokens': '400', seed: '1' })) {
      await page.fill(`#${id}`, value);
      await page.dispatchEvent(`#${id}`, 'change');
    }
    await page.uncheck('#constrained');  // free sampling: every token drawn and fed one at a time

    await page.fill('#query', 'hello');
    await page.press('#query', 'Enter');
    await page.waitForFunction(() => Number(document.querySelector('#turns .turn .reply')?.dataset.tokens) >= 5, null, { timeout: 180000 });
    const seen = await page.evaluate(() => {
      const n = Number(document.querySelector('#turns .turn .reply').dataset.tokens);
      document.getElementById('stop').click();
      return n;
    });
    const stopped = await lastTurn(page);
    assert.equal(stopped.state, 'stopped');
    const generated = Number(/· (\d+) tokens \(/.exec(stopped.stats)[1]);
    assert.ok(generated >= seen && generated <= seen + 1, `${generated} tokens after the press at ${seen}`);
    assert.equal(stopped.tokens, generated);
    assert.match(stopped.status.join(' '), new RegExp(`Stopped after ${generated} tokens\\. Not kept in the session\\.`));
    await screenshot(page, 'page-stopped.png');

    // Stop while a long prompt is read (about 1,200 tokens): no reply token at all.
    const long = 'please set a timer and then tell me about it '.repeat(120);
    await page.fill('#query', long);
    await page.press('#query', 'Enter');
    await page.waitForTimeout(300);
    await page.click('#stop');
    const prefill = await lastTurn(page);
    assert.equal(prefill.state, 'stopped');
    assert.equal(prefill.tokens, 0);
    assert.match(prefill.status.join(' '), /Stopped before the first reply token\./);

    // Stop pressed in the same moment as Send still stops that request.
    const race = await page.evaluate(() => {
      document.getElementById('query').value = 'hello again';
      document.getElementById('send').click();
      document.getElementById('stop').click();
    });
    assert.equal(race, undefined);
    const raced = await lastTurn(page);
    assert.equal(raced.state, 'stopped');
    assert.equal(raced.tokens, 0);

    // and the session goes on: the next request runs to its end
    await page.fill('#max-tokens', '8');
    await page.dispatchEvent('#max-tokens', 'change');
    const after = await send(page, 'hello');
    assert.equal(after.state, 'done');
    assert.equal(after.tokens, 8);
    assert.deepEqual(errors, []);
  });
});
