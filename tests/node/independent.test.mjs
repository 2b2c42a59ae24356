// independent.test.mjs: an independent JavaScript implementation of the Needle 2 format and decode step
// (tests/independent/, written from the design page alone) cross-checks the C++ tools:
//   needle-info accepts archives written here; needle-ref's exact-oracle logits equal ours;
//   needle-pack on the same float weights (safetensors) gives the same bytes; and our reader decodes
//   needle-pack's archive to the same logits.
// Needs the tools: NEEDLE_BUILD_DIR (default build/) /bin/needle-{pack,ref,info}.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { TINY, CB2, CB3, CB4, CB_TERNARY, toF16Bits, fromF16Bits, fwht } from '../independent/format.mjs';
import { randomModel, geometryMetadata } from '../independent/random-model.mjs';
import { writeArchive, quantizeCQ } from '../independent/cact-writer.mjs';
import { writeSafetensors, readSafetensors } from '../independent/safetensors.mjs';
import { Archive } from '../independent/cact-reader.mjs';
import { Decoder, decodeAll, engramSlot, engramAcc } from '../independent/decode.mjs';
import { encodeSpmModel, testVocabulary, archiveType } from '../independent/spm-model.mjs';
import { compareArchives, maxRel } from '../independent/compare.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.resolve(REPO, process.env.NEEDLE_BUILD_DIR || 'build');
const BIN = path.join(BUILD, 'bin');
const tool = (name) => path.join(BIN, name);

// The two bits maps: the real Needle 2 map, and one that covers 3-bit and ternary records and the
// longest-prefix rule (mhc_phi_res=3 beats mhc=1.58).
const MAP_REAL = 'embedding=4,mhc=4,default=2';
const MAP_MIXED = 'embedding=3,attn.q_proj=1.58,attn.v_proj=3,attn.out_proj=1.58,mhc_phi_res=3,mhc=1.58,engram0=3,engram1.tables=1.58,default=2';

// 40 teacher-forced ids (BOS first) so the 32-key window is exceeded.
const IDS = [2, 5, 100, 7, 300];
for (let i = 0; IDS.length < 40; i++) IDS.push((i * 137 + 11) % TINY.vocab);

let dir;
const cases = {};

function run(name, args) {
  try {
    return execFileSync(tool(name), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
  } catch (e) {
    throw new Error(`${name} ${args.join(' ')} failed (exit ${e.status}):\n${e.stderr || ''}${e.stdout || ''}`);
  }
}

// needle-ref --logits-out: raw little-endian f32, vocab floats per row, one row per position.
function readLogits(file, positions, vocab) {
  const buf = fs.readFileSync(file);
  assert.equal(buf.length, 4 * positions * vocab, `${file}: ${buf.length} bytes, expected ${positions} rows of ${vocab} f32`);
  const f = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  return [...Array(positions)].map((_, p) => f.subarray(p * vocab, (p + 1) * vocab));
}

// The C++ tools are required (CI must build them first): a missing one fails the test, never skips it.
function requireTools() {
  const missing = ['needle-pack', 'needle-ref', 'needle-info'].filter((t) => !fs.existsSync(tool(t)));
  if (missing.length)
    throw new Error(`missing ${missing.join(', ')} in ${BIN}: build first, e.g. ` +
      `cmake -S ${REPO} -B ${BUILD} -DCMAKE_BUILD_TYPE=Release && cmake --build ${BUILD} -j2 ` +
      '--target needle-pack needle-ref needle-info (or point NEEDLE_BUILD_DIR at a build directory)');
}

function makeCase(name, seed, headCodes, bitsMap) {
  const model = randomModel(TINY, seed, headCodes);
  const mine = writeArchive(model, { bitsMap });
  const minePath = path.join(dir, `${name}.mine.cact`);
  fs.writeFileSync(minePath, mine);
  const stPath = path.join(dir, `${name}.safetensors`);
  fs.writeFileSync(stPath, writeSafetensors(model.tensors, geometryMetadata(TINY)));
  cases[name] = { model, mine, minePath, stPath, bitsMap, mineLogits: decodeAll(new Archive(mine), IDS) };
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-independent-'));
  makeCase('real', 20260801, [1, 2], MAP_REAL);
  makeCase('mixed', 77, [], MAP_MIXED);
});

after(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

test('independent format facts: codebooks, fp16, hash test vector, WHT', () => {
  assert.equal(CB2[0], Math.fround(-0.13317214));
  assert.equal(CB2[3], Math.fround(0.133460447));
  for (const cb of [CB2, CB3, CB4]) for (let i = 1; i < cb.length; i++) assert.ok(cb[i] > cb[i - 1]);
  assert.equal(CB_TERNARY[2].toPrecision(9), '0.108187906');
  assert.equal(toF16Bits(65504), 0x7bff);
  assert.equal(toF16Bits(65520), 0x7c00); // halfway rounds to even = overflow
  assert.equal(toF16Bits(1 + 2 ** -11), 0x3c00); // tie to even (down)
  assert.equal(toF16Bits(1 + 3 * 2 ** -11), 0x3c02); // tie to even (up)
  assert.equal(toF16Bits(2 ** -25), 0); // subnormal tie to even
  assert.equal(fromF16Bits(toF16Bits(-0.1)), -0.0999755859375);
  // §3 engram hash test vector (tokens 2 4 100 200 300, 8192 slots, tables 0,1 order 2 and 2,3 order 3)
  const toks = [2, 4, 100, 200, 300];
  const want = [[8135, 6202, 7636, 1872], [5410, 4264, 2086, 3358], [581, 6494, 539, 4133],
    [7041, 4262, 2608, 552], [4871, 2767, 3105, 5524]];
  want.forEach((row, p) => row.forEach((slot, tau) => assert.equal(engramAcc(toks, p, tau, tau < 2 ? 2 : 3) % 8192, slot)));
  assert.deepEqual([0, 1, 2, 3].map((t) => engramAcc(toks, 4, t, t < 2 ? 2 : 3).toString(16)),
    ['1b613307', 'b9bd8acf', 'fa85ac21', 'b1d53594']);
  assert.equal(engramSlot(toks, 1, 2, 3, 8192), -1); // order-3 rows unused at p = 1
  // natural-order Hadamard: H e_1 = (+,-,+,-,...)/sqrt(n)
  const e1 = new Float64Array(8); e1[1] = 1;
  assert.deepEqual([...fwht(e1)].map((v) => Math.sign(v)), [1, -1, 1, -1, 1, -1, 1, -1]);
});

test('independent writer and reader round-trip (bit packing, padding, ternary crumbs)', () => {
  // Quantise one row, then check the indices against a brute-force nearest level of the normalised
  // rotation, and the byte layout against the bit order of §2 spelled out per width.
  const G = 128;
  for (const bits of [2, 3, 4, 5]) {
    const levels = bits === 5 ? CB_TERNARY : { 2: CB2, 3: CB3, 4: CB4 }[bits];
    const w = Float32Array.from({ length: 100 }, (_, k) => Math.sin(0.7 * k + bits) + (k % 7) * 0.05);
    const blob = quantizeCQ(w, 1, 100, bits); // 100 columns: padded to 128
    const r = fwht(Float64Array.from({ length: G }, (_, k) => (k < 100 ? w[k] : 0)));
    const n = Math.hypot(...r);
    const idx = [...r].map((v) => {
      const u = v / n;
      let best = 0;
      levels.forEach((l, j) => { if (Math.abs(u - l) < Math.abs(u - levels[best])) best = j; });
      return best;
    });
    assert.ok(new Set(idx).size === levels.length, `bits ${bits}: test row should use every level`);
    const rowBytes = bits === 5 ? 32 : (G * bits) / 8;
    assert.equal(blob.length, rowBytes + 2, `bits ${bits}: one row of indices and one fp16 norm`);
    assert.equal(blob[rowBytes] | (blob[rowBytes + 1] << 8), toF16Bits(n));
    if (bits === 4) assert.equal(blob[0], idx[0] | (idx[1] << 4)); // even column in the low nibble
    if (bits === 2) assert.equal(blob[1], idx[4] | (idx[5] << 2) | (idx[6] << 4) | (idx[7] << 6));
    if (bits === 3) {
      const word = blob[3] | (blob[4] << 8) | (blob[5] << 16); // indices 8..15 in one 24-bit LE word
      assert.equal(word, idx.slice(8, 16).reduce((a, v, t) => a | (v << (3 * t)), 0));
    }
    if (bits === 5) {
      const crumb = [3, 0, 1];
      assert.equal(blob[2], crumb[idx[8]] | (crumb[idx[9]] << 2) | (crumb[idx[10]] << 4) | (crumb[idx[11]] << 6));
      for (const byte of blob.subarray(0, 32)) for (let t = 0; t < 8; t += 2) assert.notEqual((byte >> t) & 3, 2);
    }
    const fake = Object.create(Archive.prototype);
    fake.bytes = blob;
    const rec = { offset: 0, shape: [1, 100], bits, key: 't' };
    assert.deepEqual(Array.from({ length: G }, (_, k) => fake.cqIndex(rec, 0, k)), idx, `bits ${bits}`);
  }
  for (const c of Object.values(cases)) {
    const A = new Archive(c.mine);
    assert.deepEqual(A.geo, { ...TINY });
    // engram tables have 64 columns padded to 128: dequantised rows stay close to the originals
    for (const key of ['embedding', 'engram.1.tables', 'mhc.phi_res']) {
      const W = A.dequantize(key), orig = c.model.tensors.get(key).data;
      let num = 0, den = 0;
      for (let i = 0; i < W.length; i++) { num += (W[i] - orig[i]) ** 2; den += orig[i] ** 2; }
      assert.ok(Math.sqrt(num / den) < 0.6, `${c.bitsMap} ${key} relative error ${Math.sqrt(num / den)}`);
    }
    for (const p of [0, 39]) assert.ok(c.mineLogits[p].every(Number.isFinite));
    const st = readSafetensors(fs.readFileSync(c.stPath));
    assert.equal(st.metadata.engram_orders, '2,3');
    assert.deepEqual(st.tensors.get('mhc.b_res').data, c.model.tensors.get('mhc.b_res').data);
  }
});

test('needle-info accepts archives written independently (with heads, mixed widths, tokenizer)', () => {
  requireTools();
  for (const c of Object.values(cases)) run('needle-info', [c.minePath]);
  // a tokenizer RAW record: 14 specials, 256 byte pieces, normal pieces up to vocab
  const pieces = testVocabulary(TINY.vocab).map((p) => ({ piece: p.piece, score: p.score, type: archiveType(p.spmType, p.piece) }));
  const c = cases.real;
  const withTok = writeArchive(c.model, { bitsMap: MAP_REAL, tokenizer: pieces });
  const A = new Archive(withTok);
  assert.equal(A.tokenizer.pieces.length, TINY.vocab);
  assert.equal(A.tokenizer.pieces[300].piece, pieces[300].piece);
  const p = path.join(dir, 'real.tok.cact');
  fs.writeFileSync(p, withTok);
  run('needle-info', [p]);
});

// When the logits disagree: the first layer at position 0 whose output lanes differ (needle-ref --dump).
function layerDiagnosis(c) {
  const dumpPath = path.join(dir, 'diag.json');
  run('needle-ref', ['--archive', c.minePath, '--ids', String(IDS[0]), '--kv', 'f32', '--act', 'f32', '--dump', dumpPath]);
  const dump = JSON.parse(fs.readFileSync(dumpPath, 'utf8'));
  const dec = new Decoder(new Archive(c.mine));
  const lines = [];
  dec.onLayer = (t) => {
    const ref = dump.position0.layers[t.layer];
    const e = (mine, theirs) => maxRel(mine.flatMap((x) => [...x]), theirs).toExponential(2);
    lines.push(`layer ${t.layer}: lanes in ${e(t.in, ref.in)}, out ${e(t.out, ref.out)}`);
  };
  dec.step(IDS[0]);
  const E = dump.position0.embedding;
  return `position 0 vs needle-ref --dump: embedding ${maxRel(Array.from(E, (_, c2) => dec.W.embedding[IDS[0] * TINY.d_model + c2] * Math.sqrt(TINY.d_model)), E).toExponential(2)}; ${lines.join('; ')}`;
}

test('needle-ref exact-oracle logits equal the independent decode', () => {
  requireTools();
  const failures = [];
  for (const [name, c] of Object.entries(cases)) {
    const out = path.join(dir, `${name}.ref.logits`);
    run('needle-ref', ['--archive', c.minePath, '--ids', IDS.join(' '), '--kv', 'f32', '--act', 'f32', '--logits-out', out]);
    const ref = readLogits(out, IDS.length, TINY.vocab);
    const errors = IDS.map((_, p) => maxRel(c.mineLogits[p], ref[p]));
    const worst = Math.max(...errors);
    console.log(`# needle-ref vs independent decode, ${name}: worst max rel error ${worst.toExponential(2)} over ${IDS.length} positions`);
    if (!(worst < 1e-4))
      failures.push(`${name} (${c.bitsMap}): max rel error ${errors[0].toExponential(2)} at position 0, worst ${worst.toExponential(2)} at position ${errors.indexOf(worst)}; ${layerDiagnosis(c)}`);
  }
  assert.deepEqual(failures, [], 'needle-ref disagrees with the design page decode');
});

test('needle-pack from safetensors reproduces the independent archive bytes', () => {
  requireTools();
  for (const [name, c] of Object.entries(cases)) {
    const oursPath = path.join(dir, `${name}.ours.cact`);
    run('needle-pack', ['--safetensors', c.stPath, '--bits-map', c.bitsMap, '-o', oursPath]);
    const ours = new Uint8Array(fs.readFileSync(oursPath));
    c.ours = ours;
    const r = compareArchives(c.mine, ours);
    console.log(`# needle-pack vs independent writer, ${name}: ${r.lengths[0]} vs ${r.lengths[1]} bytes; ` +
      `CQ ${r.cq.diffBytes} of ${r.cq.bytes} bytes differ (${r.cq.normDiff} in norms)`);
    for (const line of r.perRecord) console.log(`#   ${line}`);
    // For the record: rounding the f64 norm straight to fp16 (no f32 step) moves a few midpoint norms.
    const direct = compareArchives(writeArchive(c.model, { bitsMap: c.bitsMap, normRounding: 'direct' }), ours);
    console.log(`#   (with single f64->fp16 norm rounding: ${direct.cq.diffBytes} CQ bytes would differ, ${direct.cq.normDiff} in norms)`);
    assert.equal(r.headerDiff, 0, `${name}: header bytes differ`);
    assert.equal(r.codebookDiff, 0, `${name}: codebook bytes differ`);
    assert.deepEqual(r.directoryDiff, [], `${name}: directory records differ`);
    assert.ok(r.lengthEqual, `${name}: lengths ${r.lengths}`);
    assert.equal(r.fp16Diff, 0, `${name}: FP16 blobs differ`);
    assert.equal(r.gapDiff, 0, `${name}: alignment gaps not zero`);
    assert.ok(r.cq.diffBytes / r.cq.bytes < 1e-4, `${name}: ${r.cq.diffBytes} of ${r.cq.bytes} CQ bytes differ`);
  }
});

test('the independent reader decodes needle-pack archives to the same logits', () => {
  requireTools();
  for (const [name, c] of Object.entries(cases)) {
    assert.ok(c.ours, `${name}: needle-pack output missing (the pack test failed)`);
    const logits = decodeAll(new Archive(c.ours), IDS);
    let worst = 0;
    IDS.forEach((_, p) => {
      const e = maxRel(logits[p], c.mineLogits[p]);
      worst = Math.max(worst, e);
      assert.ok(e < 1e-4, `${name}: position ${p} max rel error ${e}`);
    });
    console.log(`# independent decode, needle-pack archive vs own archive, ${name}: worst ${worst.toExponential(2)}`);
  }
});

test('needle-pack --spm writes the same tokenizer record as the independent writer', () => {
  requireTools();
  const vocab = testVocabulary(TINY.vocab);
  const modelPath = path.join(dir, 'tok.model');
  fs.writeFileSync(modelPath, encodeSpmModel(vocab));
  const c = cases.real;
  const oursPath = path.join(dir, 'real.tok.ours.cact');
  run('needle-pack', ['--safetensors', c.stPath, '--bits-map', c.bitsMap, '--spm', modelPath, '-o', oursPath]);
  const pieces = vocab.map((p) => ({ piece: p.piece, score: p.score, type: archiveType(p.spmType, p.piece) }));
  const mine = writeArchive(c.model, { bitsMap: c.bitsMap, tokenizer: pieces });
  const r = compareArchives(mine, new Uint8Array(fs.readFileSync(oursPath)));
  assert.equal(r.headerDiff + r.codebookDiff, 0, 'header or codebooks differ');
  assert.deepEqual(r.directoryDiff, []);
  assert.equal(r.rawDiff, 0, `tokenizer blob differs: ${r.perRecord.join('; ')}`);
  assert.ok(r.lengthEqual);
  const tok = new Archive(mine).tokenizer;
  assert.deepEqual([tok.pad, tok.eos, tok.bos, tok.unk, tok.addDummyPrefix, tok.byteFallback], [0, 1, 2, 3, 1, 1]);
  // §1.5 order: markers are USER_DEFINED (3); another user-defined piece is NORMAL (0); bytes are 4
  assert.deepEqual([4, 14, 15].map((i) => [tok.pieces[i].piece, tok.pieces[i].type]),
    [['<|im_start|>', 3], ['<extra_id>', 0], ['<0x00>', 4]]);
});
