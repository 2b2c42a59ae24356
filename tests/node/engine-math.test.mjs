// The transcendentals of docs/numerics.md against their definition (helpers/numerics.mjs, the same f64
// operations in JavaScript), bit for bit, and against JavaScript's Math; fp16; and the SIMD
// Walsh-Hadamard transform against a scalar butterfly in the same stage order.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rng, withEngine } from './helpers/engine.mjs';
import * as def from './helpers/numerics.mjs';

// Largest relative error of fn(x) against ref(x) over xs (absolute near zero).
function worst(got, xs, ref) {
  let w = 0;
  xs.forEach((x, i) => {
    const r = ref(x);
    const e = Math.abs(got[i] - r) / Math.max(Math.abs(r), 1e-300);
    w = Math.max(w, Number.isFinite(e) ? e : (got[i] === r ? 0 : Infinity));
  });
  return w;
}

// Object.is per element (NaN equals NaN, +0 differs from -0), reporting the first difference.
function sameBits(got, want, xs, what) {
  xs.forEach((x, i) => assert.ok(Object.is(got[i], want[i]), `${what}(${x}) = ${got[i]}, definition ${want[i]}`));
}

test('exp64, log64, sin64, cos64 equal their definition bit for bit and agree with Math to a few ulps', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(7);
    const expXs = [0, 1, -1, 0.5, 1e-10, -1e-10, 700, -700, -740, 709.7];
    for (let i = 0; i < 2000; i++) expXs.push((next() - 0.5) * 200);
    const logXs = [1, 2, 0.5, 10, 1e-300, 1e300, 5e-324, 1.0000001, 0.9999999];
    for (let i = 0; i < 2000; i++) logXs.push(Math.exp((next() - 0.5) * 100));
    const trigXs = [0, 1, -1, Math.PI / 4, Math.PI / 2, 3, 100, 2047, 2047.99, -500];
    for (let i = 0; i < 2000; i++) trigXs.push((next() - 0.5) * 4096);
    const e = await engine.call('math', { fn: 'exp64', xs: expXs });
    const l = await engine.call('math', { fn: 'log64', xs: logXs });
    const s = await engine.call('math', { fn: 'sin64', xs: trigXs });
    const c = await engine.call('math', { fn: 'cos64', xs: trigXs });
    sameBits(e, expXs.map(def.exp64), expXs, 'exp64');
    sameBits(l, logXs.map(def.log64), logXs, 'log64');
    sameBits(s, trigXs.map(def.sin64), trigXs, 'sin64');
    sameBits(c, trigXs.map(def.cos64), trigXs, 'cos64');
    assert.ok(worst(e, expXs, Math.exp) < 4e-15, `exp ${worst(e, expXs, Math.exp)}`);
    assert.ok(worst(l, logXs, Math.log) < 4e-15, `log ${worst(l, logXs, Math.log)}`);
    // sin/cos: absolute error (values near a root have a tiny reference)
    const abs = (got, ref) => Math.max(...trigXs.map((x, i) => Math.abs(got[i] - ref(x))));
    assert.ok(abs(s, Math.sin) < 2e-15, `sin ${abs(s, Math.sin)}`);
    assert.ok(abs(c, Math.cos) < 2e-15, `cos ${abs(c, Math.cos)}`);
    // special values
    const sp = await engine.call('math', { fn: 'exp64', xs: [Infinity, -Infinity, NaN, 710, -746] });
    assert.deepEqual(sp.slice(0, 2), [Infinity, 0]);
    assert.ok(Number.isNaN(sp[2]));
    assert.deepEqual(sp.slice(3), [Infinity, 0]);
    const lsp = await engine.call('math', { fn: 'log64', xs: [0, -1, Infinity] });
    assert.equal(lsp[0], -Infinity);
    assert.ok(Number.isNaN(lsp[1]));
    assert.equal(lsp[2], Infinity);
    const tsp = await engine.call('math', { fn: 'sin64', xs: [Infinity, NaN, 2 ** 30, -(2 ** 30)] });
    assert.ok(tsp.every(Number.isNaN), `sin64 outside its domain: ${tsp}`);
  });
});

// One ulp of f32 at |x| (the gap above it).
function ulp(x) {
  const f = new Float32Array([Math.abs(x)]);
  const u = new Uint32Array(f.buffer);
  const a = f[0];
  u[0] += 1;
  return f[0] - a;
}

// f32 values from random bit patterns (NaNs dropped), so that every binade is sampled.
function randomFloats(next, n, keep) {
  const out = [];
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  while (out.length < n) {
    bits[0] = Math.floor(next() * 2 ** 32);
    if (!Number.isNaN(f[0]) && keep(f[0])) out.push(f[0]);
  }
  return out;
}

test('expf and logf equal the definition of numerics.md bit for bit, within 0.501 ulp of Math', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(3);
    const xs = [0, -0, 1, -1, 88, 88.72, 88.73, -87, -103, -103.9, -104, 104, 1e-30, -1e-30].map(Math.fround);
    for (let i = 0; i < 5000; i++) xs.push(Math.fround((next() - 0.5) * 60));
    xs.push(...randomFloats(next, 5000, (x) => Math.abs(x) <= 110));
    const e = await engine.call('math', { fn: 'expf', xs });
    sameBits(e, xs.map(def.expf32), xs, 'expf');
    let exact = 0;
    xs.forEach((x, i) => {
      const r = Math.exp(x);
      if (e[i] === Infinity) assert.ok(r > 3.4028234663852886e38, `expf(${x}) overflowed`);
      else assert.ok(Math.abs(e[i] - r) <= 0.501 * ulp(r), `expf(${x}) = ${e[i]}, Math ${r}`);
      if (e[i] === Math.fround(r)) exact++;
    });
    assert.ok(exact >= 0.999 * xs.length, `only ${exact} of ${xs.length} correctly rounded`);
    const pos = [1, 2, 0.5, 1e-40, 1e-45, 3e38, 3.4028234663852886e38, 1.0000001, 0.99999994].map(Math.fround)
      .concat(xs.map((x) => Math.fround(Math.abs(x) + 1e-3)), randomFloats(next, 5000, (x) => x > 0 && x < Infinity));
    const l = await engine.call('math', { fn: 'logf', xs: pos });
    sameBits(l, pos.map(def.logf32), pos, 'logf');
    pos.forEach((x, i) => {
      const r = Math.log(x);
      assert.ok(Math.abs(l[i] - r) <= 0.501 * ulp(r), `logf(${x}) = ${l[i]}, Math ${r}`);
    });
    const sp = await engine.call('math', { fn: 'expf', xs: [Infinity, -Infinity, NaN, 89, -104.5] });
    assert.deepEqual([sp[0], sp[1], sp[3], sp[4]], [Infinity, 0, Infinity, 0]);
    assert.ok(Object.is(sp[1], 0) && Object.is(sp[4], 0), 'underflow gives +0');
    assert.ok(Number.isNaN(sp[2]));
    const lsp = await engine.call('math', { fn: 'logf', xs: [0, -0, -1, Infinity, -Infinity, NaN] });
    assert.deepEqual([lsp[0], lsp[1], lsp[3]], [-Infinity, -Infinity, Infinity]);
    assert.ok(Number.isNaN(lsp[2]) && Number.isNaN(lsp[4]) && Number.isNaN(lsp[5]));
  });
});

test('expf4 (four lanes at once: the softmax, SiLU, gates and Sinkhorn) equals expf lane by lane, bit for bit', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(5);
    // the edges of the fast path (|x| <= 104) and lanes that leave it (inf, NaN, past 104) beside
    // ordinary ones, so that both the vector path and the lane-by-lane one are checked
    const xs = [0, -0, 1, -1, 104, -104, 104.00001, -104.00001, 88.72, -87.3, Infinity, -Infinity, NaN, 1e-30, -1e-30, 0.5,
      -103.99, 103.99, 50, -50].map(Math.fround);
    for (let i = 0; i < 20000; i++) xs.push(Math.fround((next() - 0.5) * 220));
    xs.push(...randomFloats(next, 4000, () => true));
    while (xs.length % 4) xs.push(0);
    const v = await engine.call('math4', { fn: 'expf4', xs });
    const s = await engine.call('math', { fn: 'expf', xs });
    sameBits(v, s, xs, 'expf4');
  });
});

test('Sinkhorn of four lanes (four logsumexps at once) equals the one-lane way bit for bit', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(9);
    const values = [];
    for (let k = 0; k < 2000; k++) {
      const spread = [0.1, 2, 20, 90][k % 4];  // near-uniform to one-hot rows, and exp past the fast path
      for (let i = 0; i < 16; i++) values.push(Math.fround((next() - 0.5) * spread));
    }
    for (let i = 0; i < 16; i++) values.push(i % 5 ? 0 : -0);  // ties and signed zeros
    const fast = await engine.call('sinkhorn', { values, n: 4, generic: false });
    const slow = await engine.call('sinkhorn', { values, n: 4, generic: true });
    sameBits(fast, slow, values, 'sinkhorn4');
    // a doubly stochastic result: every column sums to 1 within f32 rounding
    for (let k = 0; k < fast.length; k += 16)
      for (let c = 0; c < 4; c++) {
        const sum = fast[k + c] + fast[k + 4 + c] + fast[k + 8 + c] + fast[k + 12 + c];
        assert.ok(Math.abs(sum - 1) < 1e-5, `matrix ${k / 16} column ${c} sums to ${sum}`);
      }
  });
});

// The pinned values that tests/cpp/math/mathf_test.cpp asserts for host/mathf.cpp: the C++ reference,
// the engine and the JavaScript definition all give these bits.
const PINNED_EXPF = [[1, 0x402df854], [-1, 0x3ebc5ab2], [0.5, 0x3fd3094c], [-7.25, 0x3a3a2aff],
  [20.5, 0x4e3eb628], [-100.5, 0x00000010], [88.5, 0x7f4cdcc4], [-0.001, 0x3f7fbe7f]];
const PINNED_LOGF = [[2, 0x3f317218], [0.1, 0xc0135d8e], [3e38, 0x42b13196], [1e-40, 0xc2b834f2],
  [1.0000001, 0x33ffffff], [7, 0x3ff91395], [0.75, 0xbe934b11]];
const PINNED_64 = [['exp64', -3.5, '3f9eec1018e4ff66'], ['exp64', 10.25, '40db9ea2aed2a0f1'],
  ['log64', 10000, '40226bb1bbb55516'], ['log64', 0.3, 'bff34378fcbda721'],
  ['sin64', 1000.5, '3fefd948c50a7a0d'], ['sin64', 0.7, '3fe49d6e694619b8'],
  ['cos64', 3, 'bfefae04be85e5d2'], ['cos64', 1000.5, '3fb8dbff75eb6650']];

test('pinned bits shared with the C++ test: engine and definition', async () => {
  await withEngine({}, 20000, async (engine) => {
    for (const [fn, pins, ref] of [['expf', PINNED_EXPF, def.expf32], ['logf', PINNED_LOGF, def.logf32]]) {
      const xs = pins.map(([x]) => Math.fround(x));
      const got = await engine.call('math', { fn, xs });
      pins.forEach(([x, bits], i) => {
        assert.equal(def.f32Bits(got[i]), bits, `${fn}(${x}) engine`);
        assert.equal(def.f32Bits(ref(xs[i])), bits, `${fn}(${x}) definition`);
      });
    }
    for (const [fn, x, hex] of PINNED_64) {
      const [got] = await engine.call('math', { fn, xs: [x] });
      assert.equal(def.f64Hex(got), hex, `${fn}(${x}) engine`);
      assert.equal(def.f64Hex(def[fn](x)), hex, `${fn}(${x}) definition`);
    }
  });
});

test('fp16 widening: zero, signs, subnormals, infinity, NaN', async () => {
  await withEngine({}, 20000, async (engine) => {
    const got = await engine.call('math', { fn: 'f16', xs: [0x0000, 0x8000, 0x3c00, 0xbc00, 0x0001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3555] });
    assert.deepEqual(got.slice(0, 9), [0, -0, 1, -1, 2 ** -24, 1023 * 2 ** -24, 65504, Infinity, -Infinity]);
    assert.ok(Number.isNaN(got[9]));
    assert.equal(got[10], Math.fround(0.333251953125));
  });
});

// The scalar butterfly of docs/numerics.md, in f32.
function fwhtRef(values) {
  const x = Float32Array.from(values);
  for (let s = 1; s < x.length; s <<= 1)
    for (let b = 0; b < x.length; b += 2 * s)
      for (let j = b; j < b + s; j++) { const a = x[j]; const c = x[j + s]; x[j] = a + c; x[j + s] = a - c; }
  return x;
}

test('SIMD FWHT equals the scalar butterfly bit for bit, and H(Hx) = n x', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(11);
    for (const n of [1, 2, 4, 8, 32, 128, 512, 1024]) {
      const v = Array.from({ length: n }, () => (next() - 0.5) * 10);
      const got = await engine.call('fwht', { values: v, normalized: false });
      assert.deepEqual(Array.from(got), Array.from(fwhtRef(v)), `n = ${n}`);
      const twice = await engine.call('fwht', { values: Array.from(got), normalized: false });
      const f = Float32Array.from(v);
      for (let i = 0; i < n; i++) assert.ok(Math.abs(twice[i] - n * f[i]) <= 1e-4 * n * 10, `n = ${n}, i = ${i}`);
      const norm = await engine.call('fwht', { values: v, normalized: true });
      const scale = Math.fround(1 / Math.sqrt(n));
      const ref = fwhtRef(v).map((x) => Math.fround(x * scale));
      assert.deepEqual(Array.from(norm), Array.from(ref), `normalised n = ${n}`);
    }
  });
});
