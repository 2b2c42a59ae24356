// numerics.mjs (test helper): the transcendentals of docs/numerics.md ("Transcendentals") in plain
// JavaScript, one f64 operation per step in the order the page states. JavaScript numbers are IEEE f64
// with correctly rounded + - * / and sqrt, and Math.fround rounds to f32 once, so these give the exact
// bits that host/mathf.cpp and engine.wat must give; the tests compare all three.

// An f64 from a C99 hex literal such as '0x1.62e42fefa39efp-6' (exact: at most 53 significant bits).
export function hexFloat(text) {
  const m = /^(-?)0x([01])\.([0-9a-f]*)p([+-]?\d+)$/i.exec(text);
  if (!m) throw new Error(`not a hex float: ${text}`);
  const digits = m[3];
  const significand = parseInt(m[2] + digits, 16);   // < 2^53: exact
  const v = significand * 2 ** (Number(m[4]) - 4 * digits.length);
  return m[1] ? -v : v;
}

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);
const bitsOf = (x) => { f64[0] = x; return u64[0]; };
const fromBits = (b) => { u64[0] = BigInt.asUintN(64, b); return f64[0]; };

// round to nearest integer, ties to even (exact for |z| < 2^51: the shifter 1.5 x 2^52)
const SHIFT = 1.5 * 2 ** 52;
export const nearest = (z) => (z + SHIFT) - SHIFT;

// 2^n for a normal exponent n, from the exponent bits.
const pow2 = (n) => fromBits(BigInt(n + 1023) << 52n);

// T[j] = product of R_b over the set bits b of j (b = 0 up), R_4 = sqrt 2, R_b = sqrt R_(b+1).
export const EXP_TABLE = (() => {
  const root = [0, 0, 0, 0, Math.sqrt(2)];
  for (let b = 3; b >= 0; b--) root[b] = Math.sqrt(root[b + 1]);
  return Array.from({ length: 32 }, (_, j) => {
    let t = 1;
    for (let b = 0; b < 5; b++) if ((j >> b) & 1) t = t * root[b];
    return t;
  });
})();

const INV_LN2_32 = hexFloat('0x1.71547652b82fep+5');
const E4 = hexFloat('0x1.3b2ab6fba4e77p-27');
const E3 = hexFloat('0x1.c6b08d704a0c0p-20');
const E2 = hexFloat('0x1.ebfbdff82c58fp-13');
const E1 = hexFloat('0x1.62e42fefa39efp-6');

// e^x rounded to f32 (x an f32 value).
export function expf32(x) {
  if (!(Math.abs(x) <= 104)) return Number.isNaN(x) ? NaN : (x > 0 ? Infinity : 0);
  const z = x * INV_LN2_32;
  const kd = nearest(z);
  const r = z - kd;
  const n = kd | 0;
  let p = E4;
  p = p * r + E3;
  p = p * r + E2;
  p = p * r + E1;
  p = p * r + 1;
  return Math.fround(p * (EXP_TABLE[n & 31] * pow2(n >> 5)));
}

const SQRT2 = hexFloat('0x1.6a09e667f3bcdp+0');
const LN2 = hexFloat('0x1.62e42fefa39efp-1');
const L = ['0x1.3b13b13b13b14p-3', '0x1.745d1745d1746p-3', '0x1.c71c71c71c71cp-3', '0x1.2492492492492p-2',
  '0x1.999999999999ap-2', '0x1.5555555555555p-1'].map(hexFloat);   // 2/13, 2/11, ..., 2/3

// ln x rounded to f32 (x an f32 value).
export function logf32(x) {
  if (!(x > 0 && x < Infinity)) return x === 0 ? -Infinity : (x > 0 ? x : NaN);
  const bits = bitsOf(x);
  let e = Number(bits >> 52n) - 1023;
  let m = fromBits((bits & 0x000fffffffffffffn) | 0x3ff0000000000000n);
  if (m > SQRT2) { m = m * 0.5; e = e + 1; }
  const s = (m - 1) / (m + 1);
  const t = s * s;
  let p = L[0];
  for (let i = 1; i < L.length; i++) p = p * t + L[i];
  p = p * t + 2;
  return Math.fround(e * LN2 + s * p);
}

// The f32 result's bits, for pinned values.
export function f32Bits(x) {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}

const LN2_HI = hexFloat('0x1.62e42fee00000p-1');
const LN2_LO = hexFloat('0x1.a39ef35793c76p-33');

// e^x in f64.
export function exp64(x) {
  if (Number.isNaN(x)) return x;
  if (x > 709.782712893384) return Infinity;
  if (x < -745.2) return 0;
  const k = nearest(x * hexFloat('0x1.71547652b82fep+0'));
  const r = (x - k * LN2_HI) - k * LN2_LO;
  let s = 1;
  for (let i = 15; i >= 1; i--) s = 1 + (r * (1 / i)) * s;
  const n = k | 0;
  return (s * pow2(n >> 1)) * pow2(n - (n >> 1));
}

// ln x in f64.
export function log64(x) {
  if (Number.isNaN(x)) return x;
  if (x < 0) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return x;
  let e = 0;
  if (x < 2 ** -1022) { x = x * 2 ** 54; e = -54; }
  const bits = bitsOf(x);
  e = e + (Number(bits >> 52n) - 1023);
  let m = fromBits((bits & 0x000fffffffffffffn) | 0x3ff0000000000000n);
  if (m > SQRT2) { m = m * 0.5; e = e + 1; }
  const s = (m - 1) / (m + 1);
  const s2 = s * s;
  let sum = 0;
  for (let i = 25; i > 0; i -= 2) sum = 1 / i + s2 * sum;
  const term = 2 * (s * sum);
  return e * LN2_HI + (e * LN2_LO + term);
}

function sinKernel(r) {
  const r2 = r * r;
  let s = 1;
  for (let i = 23; i > 1; i -= 2) s = 1 - (r2 * s) / (i * (i - 1));
  return r * s;
}
function cosKernel(r) {
  const r2 = r * r;
  let s = 1;
  for (let i = 22; i > 0; i -= 2) s = 1 - (r2 * s) / (i * (i - 1));
  return s;
}
function trig(x, which) {
  if (!(Math.abs(x) < 2 ** 30)) return NaN;
  const k = nearest(x * hexFloat('0x1.45f306dc9c883p-1'));
  const r = ((x - k * hexFloat('0x1.921fb54400000p0')) - k * hexFloat('0x1.0b4611a600000p-34')) -
    k * hexFloat('0x1.3198a2e037073p-69');
  switch ((k + which) & 3) {   // |k| < 2^30: & keeps the two's-complement low bits, as in C++ and wasm
    case 0: return sinKernel(r);
    case 1: return cosKernel(r);
    case 2: return -sinKernel(r);
    default: return -cosKernel(r);
  }
}

// sin x and cos x in f64.
export const sin64 = (x) => trig(x, 0);
export const cos64 = (x) => trig(x, 1);

// The f64 result's bits as 16 hex digits, for pinned values.
export function f64Hex(x) {
  return bitsOf(x).toString(16).padStart(16, '0');
}
