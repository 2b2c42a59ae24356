// Loading in place: the engine validates an archive with the C++ reader's checks, in its order, and
// answers an ERR_* code and the failing record, never a trap. Every truncation point of the tiny
// archive without a tokenizer, random byte flips of it and of the tiny archive with one (tokenizer
// blob included), and a sample of both compared with needle-info (accept/reject and record index).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { model, rng, runTool, tempPath, tool, withEngine } from './helpers/engine.mjs';

const notok = model('tiny-notok.cact');
const withTok = model('tiny.cact');
const skip = !notok || !tool('needle-info') ? 'needs build/models and needle-info' : false;

// needle-info's verdict on bytes: {ok} or {ok: false, record} (-1 when the message names none).
function cppVerdict(bytes, name) {
  const file = tempPath(name);
  fs.writeFileSync(file, bytes);
  const r = runTool('needle-info', [file]);
  fs.rmSync(file);
  if (r.status === 0) return { ok: true, record: -1 };
  assert.equal(r.status, 1, r.stderr);
  const m = /\(record (\d+)/.exec(r.stderr);
  return { ok: false, record: m ? Number(m[1]) : -1, message: r.stderr.trim() };
}

test('every truncation point gives an error code, never a trap', { skip }, async () => {
  const bytes = fs.readFileSync(notok);
  await withEngine({}, 120000, async (engine) => {
    await engine.load(notok);
    const lengths = Array.from({ length: bytes.length }, (_, i) => i);
    const results = [];
    for (let at = 0; at < lengths.length; at += 20000)
      results.push(...await engine.call('truncations', { lengths: lengths.slice(at, at + 20000) }));
    assert.equal(results.length, bytes.length);
    results.forEach(([code], len) => assert.notEqual(code, 0, `accepted a truncation to ${len} bytes`));
    const codes = new Set(results.map(([code]) => engine.errorName(code)));
    assert.ok(codes.has('ERR_TRUNCATED') && codes.has('ERR_BOUNDS'), [...codes].join(' '));
    // the full length still loads
    const [[full]] = await engine.call('truncations', { lengths: [bytes.length] });
    assert.equal(full, 0);
    // a sample against needle-info: the same verdict and the same failing record
    const next = rng(3);
    const sample = [0, 3, 4, 119, 120, 231, 232, 233, 1000, bytes.length - 1];
    for (let i = 0; i < 50; i++) sample.push(Math.floor(next() * bytes.length));
    for (const len of sample) {
      const ref = cppVerdict(bytes.subarray(0, len), `trunc-${len}.cact`);
      assert.equal(ref.ok, false);
      assert.equal(results[len][1], ref.record, `truncation to ${len}: engine record ${results[len][1]}, needle-info: ${ref.message}`);
    }
  });
});

for (const [name, archive, count] of [['tiny-notok', notok, 400], ['tiny', withTok, 250]]) {
  test(`random byte flips of ${name}: the same verdict and record as needle-info`, { skip: skip || !archive }, async () => {
    const bytes = fs.readFileSync(archive);
    const next = rng(name.length * 7919);
    // header, codebooks and directory get most flips (that is where the checks are); then blobs,
    // the tokenizer blob (the last 100 KB of tiny) included
    const dirEnd = 232 + 44 * bytes.readUInt32LE(4);
    const flips = [];
    for (let i = 0; i < count; i++) {
      const where = next();
      const offset = where < 0.5 ? Math.floor(next() * dirEnd)
        : where < 0.75 ? bytes.length - 1 - Math.floor(next() * Math.min(bytes.length, 120000))
        : Math.floor(next() * bytes.length);
      flips.push([offset, 1 << Math.floor(next() * 8)]);
    }
    await withEngine({}, 120000, async (engine) => {
      await engine.load(archive);
      const got = await engine.call('flips', { flips });
      let rejected = 0;
      flips.forEach(([offset, xor], i) => {
        const copy = Buffer.from(bytes);
        copy[offset] ^= xor;
        const ref = cppVerdict(copy, `flip-${name}-${i}.cact`);
        const [code, record] = got[i];
        const what = `flip of bit ${Math.log2(xor)} at byte ${offset}: engine ${engine.errorName(code)} record ${record}; needle-info ${ref.ok ? 'accepts' : ref.message}`;
        assert.equal(code === 0, ref.ok, what);
        if (!ref.ok) { assert.equal(record, ref.record, what); rejected++; }
      });
      assert.ok(rejected > count / 10, `only ${rejected} flips were rejected`);
    });
  });
}

test('unknown tags and old/new generations get their own codes', { skip }, async () => {
  const bytes = Buffer.from(fs.readFileSync(notok));
  await withEngine({}, 60000, async (engine) => {
    for (const [tag, name] of [[0x05E12A82, 'ERR_NEEDLE1'], [0x05E12A84, 'ERR_NEEDLE3'], [0x12345678, 'ERR_TAG']]) {
      bytes.writeUInt32LE(tag, 0);
      await assert.rejects(engine.load(bytes), (e) => e.errorName === name && e.record === -1);
    }
  });
});
