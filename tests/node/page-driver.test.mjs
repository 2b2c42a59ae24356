// What the page needs of the driver (site/engine/), in Node on micro.cact: Stop pressed at once after
// Send ends that very request (complete() clears the flag when the request is made, not when the
// driver starts it), with no reply token, and the next request runs to its end as on a fresh engine.
// docs/engine.md, "Tool calls"; docs/page.md, "A session".
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { model, toolcallPath, withEngine } from './helpers/engine.mjs';
import fs from 'node:fs';

const archive = model('micro.cact');
const skip = !archive ? 'needs build/models' : !fs.existsSync(toolcallPath) ? 'needs toolcall.mjs' : false;

const tools = [{ name: 'set_timer', description: 'Start a countdown timer.',
  parameters: { type: 'object', properties: { minutes: { type: 'integer' } }, required: ['minutes'] } }];

test('stop() right after complete() ends that request before its first token; the next one runs whole', { skip, timeout: 120000 }, async () => {
  await withEngine({ threads: 2 }, 100000, async (engine) => {
    await engine.load(archive);
    const request = { tools, request: 'set a timer for 10 minutes '.repeat(40), max_tokens: 64, temperature: 1, seed: '3', constrain: false };
    const whole = await engine.complete(request);
    assert.ok(whole.generated_tokens > 0);

    const texts = [];
    const pending = engine.complete(request, { onText: ({ text }) => texts.push(text) });
    engine.stop();
    const stopped = await pending;
    assert.equal(stopped.generated_tokens, 0);
    assert.deepEqual(texts, []);
    assert.match(stopped.error, /^stopped after 0 tokens: /);
    assert.equal(stopped.prompt_tokens, whole.prompt_tokens);

    const again = await engine.complete(request);
    assert.deepEqual(again.reply_ids, whole.reply_ids);
    assert.equal(again.text, whole.text);
  });
});
