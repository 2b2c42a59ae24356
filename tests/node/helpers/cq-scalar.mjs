// cq-scalar.mjs (test helper): a scalar JavaScript re-implementation of docs/numerics.md's A8 CQ
// product and of dequantizeRow, read straight from archive bytes, every f32 operation rounded with
// Math.fround in the reference's order. The engine's SIMD kernels must agree with it bit for bit.
const f = Math.fround;

export function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 31;
  const m = h & 1023;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

export function roundEven(x) {
  const fl = Math.floor(x);
  const d = x - fl;
  if (d > 0.5) return fl + 1;
  if (d < 0.5) return fl;
  return fl % 2 === 0 ? fl : fl + 1;
}

// quantizeBlockInt8: {q, scale}
export function quantizeBlock(x) {
  let amax = 0;
  for (const v of x) if (amax < Math.abs(v)) amax = Math.abs(v);
  if (amax === 0) return { q: x.map(() => 0), scale: 0 };
  const inv = f(127 / amax);
  const q = x.map((v) => { const r = roundEven(f(v * inv)); return r >= 127 ? 127 : r <= -127 ? -127 : Number.isNaN(r) ? 0 : r; });
  return { q, scale: f(amax / 127) };
}

// Record i of an archive (Buffer) as a CQ matrix view.
export function cqRecord(bytes, i) {
  const at = 232 + 44 * i;
  const rows = bytes.readUInt32LE(at + 4);
  const cols = bytes.readUInt32LE(at + 8);
  const offset = Number(bytes.readBigUInt64LE(at + 20));
  const group = bytes.readUInt32LE(at + 36);
  const bits = bytes.readUInt32LE(at + 40);
  const ib = bits === 5 ? 2 : bits;
  const colsPadded = Math.ceil(cols / group) * group;
  const rowBytes = (colsPadded * ib) / 8;
  const levels = new Array(16).fill(0);
  if (bits === 5) {
    const t = f(f(1.2240064) / f(Math.sqrt(group)));
    levels[1] = t;
    levels[3] = -t;
  } else {
    const start = bits === 2 ? 0 : bits === 3 ? 4 : 12;
    for (let k = 0; k < 1 << bits; k++) levels[k] = bytes.readFloatLE(120 + 4 * (start + k));
  }
  return { rows, cols, group, bits, ib, colsPadded, rowBytes, offset, normsAt: offset + rows * rowBytes, levels, bytes };
}

function index(m, row, col) {
  const bit = col * m.ib;
  const at = m.offset + row * m.rowBytes + (bit >> 3);
  const v = m.bytes[at] | ((m.bytes[at + 1] ?? 0) << 8);
  return (v >> (bit & 7)) & ((1 << m.ib) - 1);
}
const norm = (m, row, g) => halfToFloat(m.bytes.readUInt16LE(m.normsAt + 2 * (row * (m.colsPadded / m.group) + g)));

function fwhtNormalized(x, n) {
  for (let s = 1; s < n; s <<= 1)
    for (let b = 0; b < n; b += 2 * s)
      for (let j = b; j < b + s; j++) { const a = x[j]; const c = x[j + s]; x[j] = f(a + c); x[j + s] = f(a - c); }
  const scale = f(1 / Math.sqrt(n));
  for (let i = 0; i < n; i++) x[i] = f(x[i] * scale);
}

export function dequantRow(m, row) {
  const out = [];
  for (let g = 0; g < m.colsPadded / m.group; g++) {
    const nv = norm(m, row, g);
    const v = [];
    for (let k = 0; k < m.group; k++) v.push(f(nv * m.levels[index(m, row, g * m.group + k)]));
    fwhtNormalized(v, m.group);
    for (let k = 0; k < m.group && g * m.group + k < m.cols; k++) out.push(v[k]);
  }
  return out;
}

// y = W x in A8 (docs/numerics.md, steps 1-5), rows [0, limit).
export function matvecA8(m, x, limit = m.rows) {
  const p = new Array(m.colsPadded).fill(0);
  for (let i = 0; i < m.cols; i++) p[i] = f(x[i]);
  for (let g = 0; g < m.colsPadded; g += m.group) {
    const v = p.slice(g, g + m.group);
    fwhtNormalized(v, m.group);
    for (let k = 0; k < m.group; k++) p[g + k] = v[k];
  }
  const xq = [];
  const xs = [];
  for (let b = 0; b < m.colsPadded; b += 32) {
    const { q, scale } = quantizeBlock(p.slice(b, b + 32));
    xq.push(...q);
    xs.push(scale);
  }
  const lv = quantizeBlock(m.levels);
  const y = [];
  for (let row = 0; row < limit; row++) {
    let acc = 0;
    for (let g = 0; g < m.colsPadded / m.group; g++) {
      let gsum = 0;
      for (let b = 0; b < m.group / 32; b++) {
        const first = g * m.group + b * 32;
        let isum = 0;
        for (let k = 0; k < 32; k++) isum += lv.q[index(m, row, first + k)] * xq[first + k];
        gsum = f(gsum + f(isum * xs[first / 32]));
      }
      acc = f(acc + f(norm(m, row, g) * gsum));
    }
    y.push(f(acc * lv.scale));
  }
  return y;
}
