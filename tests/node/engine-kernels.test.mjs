// The CQ kernels per width (2-, 3-, 4-bit and ternary): the engine's SIMD products and row
// dequantisation equal a scalar JavaScript re-implementation of docs/numerics.md bit for bit, on
// archives packed at each width; the reference's matvec rung and logits agree exactly too, and the
// batched prefill's products give the same logits; NaN and infinite activations quantise as the
// scalar rule says.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { cqRecord, dequantRow, matvecA8 } from './helpers/cq-scalar.mjs';
import { maxRel, referenceDump, referenceRows, rng, runTool, tempPath, tool, withEngine } from './helpers/engine.mjs';

const skip = !tool('needle-pack') || !tool('needle-ref') ? 'needs needle-pack and needle-ref' : false;

// A tiny random archive whose CQ records all have one width.
function packed(width) {
  const file = tempPath(`tiny-w${width}.cact`);
  if (!fs.existsSync(file)) {
    const r = runTool('needle-pack', ['--random', '--geometry', 'tiny', '--seed', '3', '--vocab', '512',
      '--bits-map', `default=${width}`, '-o', file]);
    assert.equal(r.status, 0, r.stderr);
  }
  return file;
}

for (const width of ['2', '3', '4', '1.58']) {
  test(`CQ ${width}-bit: SIMD products and dequantised rows equal the scalar A8 definition`, { skip }, async () => {
    const file = packed(width);
    const bytes = fs.readFileSync(file);
    const next = rng(41);
    await withEngine({ threads: 2 }, 120000, async (engine) => {
      await engine.load(file);
      const L = engine.geometry.num_layers;
      // embedding, q_proj, out_proj, phi_pre, phi_res, engram tables and key projection
      const records = [0, 2, 8, 1 + 14 * L + 6, 1 + 14 * L + 8, 1 + 14 * L + 9, 1 + 14 * L + 10];
      for (const [rec, general] of records.flatMap((r) => [[r, false], [r, true]])) {
        // every record twice: the four-block kernels (groups of 128k) and the general ones (any group)
        await engine.call('generalKernels', { on: general });
        const m = cqRecord(bytes, rec);
        assert.equal(m.bits, width === '1.58' ? 5 : Number(width));
        const x = Array.from({ length: m.cols }, () => Math.fround((next() - 0.5) * 4));
        const got = await engine.call('matvec', { record: rec, input: x });
        const limit = Math.min(m.rows, 96);
        const want = matvecA8(m, x, limit);
        assert.deepEqual(Array.from(got.subarray(0, limit)), want, `record ${rec} (${m.rows} x ${m.cols}), ${general ? 'general' : 'four-block'} kernel`);
        const row = Math.floor(next() * m.rows);
        const dq = await engine.call('dequantRow', { record: rec, row });
        assert.deepEqual(Array.from(dq), dequantRow(m, row), `dequantised row ${row} of record ${rec}`);
      }
    });
  });

  test(`CQ ${width}-bit: the reference's matvec rung and logits agree exactly`, { skip }, async () => {
    const file = packed(width);
    const ids = [2, 17, 300, 5, 44, 128, 9, 511];
    const { dump } = referenceDump(file, ids, { kv: 'int8', act: 'a8' });
    const rows = referenceRows(file, ids, { kv: 'int8', act: 'a8' });
    await withEngine({ threads: 1 }, 120000, async (engine) => {
      await engine.load(file);
      const y = await engine.call('matvec', { record: 2, input: dump.matvec.input });
      assert.ok(maxRel(y, dump.matvec.output) < 1e-7, 'matvec rung (dump floats have 9 digits)');
      const r = await engine.generate(ids, { wantRows: true });
      const vocab = engine.geometry.vocab;
      r.rows.forEach((row, p) => assert.equal(maxRel(row, rows.all.subarray(p * vocab, (p + 1) * vocab)), 0, `row ${p}`));
      // the batched prefill's products at this width: the same last row, bit for bit
      await engine.reset();
      const last = await engine.prefill(ids);
      assert.ok(Buffer.from(last.buffer).equals(Buffer.from(r.rows[ids.length - 1].buffer)), 'prefill of the prompt: last row');
    });
  });
}

// Activations that are not finite (docs/numerics.md, quantizeBlockInt8): the block maximum skips NaN,
// a NaN product rounds to 0, an infinite maximum makes every lane 0 and the scale infinite. The
// engine's $quant_block must give the scalar rule's products bit for bit, NaN where it gives NaN, in
// both kernels, and the next finite product must be unaffected.
test('CQ 4-bit and 2-bit: NaN and infinite activations quantise as the scalar rule does', { skip }, async () => {
  for (const width of ['4', '2']) {
    const file = packed(width);
    const bytes = fs.readFileSync(file);
    const next = rng(43);
    await withEngine({ threads: 2 }, 120000, async (engine) => {
      await engine.load(file);
      const rec = 2;  // layer 0's query projection
      const m = cqRecord(bytes, rec);
      const finite = () => Array.from({ length: m.cols }, () => Math.fround((next() - 0.5) * 4));
      const cases = [
        ['one NaN', (x) => { x[3] = NaN; }],
        ['one +Infinity', (x) => { x[m.cols - 1] = Infinity; }],
        ['NaN and -Infinity in two groups', (x) => { x[0] = NaN; x[m.cols - 1] = -Infinity; }],
        ['all NaN', (x) => x.fill(NaN)],
      ];
      const limit = Math.min(m.rows, 96);
      let nans = 0;
      for (const general of [false, true]) {
        await engine.call('generalKernels', { on: general });
        for (const [name, spoil] of cases) {
          const x = finite();
          spoil(x);
          const want = matvecA8(m, x, limit);
          nans += want.filter(Number.isNaN).length;
          const got = await engine.call('matvec', { record: rec, input: x });
          assert.deepEqual(Array.from(got.subarray(0, limit)), want, `${width}-bit, ${name}, ${general ? 'general' : 'four-block'} kernel`);
        }
        const x = finite();
        const got = await engine.call('matvec', { record: rec, input: x });
        assert.deepEqual(Array.from(got.subarray(0, limit)), matvecA8(m, x, limit), `${width}-bit: a finite product after them`);
      }
      assert.ok(nans > 0, 'an infinite activation makes NaN products (the cases reach that path)');
    });
  }
});
