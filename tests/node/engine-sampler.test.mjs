// The sampler in wasm: greedy (lowest id on ties), temperature with a seedable splitmix64 generator
// (the same seed gives the same tokens at any thread count: the draw is in wasm, so Node and the
// browser agree), top-k, top-p, min-p and the repetition penalty.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { model, withEngine } from './helpers/engine.mjs';

const archive = model('tiny.cact');
const skip = !archive ? 'needs build/models' : false;

// Logits over the whole vocabulary: -30 everywhere except the given (id, logit) pairs.
function logitsWith(vocab, pairs) {
  const l = new Float32Array(vocab).fill(-30);
  for (const [id, v] of pairs) l[id] = v;
  return l;
}

test('greedy takes the highest logit, the lowest id on ties', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    assert.deepEqual(await engine.call('sample', { logits: logitsWith(V, [[7, 3], [9, 5], [11, 5]]) }), [9]);
    assert.deepEqual(await engine.call('sample', { logits: logitsWith(V, [[V - 1, 1]]) }), [V - 1]);
  });
});

test('temperature sampling follows the softmax and repeats with the seed', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[10, Math.log(0.5)], [20, Math.log(0.3)], [30, Math.log(0.2)]]);
    const draws = await engine.call('sample', { logits, sampler: { temperature: 1, draws: 4000 }, seed: 1 });
    const count = (id) => draws.filter((d) => d === id).length / draws.length;
    assert.ok(Math.abs(count(10) - 0.5) < 0.03 && Math.abs(count(20) - 0.3) < 0.03 && Math.abs(count(30) - 0.2) < 0.03,
      `frequencies ${count(10)} ${count(20)} ${count(30)}`);
    const again = await engine.call('sample', { logits, sampler: { temperature: 1, draws: 4000 }, seed: 1 });
    assert.deepEqual(again, draws);
    const other = await engine.call('sample', { logits, sampler: { temperature: 1, draws: 4000 }, seed: 2 });
    assert.notDeepEqual(other, draws);
    // a low temperature sharpens towards the top
    const cold = await engine.call('sample', { logits, sampler: { temperature: 0.05, draws: 200 }, seed: 3 });
    assert.ok(cold.every((d) => d === 10));
  });
});

test('top-k, top-p and min-p cut the candidates', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[1, 2.0], [2, 1.9], [3, 1.8], [4, 1.7]]);
    const set = (draws) => [...new Set(draws)].sort((a, b) => a - b);
    const k2 = await engine.call('sample', { logits, sampler: { temperature: 1, topK: 2, draws: 500 }, seed: 4 });
    assert.deepEqual(set(k2), [1, 2]);
    const k1 = await engine.call('sample', { logits, sampler: { temperature: 5, topK: 1, draws: 100 }, seed: 4 });
    assert.deepEqual(set(k1), [1]);
    // weights e^0, e^-0.1, e^-0.2, e^-0.3 (sum 3.46): top-p 0.5 keeps the first two
    const p = await engine.call('sample', { logits, sampler: { temperature: 1, topP: 0.5, draws: 500 }, seed: 5 });
    assert.deepEqual(set(p), [1, 2]);
    // min-p 0.85: keeps weights >= 0.85 of the top one (e^-0.1 = 0.905 stays, e^-0.2 = 0.819 goes)
    const mp = await engine.call('sample', { logits, sampler: { temperature: 1, minP: 0.85, draws: 500 }, seed: 6 });
    assert.deepEqual(set(mp), [1, 2]);
  });
});

test('the repetition penalty lowers the tokens of the session', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    await engine.reset();
    for (const t of [2, 7, 7, 8]) await engine.step(t, { wantLogits: false });
    const logits = logitsWith(V, [[7, 2.0], [9, 1.5], [8, -1.0], [10, -1.2]]);
    assert.deepEqual(await engine.call('sample', { logits }), [7]);
    // 2.0 / 2 = 1.0 < 1.5: token 9 wins; a negative logit is multiplied: 8 -> -2 ranks below 10
    assert.deepEqual(await engine.call('sample', { logits, sampler: { repetitionPenalty: 2 } }), [9]);
    const l2 = logitsWith(V, [[8, -1.0], [10, -1.2]]);
    assert.deepEqual(await engine.call('sample', { logits: l2, sampler: { repetitionPenalty: 2 } }), [10]);
    // a window of one token only sees the last one (8): 7 keeps its logit
    assert.deepEqual(await engine.call('sample', { logits, sampler: { repetitionPenalty: 2, repetitionWindow: 1 } }), [7]);
  });
});

test('the same seed and prompt give the same tokens at 1 and 3 threads', { skip }, async () => {
  const sampler = { temperature: 0.9, topK: 40, topP: 0.95, minP: 0.01, repetitionPenalty: 1.1 };
  const runs = [];
  for (const threads of [1, 3]) {
    runs.push(await withEngine({ threads }, 120000, async (engine) => {
      await engine.load(archive);
      const ids = [engine.tokenizer.bos_id, ...await engine.encode('hello there, how are you?')];
      const a = await engine.generate(ids, { maxTokens: 24, sampler, seed: 1234, stopIds: [] });
      await engine.reset();
      const b = await engine.generate(ids, { maxTokens: 24, sampler, seed: 1234, stopIds: [] });
      assert.deepEqual(a.generated, b.generated);
      return a.generated;
    }));
  }
  assert.deepEqual(runs[0], runs[1]);
  assert.equal(runs[0].length, 24);
});
