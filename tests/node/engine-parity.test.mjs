// The parity ladder against the C++ reference (needle-ref --dump, docs/dump-format.md), rung by rung,
// for the tiny, small and base random archives at 1, 2 and 3 threads:
//   dequantised row, one packed matrix-vector product, the position-0 step (embedding, engram e/k/v',
//   every layer's lanes in and out: equal up to the dump's 9-digit decimals), the logits at every
//   prompt position and every generated token fed back (bit for bit against the reference's A8
//   mode's binary rows), the batched prefill's last logits (bit for bit), and the greedy ids of 64
//   tokens. Then against the exact f32 oracle (--kv f32 --act f32): top-1 agreement and a KL bound;
// and sessions of three kv_windows (with pinned sink positions), stepped and prefilled, against the
// reference at every position, bit for bit.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { argmax, kl, maxRel, model, referenceDump, referenceRows, rng, tool, withEngine } from './helpers/engine.mjs';

const haveRef = !!tool('needle-ref');
// The dump (docs/dump-format.md) writes floats with 9 significant digits: what is compared through it
// can differ by that rounding only. Binary logits rows (--logits-out) are compared bit for bit.
const DUMP_TOL = 1e-8;
// The f32 oracle: what int8 KV and A8 may cost (measured: top-1 45/48, 48/48, 24/24; KL at most 2.1e-4).
const ORACLE_TOP1 = 0.9;
const ORACLE_KL_MAX = 2e-3;

// The vocab field of an archive's header (offset 20).
function vocabOf(archive) {
  const fd = fs.openSync(archive, 'r');
  const b = Buffer.alloc(24);
  fs.readSync(fd, b, 0, 24, 0);
  fs.closeSync(fd);
  return b.readUInt32LE(20);
}

// A deterministic prompt of n ids: BOS then pseudo-random ids below vocab.
function promptIds(n, vocab, seed) {
  const next = rng(seed);
  const ids = [2];
  while (ids.length < n) ids.push(4 + Math.floor(next() * (vocab - 4)));
  return ids;
}

// Splits the parity trace into its vectors (layout: docs/engine.md, "Trace").
function splitTrace(trace, g) {
  let at = 0;
  const take = (n) => { const v = trace.subarray(at, at + n); at += n; return v; };
  const out = { embedding: take(g.d_model), engram: [], layers: [] };
  for (let s = 0; s < g.num_engram_sites; s++)
    out.engram.push({ e: take(g.num_engram_tables * g.engram_sub_dim), k: take(g.d_model), v: take(g.d_model) });
  for (let l = 0; l < g.num_layers; l++) out.layers.push({ in: take(g.mhc_lanes * g.d_model), out: take(g.mhc_lanes * g.d_model) });
  return out;
}

const cases = [
  { name: 'tiny', file: 'tiny.cact', prompt: 24, generate: 64 },
  { name: 'small', file: 'small.cact', prompt: 20, generate: 64 },
  { name: 'base', file: 'base.cact', prompt: 8, generate: 64 },
];

for (const c of cases) {
  const archive = model(c.file);
  test(`parity ladder: ${c.name} (A8 reference, bit for bit)`, { skip: !haveRef || !archive ? 'needs build/models and needle-ref' : false }, async (t) => {
    const ids = promptIds(c.prompt, vocabOf(archive), 17);
    const { dump } = referenceDump(archive, ids, { kv: 'int8', act: 'a8', generate: c.generate });
    const rows = referenceRows(archive, ids, { kv: 'int8', act: 'a8', generate: c.generate });
    const vocab = dump.geometry.vocab;
    for (const threads of c.threads ?? [1, 2, 3]) {
      await withEngine({ threads }, 240000, async (engine) => {
        await engine.load(archive);
        const g = engine.geometry;
        // rung 1: one dequantised embedding row
        const row = await engine.call('dequantRow', { record: 0, row: dump.dequant_row.row });
        assert.ok(maxRel(row, dump.dequant_row.values) < DUMP_TOL, `dequant_row ${maxRel(row, dump.dequant_row.values)}`);
        // rung 2: one packed product (layers.0.q_proj is record 2)
        const y = await engine.call('matvec', { record: 2, input: dump.matvec.input });
        assert.ok(maxRel(y, dump.matvec.output) < DUMP_TOL, `matvec ${maxRel(y, dump.matvec.output)}`);
        // rung 3: the step at position 0
        await engine.reset();
        const { trace, logits } = await engine.call('stepTrace', { token: ids[0] });
        const tr = splitTrace(trace, g);
        const p0 = dump.position0;
        assert.ok(maxRel(tr.embedding, p0.embedding) < DUMP_TOL, 'embedding');
        p0.engram.forEach((site, s) => {
          for (const k of ['e', 'k', 'v']) assert.ok(maxRel(tr.engram[s][k], site[k]) < DUMP_TOL, `engram ${s} ${k}: ${maxRel(tr.engram[s][k], site[k])}`);
        });
        let worstLayer = 0;
        p0.layers.forEach((layer, l) => {
          const ei = maxRel(tr.layers[l].in, layer.in);
          const eo = maxRel(tr.layers[l].out, layer.out);
          worstLayer = Math.max(worstLayer, ei, eo);
          assert.ok(ei < DUMP_TOL && eo < DUMP_TOL, `layer ${l}: in ${ei}, out ${eo}`);
        });
        assert.ok(maxRel(logits, dump.logits[0]) < DUMP_TOL, 'logits at position 0');
        // rungs 4-5: every prompt position, then the greedy continuation fed back
        await engine.reset();
        const r = await engine.generate(ids, { maxTokens: c.generate, wantRows: true });
        let worst = 0;
        for (let p = 0; p < r.rows.length; p++) {
          const ref = rows.all.subarray(p * vocab, (p + 1) * vocab);
          const e = maxRel(r.rows[p], ref);
          worst = Math.max(worst, e);
          assert.equal(e, 0, `${c.name}, ${threads} threads: logits row ${p}: ${e}`);
        }
        assert.equal(r.rows.length, rows.all.length / vocab);
        // the prompt again through the batched prefill: its last logits, bit for bit
        await engine.reset();
        const last = await engine.prefill(ids);
        assert.equal(maxRel(last, rows.all.subarray((ids.length - 1) * vocab, ids.length * vocab)), 0, `${c.name}, ${threads} threads: prefill`);
        const refGen = dump.generated.slice(0, c.generate);
        // the reference stops after EOS (id 1); compare the ids it produced
        assert.deepEqual(r.generated.slice(0, refGen.length), refGen, `${c.name}, ${threads} threads: greedy ids`);
        t.diagnostic(`${c.name} ${threads} threads: max rel (layers) ${worstLayer.toExponential(2)}, logits ${worst.toExponential(2)} over ${r.rows.length} rows; prefill ${r.prefillMs.toFixed(1)} ms, decode ${(r.decodeMs / Math.max(1, r.decodeTokens)).toFixed(2)} ms/token`);
      });
    }
  });
}

for (const c of cases) {
  const archive = model(c.file);
  test(`against the f32 oracle: ${c.name} (top-1 agreement >= ${ORACLE_TOP1 * 100}%, KL <= ${ORACLE_KL_MAX})`, { skip: !haveRef || !archive ? 'needs build/models and needle-ref' : false }, async (t) => {
    const ids = promptIds(c.name === 'base' ? 24 : 48, vocabOf(archive), 5);
    const ref = referenceRows(archive, ids, { kv: 'f32', act: 'f32' });
    const vocab = ref.all.length / ids.length;
    await withEngine({ threads: 2 }, 240000, async (engine) => {
      await engine.load(archive);
      const r = await engine.generate(ids, { maxTokens: 0, wantRows: true });
      let agree = 0;
      let klSum = 0;
      let klMax = 0;
      let relMax = 0;
      r.rows.forEach((row, p) => {
        const f = ref.all.subarray(p * vocab, (p + 1) * vocab);
        if (argmax(row) === argmax(f)) agree++;
        const d = kl(f, row);
        klSum += d;
        klMax = Math.max(klMax, d);
        relMax = Math.max(relMax, maxRel(row, f));
      });
      const msg = `${c.name} vs f32 oracle over ${ids.length} positions: top-1 agreement ${agree}/${ids.length}, KL mean ${(klSum / ids.length).toExponential(3)} max ${klMax.toExponential(3)} nats, max rel ${relMax.toExponential(2)}`;
      t.diagnostic(msg);
      assert.equal(r.rows.length, ids.length);
      assert.ok(agree >= ORACLE_TOP1 * ids.length, msg);
      assert.ok(klMax <= ORACLE_KL_MAX, msg);
    });
  });
}

for (const c of cases.filter((x) => x.name !== 'base')) {
  const archive = model(c.file);
  test(`session of three kv_windows with sinks: ${c.name}`, { skip: !haveRef || !archive ? 'needs build/models and needle-ref' : false }, async (t) => {
    await withEngine({ threads: 2 }, 240000, async (engine) => {
      await engine.load(archive);
      const win = engine.geometry.kv_window;
      const n = Math.min(3 * win, engine.geometry.max_seq_len);
      const ids = promptIds(n, vocabOf(archive), 23);
      for (const sink of [0, 5]) {
        const ref = referenceRows(archive, ids, { kv: 'int8', act: 'a8', sink });
        await engine.reset({ sink });
        const r = await engine.generate(ids, { maxTokens: 0, wantRows: true });
        const vocab = engine.geometry.vocab;
        let worst = 0;
        r.rows.forEach((row, p) => {
          const e = maxRel(row, ref.all.subarray(p * vocab, (p + 1) * vocab));
          worst = Math.max(worst, e);
          assert.equal(e, 0, `${c.name}, sink ${sink}: position ${p} (window ${win}): ${e}`);
        });
        // prefilled in two calls (the second from inside the first window), then one step: the same rows
        await engine.reset({ sink });
        await engine.prefill(ids.slice(0, 37), { wantLogits: false });
        const before = await engine.prefill(ids.slice(37, n - 1));
        const lastRow = await engine.step(ids[n - 1]);
        assert.equal(maxRel(before, ref.all.subarray((n - 2) * vocab, (n - 1) * vocab)), 0, `${c.name}, sink ${sink}: prefill`);
        assert.equal(maxRel(lastRow, ref.all.subarray((n - 1) * vocab, n * vocab)), 0, `${c.name}, sink ${sink}: step after prefill`);
        t.diagnostic(`${c.name}: ${n} positions (window ${win}), sink ${sink}: max rel ${worst.toExponential(2)}`);
      }
    });
  });
}

test('refusals leave the session as it was: a token past the vocabulary, a full session', { skip: !model('tiny.cact') ? 'needs build/models' : false }, async () => {
  await withEngine({ threads: 2 }, 120000, async (engine) => {
    await engine.load(model('tiny.cact'));
    const { vocab, max_seq_len: maxSeq } = engine.geometry;
    await assert.rejects(engine.step(vocab), (e) => e.errorName === 'ERR_TOKEN');
    assert.equal(await engine.call('position'), 0);
    for (let p = 0; p < maxSeq; p++) await engine.step(2 + (p % 50), { wantLogits: p === maxSeq - 1 });
    assert.equal(await engine.call('position'), maxSeq);
    await assert.rejects(engine.step(2), (e) => e.errorName === 'ERR_FULL');
    assert.equal(await engine.call('position'), maxSeq);
    // generate stops at the end of the session instead of failing
    await engine.reset();
    const r = await engine.generate(promptIds(maxSeq - 4, vocab, 9), { maxTokens: 20, stopIds: [] });
    assert.equal(r.generated.length, 5);   // four fed back, the fifth drawn from the last position (as needle-ref)
  });
});
