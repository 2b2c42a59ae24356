// The engine's prefill(ids) and its snapshot slot against stepping (docs/engine.md, "Prefill and
// snapshots"), bit for bit: prefill gives the last logits of the same steps and leaves the same state
// (every later step's logits equal), whole or in pieces, with sinks and a KV window that wraps, at 1,
// 2 and 3 threads; a restored snapshot then steps exactly as the session that saved it (probe-head
// pooling included); refusals leave the session unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { model, rng, withEngine } from './helpers/engine.mjs';

// Bit-for-bit equality of two Float32Arrays (NaN payloads and signed zeros included).
function sameBits(a, b) {
  if (!a || !b || a.length !== b.length) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

// n deterministic ids below the vocabulary (BOS first when `bos`).
function ids(n, seed, vocab = 8192, bos = true) {
  const next = rng(seed);
  const out = bos ? [2] : [];
  while (out.length < n) out.push(4 + Math.floor(next() * (vocab - 4)));
  return out;
}

// The logits of `prompt` run one step at a time (the last one's), then of each id of `more` stepped
// after it.
async function stepped(engine, prompt, more) {
  let last = null;
  for (let i = 0; i < prompt.length; i++) {
    const logits = await engine.step(prompt[i], { wantLogits: i + 1 === prompt.length });
    if (i + 1 === prompt.length) last = logits;
  }
  const after = [];
  for (const id of more) after.push(await engine.step(id));
  return { last, after };
}

async function continued(engine, more) {
  const after = [];
  for (const id of more) after.push(await engine.step(id));
  return after;
}

// prompt: enough positions to cross the KV window (tiny 32, small 64, micro 64) or several chunks
const cases = [
  { file: 'tiny.cact', prompt: 83, sink: 4 },
  { file: 'small.cact', prompt: 70, sink: 0 },
  { file: 'micro.cact', prompt: 150, sink: 3 },
  { file: 'base.cact', prompt: 70, sink: 5 },
];

for (const c of cases) {
  const archive = model(c.file);
  test(`prefill = steps, bit for bit: ${c.file} (sink ${c.sink}), 1, 2 and 3 threads`, { skip: !archive ? 'needs the models fixture' : false }, async () => {
    const prompt = ids(c.prompt, 5);
    const more = ids(6, 9, 8192, false);
    for (const threads of [1, 2, 3]) {
      await withEngine({ threads }, 240000, async (engine) => {
        await engine.load(archive);
        await engine.reset({ sink: c.sink });
        const want = await stepped(engine, prompt, more);
        // one call
        await engine.reset({ sink: c.sink });
        const last = await engine.prefill(prompt);
        assert.equal(await engine.call('position'), prompt.length);
        assert.ok(sameBits(last, want.last), `${c.file} at ${threads} threads: prefill's logits differ from the steps'`);
        const after = await continued(engine, more);
        after.forEach((row, k) => assert.ok(sameBits(row, want.after[k]), `${c.file} at ${threads} threads: step ${k} after prefill differs`));
        // in pieces (37, 1, the rest), the first two without logits
        await engine.reset({ sink: c.sink });
        assert.equal(await engine.prefill(prompt.slice(0, 37), { wantLogits: false }), null);
        assert.equal(await engine.prefill(prompt.slice(37, 38), { wantLogits: false }), null);
        assert.ok(sameBits(await engine.prefill(prompt.slice(38)), want.last), `${c.file}: prefill in pieces differs`);
        const after2 = await continued(engine, more);
        after2.forEach((row, k) => assert.ok(sameBits(row, want.after[k]), `${c.file}: step ${k} after the pieces differs`));
        // after a prefix that was stepped (prefill from a nonzero position)
        await engine.reset({ sink: c.sink });
        await stepped(engine, prompt.slice(0, 11), []);
        assert.ok(sameBits(await engine.prefill(prompt.slice(11)), want.last), `${c.file}: prefill after 11 steps differs`);
      });
    }
  });
}

test('prefill refusals leave the session unchanged', { skip: !model('tiny.cact') ? 'needs the models fixture' : false }, async () => {
  await withEngine({ threads: 2 }, 120000, async (engine) => {
    await engine.load(model('tiny.cact'));
    const prompt = ids(20, 3);
    const more = ids(4, 4, 8192, false);
    await engine.reset();
    const want = await stepped(engine, prompt, more);
    await engine.reset();
    await engine.prefill(prompt.slice(0, 10), { wantLogits: false });
    // a token past the vocabulary at index 3: nothing runs
    const bad = prompt.slice(10);
    bad[3] = 8192;
    await assert.rejects(engine.prefill(bad), (e) => e.errorName === 'ERR_TOKEN' && /token 8192 at index 3/.test(e.message));
    assert.equal(await engine.call('position'), 10);
    // more ids than positions left (max_seq_len 256): nothing runs
    await assert.rejects(engine.prefill(ids(247, 6)), (e) => e.errorName === 'ERR_FULL' && /247 tokens .* 246 positions left/.test(e.message));
    assert.equal(await engine.call('position'), 10);
    // the session goes on as if nothing had been asked
    assert.ok(sameBits(await engine.prefill(prompt.slice(10)), want.last));
    (await continued(engine, more)).forEach((row, k) => assert.ok(sameBits(row, want.after[k]), `step ${k} after the refusals`));
    // an empty prefill runs nothing
    assert.equal(await engine.prefill([], { wantLogits: false }), null);
    assert.equal(await engine.call('position'), 24);
  });
});

// Head outputs as comparable arrays.
async function heads(engine) {
  return (await engine.headOutputs()).map((h) => h.output);
}

test('snapshot restore, then steps = the uninterrupted session (micro with head pooling, sinks), 1 and 2 threads', { skip: !model('micro.cact') ? 'needs the models fixture' : false }, async () => {
  const prefix = ids(90, 21);          // past micro's window of 64
  const a = ids(20, 22, 8192, false);
  const b = ids(25, 23, 8192, false);
  for (const threads of [1, 2]) {
    await withEngine({ threads }, 120000, async (engine) => {
      await engine.load(model('micro.cact'));
      assert.equal(await engine.snapshotPosition(), -1);
      await assert.rejects(engine.snapshotRestore(), (e) => e.errorName === 'ERR_NO_SNAPSHOT');
      // the uninterrupted sessions prefix + a and prefix + b
      const fresh = {};
      for (const [name, tail] of [['a', a], ['b', b]]) {
        await engine.reset({ sink: 3 });
        await engine.headsBegin();
        await engine.prefill(prefix, { wantLogits: false });
        const rows = await continued(engine, tail);
        fresh[name] = { rows, heads: await heads(engine) };
      }
      // saved after the prefix, restored, then a; restored again, then b
      await engine.reset({ sink: 3 });
      await engine.headsBegin();
      await engine.prefill(prefix, { wantLogits: false });
      assert.equal(await engine.snapshotSave(), prefix.length);
      for (const [name, tail] of [['a', a], ['b', b], ['a', a]]) {
        assert.equal(await engine.snapshotRestore(), prefix.length);
        assert.equal(await engine.call('position'), prefix.length);
        const rows = await continued(engine, tail);
        rows.forEach((row, k) => assert.ok(sameBits(row, fresh[name].rows[k]), `threads ${threads}: ${name} step ${k} after restore`));
        (await heads(engine)).forEach((h, k) => assert.ok(sameBits(h, fresh[name].heads[k]), `threads ${threads}: head ${k} after restore + ${name}`));
      }
      // a session with another sink in between: restore brings the saved one back
      await engine.reset({ sink: 0 });
      await engine.prefill(ids(30, 24), { wantLogits: false });
      await engine.snapshotRestore();
      (await continued(engine, a)).forEach((row, k) => assert.ok(sameBits(row, fresh.a.rows[k]), `after another session: step ${k}`));
      // a new load forgets the snapshot
      await engine.load(model('micro.cact'));
      assert.equal(await engine.snapshotPosition(), -1);
    });
  }
});

test('snapshot: restore gives the saved logits back; a larger snapshot replaces a smaller one (tiny, window wraps)', { skip: !model('tiny.cact') ? 'needs the models fixture' : false }, async () => {
  await withEngine({ threads: 1 }, 120000, async (engine) => {
    await engine.load(model('tiny.cact'));
    const prompt = ids(70, 31);
    const more = ids(5, 32, 8192, false);
    await engine.reset({ sink: 2 });
    const want = await stepped(engine, prompt, more);
    await engine.reset({ sink: 2 });
    await engine.prefill(prompt.slice(0, 10));
    assert.equal(await engine.snapshotSave(), 10);
    const last = await engine.prefill(prompt.slice(10));
    assert.equal(await engine.snapshotSave(), 70);           // replaces the one at 10
    const lp = [await engine.logprob(7), await engine.logprob(4000)];
    await continued(engine, ids(9, 33, 8192, false));
    assert.equal(await engine.snapshotRestore(), 70);
    // the logits the saved session had last (what sampleToken would draw from)
    assert.deepEqual([await engine.logprob(7), await engine.logprob(4000)], lp);
    (await continued(engine, more)).forEach((row, k) => assert.ok(sameBits(row, want.after[k]), `step ${k} after restore at 70`));
    assert.ok(sameBits(last, want.last));
  });
});
