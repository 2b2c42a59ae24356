// cact-writer.mjs: float tensors + geometry -> Needle 2 archive bytes, per design page §1-§2.
// Independent of host/writer.cpp on purpose: the test compares the two byte for byte.
import {
  TAG_NEEDLE2, HEADER_BYTES, CODEBOOK_LEN, DIRECTORY_OFFSET, RECORD_BYTES, GROUP, DTYPE, TERNARY_BITS,
  GEOMETRY_FIELDS, CB2, CB3, CB4, levelsFor, storedBits, toF16Bits, fwht, canonicalLayout,
  parseBitsMap, align64,
} from './format.mjs';

// Quantise one [rows, cols] f32 matrix (row-major) to a CQ blob (§2). Returns Uint8Array of
// rows*colsPad*b/8 index bytes followed by rows*colsPad/G fp16 norms.
// normRounding: 'f32' (default) stores fp16(f32(n)): upstream's numpy norm of an f32 array is an f32,
// then astype(float16); 'direct' rounds the f64 norm to fp16 once. They differ only when f32(n) lands
// exactly on an fp16 midpoint (about 1 norm in 2000 here).
export function quantizeCQ(data, rows, cols, bits, normRounding = 'f32') {
  const colsPad = Math.ceil(cols / GROUP) * GROUP;
  const groups = colsPad / GROUP;
  const sb = storedBits(bits);
  const rowBytes = (colsPad * sb) / 8;
  const levels = levelsFor(bits);
  const out = new Uint8Array(rows * rowBytes + 2 * rows * groups);
  const normBase = rows * rowBytes;
  const r = new Float64Array(GROUP);
  for (let row = 0; row < rows; row++) {
    for (let g = 0; g < groups; g++) {
      r.fill(0);
      for (let k = 0; k < GROUP; k++) {
        const c = g * GROUP + k;
        if (c < cols) r[k] = data[row * cols + c];
      }
      fwht(r);
      let ss = 0;
      for (let k = 0; k < GROUP; k++) ss += r[k] * r[k];
      const n = Math.sqrt(ss);
      const inv = 1 / Math.max(n, 1e-12);
      for (let k = 0; k < GROUP; k++) {
        const u = r[k] * inv;
        let best = 0;
        let bestDist = Math.abs(u - levels[0]);
        for (let j = 1; j < levels.length; j++) {
          const dist = Math.abs(u - levels[j]);
          if (dist < bestDist) { best = j; bestDist = dist; } // exact tie keeps the lower index
        }
        // Ternary level index 0/1/2 is stored as crumb 3/0/1 (sign-extended: -1/0/+1).
        const code = bits === TERNARY_BITS ? [3, 0, 1][best] : best;
        const bit0 = (g * GROUP + k) * sb; // LSB-first continuous bitstream per row
        for (let t = 0; t < sb; t++) {
          if ((code >> t) & 1) {
            const pos = bit0 + t;
            out[row * rowBytes + (pos >> 3)] |= 1 << (pos & 7);
          }
        }
      }
      const h = toF16Bits(normRounding === 'f32' ? Math.fround(n) : n);
      const np = normBase + 2 * (row * groups + g);
      out[np] = h & 0xff;
      out[np + 1] = h >> 8;
    }
  }
  return out;
}

export function fp16Blob(data) {
  const out = new Uint8Array(2 * data.length);
  for (let i = 0; i < data.length; i++) {
    const h = toF16Bits(data[i]);
    out[2 * i] = h & 0xff;
    out[2 * i + 1] = h >> 8;
  }
  return out;
}

// Tokenizer RAW blob (§1.5). pieces: [{piece: string, score: number, type: 0..4}] in id order.
export function tokenizerBlob(pieces) {
  const enc = new TextEncoder();
  const surfaces = pieces.map((p) => enc.encode(p.piece));
  const size = 24 + surfaces.reduce((a, s) => a + 7 + s.length, 0);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, pieces.length, true);
  dv.setUint32(4, 0, true); // pad
  dv.setUint32(8, 1, true); // eos
  dv.setUint32(12, 2, true); // bos
  dv.setUint32(16, 3, true); // unk
  out[20] = 1; // add_dummy_prefix, hard-coded in v2
  out[21] = 1; // byte_fallback, hard-coded in v2
  let p = 24;
  pieces.forEach((pc, i) => {
    if (surfaces[i].length > 0xffff) throw new Error(`tokenizer piece ${i} is longer than 65535 bytes`);
    dv.setFloat32(p, pc.score, true);
    out[p + 4] = pc.type;
    dv.setUint16(p + 5, surfaces[i].length, true);
    out.set(surfaces[i], p + 7);
    p += 7 + surfaces[i].length;
  });
  return out;
}

export function encodeHeader(g, numTensors) {
  const out = new Uint8Array(HEADER_BYTES);
  const dv = new DataView(out.buffer);
  let p = 0;
  const u32 = (v) => { dv.setUint32(p, v >>> 0, true); p += 4; };
  u32(TAG_NEEDLE2);
  u32(numTensors);
  u32(CODEBOOK_LEN);
  for (const f of GEOMETRY_FIELDS) u32(g[f]);
  if (g.engram_orders.length > 4 || g.engram_sites.length > 4) throw new Error('at most 4 engram orders and 4 sites');
  u32(g.engram_orders.length);
  for (let i = 0; i < 4; i++) u32(g.engram_orders[i] ?? 0);
  u32(g.engram_sites.length);
  for (let i = 0; i < 4; i++) u32(g.engram_sites[i] ?? 0);
  dv.setFloat32(p, g.rope_theta, true);
  return out;
}

// model: {geo, tensors: Map|object key -> {shape, data}, headCodes?: number[]}
// options: {bitsMap: string (default the real map), tokenizer?: pieces array, normRounding?: see quantizeCQ}
export function writeArchive(model, options = {}) {
  const g = model.geo;
  const tensors = model.tensors instanceof Map ? model.tensors : new Map(Object.entries(model.tensors));
  const headCodes = model.headCodes ?? [];
  const bitsFor = parseBitsMap(options.bitsMap ?? 'embedding=4,mhc=4,default=2');
  const layout = canonicalLayout(g, headCodes, !!options.tokenizer);
  const N = layout.length;
  const blobs = layout.map((spec) => {
    if (spec.dtype === DTYPE.RAW) return { bytes: tokenizerBlob(options.tokenizer), group: 0, bits: 0 };
    const t = tensors.get(spec.key);
    if (!t) throw new Error(`missing tensor '${spec.key}'`);
    const count = spec.shape.reduce((a, b) => a * b, 1);
    if (t.data.length !== count) throw new Error(`tensor '${spec.key}' has ${t.data.length} values, layout wants shape [${spec.shape}]`);
    if (spec.dtype === DTYPE.FP16) return { bytes: fp16Blob(t.data), group: 0, bits: 0 };
    const bits = bitsFor(spec.bitsName);
    return { bytes: quantizeCQ(t.data, spec.shape[0], spec.shape[1], bits, options.normRounding), group: GROUP, bits };
  });
  const offsets = [];
  let end = DIRECTORY_OFFSET + RECORD_BYTES * N;
  for (const b of blobs) {
    const off = align64(end);
    offsets.push(off);
    end = off + b.bytes.length;
  }
  const out = new Uint8Array(end); // zero-filled gaps
  out.set(encodeHeader(g, N), 0);
  const dv = new DataView(out.buffer);
  [...CB2, ...CB3, ...CB4].forEach((v, i) => dv.setFloat32(HEADER_BYTES + 4 * i, v, true));
  layout.forEach((spec, i) => {
    const p = DIRECTORY_OFFSET + RECORD_BYTES * i;
    out[p] = spec.dtype;
    out[p + 1] = spec.shape.length;
    for (let k = 0; k < 4; k++) dv.setUint32(p + 4 + 4 * k, spec.shape[k] ?? 0, true);
    dv.setBigUint64(p + 20, BigInt(offsets[i]), true);
    dv.setBigUint64(p + 28, BigInt(blobs[i].bytes.length), true);
    dv.setUint32(p + 36, blobs[i].group, true);
    dv.setUint32(p + 40, blobs[i].bits, true);
    out.set(blobs[i].bytes, offsets[i]);
  });
  return out;
}
