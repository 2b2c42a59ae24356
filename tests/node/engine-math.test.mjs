// The engine's own exp, log, sin and cos (f64 series) against JavaScript's Math, its f32 forms, fp16,
// and the SIMD Walsh-Hadamard transform against a scalar butterfly in the same stage order.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rng, withEngine } from './helpers/engine.mjs';

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

test('exp64, log64, sin64, cos64 agree with Math to a few ulps', async () => {
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
  });
});

// One ulp of f32 at x.
function ulp(x) {
  const f = new Float32Array([Math.abs(x)]);
  const u = new Uint32Array(f.buffer);
  const a = f[0];
  u[0] += 1;
  return f[0] - a;
}

test('expf and logf (the C library algorithm) stay within one ulp of Math', async () => {
  await withEngine({}, 20000, async (engine) => {
    const next = rng(3);
    const xs = [0, -0, 1, -1, 88, -87, -103.9, 1e-30];
    for (let i = 0; i < 5000; i++) xs.push(Math.fround((next() - 0.5) * 60));
    const e = await engine.call('math', { fn: 'expf', xs });
    let exact = 0;
    xs.forEach((x, i) => {
      const r = Math.exp(x);
      assert.ok(Math.abs(e[i] - r) <= ulp(r), `expf(${x}) = ${e[i]}, Math ${r}`);
      if (e[i] === Math.fround(r)) exact++;
    });
    assert.ok(exact > 0.99 * xs.length, `only ${exact} of ${xs.length} correctly rounded`);
    const pos = [1, 2, 0.5, 1e-40, 3e38, 1.0000001].map(Math.fround).concat(xs.map((x) => Math.fround(Math.abs(x) + 1e-3)));
    const l = await engine.call('math', { fn: 'logf', xs: pos });
    pos.forEach((x, i) => {
      const r = Math.log(x);
      assert.ok(Math.abs(l[i] - r) <= ulp(r), `logf(${x}) = ${l[i]}, Math ${r}`);
    });
    const sp = await engine.call('math', { fn: 'expf', xs: [Infinity, -Infinity, NaN, 89, -104] });
    assert.deepEqual([sp[0], sp[1], sp[3], sp[4]], [Infinity, 0, Infinity, 0]);
    assert.ok(Number.isNaN(sp[2]));
    const lsp = await engine.call('math', { fn: 'logf', xs: [0, -1, Infinity, NaN] });
    assert.equal(lsp[0], -Infinity);
    assert.ok(Number.isNaN(lsp[1]) && Number.isNaN(lsp[3]));
    assert.equal(lsp[2], Infinity);
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
