// Probe heads in the engine (headsBegin / headOutputs) against the C++ reference (needle-ref --heads,
// host/heads.cpp) on base.cact and micro.cact, which have a contrastive and a confidence head: bit for
// bit in A8 mode, over a prompt and the tokens generated and fed back, at 1 and 2 threads, with and
// without sinks.
// Also: pooling never changes the logits; headsEnd and reset stop it; an archive without heads says
// so; loading an archive without heads after one with them.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { model, runTool, tool, withEngine } from './helpers/engine.mjs';

const base = model('base.cact');
const tiny = model('tiny.cact');
const skip = !base || !tiny || !tool('needle-ref') ? 'needs build/models and needle-ref' : false;

// needle-ref's head outputs for a run (its JSON prints each f32 with %.9g, which reads back exactly).
function referenceHeads(archive, ids, { generate = 0, sink = 0, sampling = [] } = {}) {
  const r = runTool('needle-ref', ['--archive', archive, '--ids', ids.join(' '), '--kv', 'int8', '--act', 'a8',
    '--sink', String(sink), '--generate', String(generate), '--heads', ...sampling]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// The engine's f32 outputs equal the reference's printed values exactly.
function assertSameHeads(mine, ref, what) {
  assert.equal(mine.length, ref.length, `${what}: head count`);
  for (let h = 0; h < ref.length; h++) {
    assert.equal(mine[h].kind, ref[h].kind, `${what}: head ${h} kind`);
    assert.equal(mine[h].output.length, ref[h].output.length, `${what}: head ${h} size`);
    for (let i = 0; i < ref[h].output.length; i++)
      assert.ok(Object.is(mine[h].output[i], Math.fround(ref[h].output[i])),
        `${what}: head ${h} output ${i}: engine ${mine[h].output[i]}, reference ${ref[h].output[i]}`);
  }
}

const prompt = [2, 690, 901, 387, 731, 5, 4000, 17, 17, 8191, 300];

test('head outputs equal needle-ref --heads bit for bit (base, A8), prompt and reply', { skip }, async () => {
  const runs = [
    { threads: 1, sink: 0, generate: 12, sampling: [] },
    { threads: 2, sink: 4, generate: 9, sampling: ['--temperature', '0.9', '--top-k', '50', '--seed', '3'] },
  ];
  for (const run of runs) {
    const ref = referenceHeads(base, prompt, run);
    assert.equal(ref.heads.length, 2);
    assert.deepEqual(ref.heads.map((h) => h.kind), ['contrastive', 'confidence']);
    await withEngine({ threads: run.threads }, 240000, async (engine) => {
      await engine.load(base);
      await engine.reset({ sink: run.sink });
      assert.equal(await engine.headsBegin(), 2);
      const sampler = run.sampling.length ? { temperature: 0.9, topK: 50 } : {};
      const r = await engine.generate(prompt, { maxTokens: run.generate, sampler, seed: run.sampling.length ? 3 : 0 });
      assert.deepEqual(r.generated, ref.generated_ids);
      assertSameHeads(await engine.headOutputs(), ref.heads, `threads ${run.threads}, sink ${run.sink}`);
      // the contrastive output is a unit vector, the confidence one a single logit
      const [contrastive, confidence] = await engine.headOutputs();
      assert.equal(contrastive.output.length, 128);
      assert.ok(Math.abs(contrastive.output.reduce((s, v) => s + v * v, 0) - 1) < 1e-5);
      assert.equal(confidence.output.length, 1);
    });
  }
});

const micro = model('micro.cact');
test('head outputs equal needle-ref --heads bit for bit (micro, A8)', { skip: skip || (!micro && 'needs micro.cact') }, async () => {
  const ids = prompt.map((t) => t % 8192);
  const ref = referenceHeads(micro, ids, { generate: 24 });
  await withEngine({}, 120000, async (engine) => {
    await engine.load(micro);
    assert.equal(await engine.headsBegin(), ref.heads.length);
    const r = await engine.generate(ids, { maxTokens: 24 });
    assert.deepEqual(r.generated, ref.generated_ids);
    assertSameHeads(await engine.headOutputs(), ref.heads, 'micro');
  });
});

test('pooling never changes the logits; headsEnd and reset stop it', { skip }, async () => {
  await withEngine({}, 240000, async (engine) => {
    await engine.load(base);
    const plain = [];
    for (const t of prompt.slice(0, 5)) plain.push(await engine.step(t));
    await engine.reset();
    assert.equal(await engine.headsBegin(), 2);
    for (let i = 0; i < 5; i++) assert.deepEqual(await engine.step(prompt[i]), plain[i], `logits at ${i}`);
    const after5 = await engine.headOutputs();
    assert.deepEqual(after5, referenceHeads(base, prompt.slice(0, 5)).heads.map((h, i) => ({
      head: i, kind: h.kind, output: Float32Array.from(h.output) })));
    await engine.headsEnd();
    await engine.step(prompt[5]);
    assert.deepEqual(await engine.headOutputs(), after5, 'headsEnd: later steps are not pooled');
    await engine.reset();
    await assert.rejects(engine.headOutputs(), (e) => e.errorName === 'ERR_NO_CELLS' && /nothing pooled/.test(e.message));
    await engine.step(2);
    await assert.rejects(engine.headOutputs(), (e) => e.errorName === 'ERR_NO_CELLS', 'reset turns pooling off');
  });
});

test('an archive without heads says so, also after one with heads', { skip }, async () => {
  await withEngine({}, 120000, async (engine) => {
    await engine.load(base);
    await engine.headsBegin();
    await engine.load(tiny);   // a headless archive after base: its own records, no stale head count
    assert.equal(engine.geometry.num_layers, 4);
    await assert.rejects(engine.headsBegin(), (e) => e.errorName === 'ERR_NO_HEAD' && /no probe heads/.test(e.message));
    await assert.rejects(engine.headOutputs(), (e) => e.errorName === 'ERR_NO_HEAD');
    const r = await engine.generate([2, 5, 6], { maxTokens: 3 });   // and it runs
    assert.equal(r.generated.length, 3);
  });
  const r = runTool('needle-ref', ['--archive', tiny, '--ids', '2 5', '--heads']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /--heads: .*tiny\.cact has no probe heads/);
});

test('the cost of pooling per step at base geometry (reported, not asserted)', { skip }, async (t) => {
  await withEngine({}, 240000, async (engine) => {
    await engine.load(base);
    const ids = Array.from({ length: 48 }, (_, i) => (i * 37 + 5) % 8192);
    const time = async (pool) => {
      await engine.reset();
      if (pool) await engine.headsBegin();
      const r = await engine.generate(ids, { maxTokens: 0 });
      return r.prefillMs / ids.length;
    };
    const best = { off: Infinity, on: Infinity };
    for (let round = 0; round < 3; round++) {
      best.off = Math.min(best.off, await time(false));
      best.on = Math.min(best.on, await time(true));
    }
    t.diagnostic(`base step, 1 thread: ${best.off.toFixed(3)} ms without pooling, ${best.on.toFixed(3)} ms with ` +
      `(${(best.on - best.off).toFixed(3)} ms for 28 cells x 12 probes)`);
  });
});
