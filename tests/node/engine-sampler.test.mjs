// The sampler in wasm: greedy (lowest id on ties), temperature with a seedable splitmix64 generator
// (the same seed gives the same tokens at any thread count: the draw is in wasm, so Node and the
// browser agree), top-k, top-p, min-p and the repetition penalty; the token mask in every mode and
// its empty-mask error; the log-probability; the driver's setSampler / sampleToken. The "shared draws"
// test pins the ids and bits that tests/cpp/sampler asserts for the native sampler (host/sampler.cpp).
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

// A token mask allowing the ids for which keep(id) is true: bit id % 32 of word id / 32.
function maskWhere(vocab, keep) {
  const m = new Uint32Array((vocab + 31) >>> 5);
  for (let i = 0; i < vocab; i++) if (keep(i)) m[i >>> 5] |= 1 << (i & 31);
  return m;
}
const maskOf = (vocab, ids) => maskWhere(vocab, (i) => ids.includes(i));
const setOf = (draws) => [...new Set(draws)].sort((a, b) => a - b);

// Shared with tests/cpp/sampler: l_i = ((i * 7919) mod 1009) / 128 - 4, exact in f32.
function sharedLogits(vocab) {
  const l = new Float32Array(vocab);
  for (let i = 0; i < vocab; i++) l[i] = ((i * 7919) % 1009) / 128 - 4;
  return l;
}
const bitsOf = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];

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

test('the mask excludes tokens in greedy mode, ties included', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[7, 3], [9, 5], [11, 5], [300, 4]]);
    assert.deepEqual(await engine.call('sample', { logits, mask: maskOf(V, [7, 11, 300]) }), [11]);
    assert.deepEqual(await engine.call('sample', { logits, mask: maskOf(V, [7, 300]) }), [300]);
    assert.deepEqual(await engine.call('sample', { logits, mask: maskOf(V, [2]) }), [2]);
    // every logit -inf: the lowest allowed id
    assert.deepEqual(await engine.call('sample', { logits: new Float32Array(V).fill(-Infinity), mask: maskOf(V, [40, 41]) }), [40]);
  });
});

test('masked temperature sampling follows the renormalised softmax; an all-ones mask changes nothing', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[10, Math.log(0.5)], [20, Math.log(0.3)], [30, Math.log(0.2)], [40, 3]]);
    const mask = maskOf(V, [10, 20, 30]);
    const draws = await engine.call('sample', { logits, mask, sampler: { temperature: 1, draws: 6000 }, seed: 1 });
    const count = (id) => draws.filter((d) => d === id).length / draws.length;
    assert.deepEqual(setOf(draws), [10, 20, 30]);
    assert.ok(Math.abs(count(10) - 0.5) < 0.025 && Math.abs(count(20) - 0.3) < 0.025 && Math.abs(count(30) - 0.2) < 0.025,
      `frequencies ${count(10)} ${count(20)} ${count(30)}`);
    const shared = sharedLogits(V);
    const sampler = { temperature: 0.9, topK: 30, topP: 0.8, minP: 0.05, repetitionPenalty: 1.2, draws: 300 };
    const plain = await engine.call('sample', { logits: shared, sampler, seed: 42 });
    const all = await engine.call('sample', { logits: shared, sampler, seed: 42, mask: new Uint32Array((V + 31) >>> 5).fill(0xffffffff) });
    assert.deepEqual(all, plain);
  });
});

test('top-k, top-p, min-p and the penalty act among the allowed tokens only', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[1, 2.0], [2, 1.9], [3, 1.8], [4, 1.7], [5, 1.6]]);
    const no1 = maskOf(V, [2, 3, 4, 5]);
    const k2 = await engine.call('sample', { logits, mask: no1, sampler: { temperature: 1, topK: 2, draws: 500 }, seed: 4 });
    assert.deepEqual(setOf(k2), [2, 3]);
    const p = await engine.call('sample', { logits, mask: no1, sampler: { temperature: 1, topP: 0.4, draws: 500 }, seed: 5 });
    assert.deepEqual(setOf(p), [2, 3]);
    // min-p relative to the best ALLOWED token (2); above 1 it keeps that one alone
    const mp = await engine.call('sample', { logits, mask: no1, sampler: { temperature: 1, minP: 0.85, draws: 500 }, seed: 6 });
    assert.deepEqual(setOf(mp), [2, 3]);
    const high = await engine.call('sample', { logits, mask: no1, sampler: { temperature: 1, minP: 2, draws: 50 }, seed: 6 });
    assert.deepEqual(setOf(high), [2]);
    await engine.reset();
    for (const t of [2, 7, 7, 8]) await engine.step(t, { wantLogits: false });
    const pl = logitsWith(V, [[7, 2.0], [9, 1.5], [8, -1.0], [10, -1.2]]);
    assert.deepEqual(await engine.call('sample', { logits: pl, mask: maskOf(V, [7, 8, 10]), sampler: { repetitionPenalty: 2 } }), [7]);
    assert.deepEqual(await engine.call('sample', { logits: pl, mask: maskOf(V, [8, 10]), sampler: { repetitionPenalty: 2 } }), [10]);
  });
});

test('a mask that allows no token is an error in every mode, and the engine stays usable', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = logitsWith(V, [[1, 1]]);
    const none = new Uint32Array((V + 31) >>> 5);
    for (const sampler of [{}, { temperature: 1, topK: 5, topP: 0.5 }]) {
      await assert.rejects(engine.call('sample', { logits, mask: none, sampler }),
        (e) => e.errorName === 'ERR_MASK_EMPTY' && e.message.includes(`allows none of the ${V} ids`));
      assert.deepEqual(await engine.call('sample', { logits, sampler }), [1]);
    }
    await assert.rejects(engine.call('sample', { logits, mask: new Uint32Array(3) }),
      (e) => e.errorName === 'ERR_ARG' && e.message.includes(`${(V + 31) >>> 5} words`));
  });
});

// The same cases and pinned results as "shared draws" in tests/cpp/sampler/sampler_test.cpp.
test('shared draws: the ids and bits that the native sampler gives too', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    assert.equal(V, 8192);
    const logits = sharedLogits(V);
    const everyThird = maskWhere(V, (i) => i % 3 === 1);
    const span = maskWhere(V, (i) => i >= 100 && i < 300);
    const even = maskWhere(V, (i) => i % 2 === 0);
    const a = { temperature: 0.8, topK: 40, topP: 0.9, minP: 0.02, draws: 12 };
    assert.deepEqual(await engine.call('sample', { logits, sampler: a, seed: 7 }),
      [5566, 765, 8105, 4313, 277, 521, 277, 3548, 4801, 6575, 3792, 1807]);
    assert.deepEqual(await engine.call('sample', { logits, sampler: a, seed: 7, mask: everyThird }),
      [7861, 1774, 7162, 4102, 5599, 1042, 310, 1807, 5566, 2572, 2539, 4900]);
    assert.deepEqual(await engine.call('sample', { logits, sampler: { temperature: 1.5, minP: 0.05, draws: 12 },
      seed: 123456789012345n, mask: span }), [272, 251, 119, 113, 225, 119, 293, 259, 278, 166, 185, 264]);
    assert.deepEqual(await engine.call('sample', { logits, mask: span }), [277]);
    await engine.reset();
    for (const t of [2, 5, 9, 5, 4, 6]) await engine.step(t, { wantLogits: false });
    assert.deepEqual(await engine.call('sample', { logits, sampler: { temperature: 0.9, repetitionPenalty: 1.3, draws: 12 },
      seed: 99, mask: even }), [2144, 264, 6852, 852, 1394, 1906, 5502, 5942, 4294, 4538, 4394, 6120]);
    // logprob reads the engine's logits buffer, which the sample entry filled
    assert.equal(bitsOf(await engine.logprob(0)), 0xC16D34E0);
    assert.equal(bitsOf(await engine.logprob(17)), 0xC137F4E0);
    assert.equal(bitsOf(await engine.logprob(511)), 0xC12C54E0);
  });
});

test('sampleToken draws from the last step with the mask and returns the log-probability', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const V = engine.geometry.vocab;
    const logits = await engine.step(2);
    await engine.step(100);
    const last = await engine.step(200);
    assert.notDeepEqual(last, logits);
    // log-softmax of the last logits, in f64, for comparison
    let mx = -Infinity;
    for (const v of last) mx = Math.max(mx, v);
    let sum = 0;
    for (const v of last) sum += Math.exp(v - mx);
    const exact = (t) => last[t] - mx - Math.log(sum);
    await engine.setSampler({ temperature: 0.7 }, { seed: 5 });
    const allowed = [3000, 3001, 4095, 17];
    const mask = maskOf(V, allowed);
    for (let i = 0; i < 20; i++) {
      const { token, logprob } = await engine.sampleToken({ mask });
      assert.ok(allowed.includes(token), `token ${token} is not allowed`);
      assert.ok(Math.abs(logprob - exact(token)) < 1e-5, `logprob ${logprob} vs ${exact(token)}`);
      assert.equal(logprob, await engine.logprob(token));
    }
    await engine.setSampler();
    let best = 0;
    for (let i = 1; i < V; i++) if (last[i] > last[best]) best = i;
    assert.equal((await engine.sampleToken()).token, best);
    await assert.rejects(engine.logprob(V), (e) => e.errorName === 'ERR_TOKEN');
    assert.equal(await engine.call('position'), 3, 'sampling runs no step');
  });
});
