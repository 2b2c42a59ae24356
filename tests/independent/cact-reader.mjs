// cact-reader.mjs: parse a Needle 2 archive (design page §1) and dequantise its records (§2).
// Its own parser, independent of host/archive.cpp.
import {
  TAG_NEEDLE2, HEADER_BYTES, CODEBOOK_LEN, CODEBOOK_OFFSET, DIRECTORY_OFFSET, RECORD_BYTES, GROUP, DTYPE,
  TERNARY_BITS, GEOMETRY_FIELDS, levelsFor, storedBits, fromF16Bits, fwht, canonicalLayout,
  coreRecordCount, align64,
} from './format.mjs';

export function readHeader(u8) {
  if (u8.length < HEADER_BYTES) throw new Error(`archive of ${u8.length} bytes is shorter than the 120-byte header`);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const tag = dv.getUint32(0, true);
  if (tag !== TAG_NEEDLE2) throw new Error(`tag 0x${tag.toString(16)} at offset 0 is not Needle 2 (0x05e12a83)`);
  const g = {};
  let p = 12;
  for (const f of GEOMETRY_FIELDS) { g[f] = dv.getUint32(p, true); p += 4; }
  const nOrders = dv.getUint32(76, true);
  const nSites = dv.getUint32(96, true);
  if (nOrders > 4 || nSites > 4) throw new Error(`engram counts ${nOrders}/${nSites} at offsets 76/96 exceed 4`);
  g.engram_orders = [...Array(nOrders)].map((_, i) => dv.getUint32(80 + 4 * i, true));
  g.engram_sites = [...Array(nSites)].map((_, i) => dv.getUint32(100 + 4 * i, true));
  g.rope_theta = dv.getFloat32(116, true);
  return { numTensors: dv.getUint32(4, true), codebookLen: dv.getUint32(8, true), geo: g };
}

export function parseTokenizerBlob(u8) {
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const n = dv.getUint32(0, true);
  const t = {
    pad: dv.getUint32(4, true), eos: dv.getUint32(8, true), bos: dv.getUint32(12, true),
    unk: dv.getUint32(16, true), addDummyPrefix: u8[20], byteFallback: u8[21], pieces: [],
  };
  const dec = new TextDecoder();
  let p = 24;
  for (let i = 0; i < n; i++) {
    if (p + 7 > u8.length) throw new Error(`tokenizer piece ${i} at blob offset ${p} runs past the end`);
    const score = dv.getFloat32(p, true);
    const type = u8[p + 4];
    const len = dv.getUint16(p + 5, true);
    if (p + 7 + len > u8.length) throw new Error(`tokenizer piece ${i} surface runs past the end`);
    t.pieces.push({ score, type, piece: dec.decode(u8.subarray(p + 7, p + 7 + len)) });
    p += 7 + len;
  }
  if (p !== u8.length) throw new Error(`tokenizer blob has ${u8.length - p} trailing bytes`);
  return t;
}

export class Archive {
  constructor(bytes) {
    const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    this.bytes = u8;
    const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    this.dv = dv;
    const h = readHeader(u8);
    if (h.codebookLen !== CODEBOOK_LEN) throw new Error(`codebook_len ${h.codebookLen} at offset 8 is not 28`);
    this.geo = h.geo;
    const N = h.numTensors;
    const dirEnd = DIRECTORY_OFFSET + RECORD_BYTES * N;
    if (dirEnd > u8.length) throw new Error(`directory of ${N} records runs past the end of the file`);
    this.codebooks = new Float32Array(CODEBOOK_LEN);
    for (let i = 0; i < CODEBOOK_LEN; i++) this.codebooks[i] = dv.getFloat32(CODEBOOK_OFFSET + 4 * i, true);
    const recs = [];
    for (let i = 0; i < N; i++) {
      const p = DIRECTORY_OFFSET + RECORD_BYTES * i;
      const ndim = u8[p + 1];
      const shape = [];
      for (let k = 0; k < ndim; k++) shape.push(dv.getUint32(p + 4 + 4 * k, true));
      recs.push({
        dtype: u8[p], ndim, shape, offset: Number(dv.getBigUint64(p + 20, true)),
        length: Number(dv.getBigUint64(p + 28, true)), group: dv.getUint32(p + 36, true),
        bits: dv.getUint32(p + 40, true), recordOffset: p,
      });
    }
    // Heads and tokenizer are found by counting (§1.4 item 6).
    const withTokenizer = N > 0 && recs[N - 1].dtype === DTYPE.RAW;
    const extra = N - coreRecordCount(this.geo) - (withTokenizer ? 1 : 0);
    let headCodes = [];
    if (extra !== 0) {
      if (extra < 4 || (extra - 1) % 3) throw new Error(`${N} records do not fit the geometry (extra ${extra})`);
      const H = (extra - 1) / 3;
      const man = recs[coreRecordCount(this.geo)];
      headCodes = [...Array(H)].map((_, i) => fromF16Bits(dv.getUint16(man.offset + 2 * i, true)));
    }
    this.headCodes = headCodes;
    const layout = canonicalLayout(this.geo, headCodes, withTokenizer);
    this.records = new Map();
    let expected = align64(dirEnd);
    layout.forEach((spec, i) => {
      const r = recs[i];
      const where = `record ${i} (${spec.key}) at offset ${r.recordOffset}`;
      if (r.dtype !== spec.dtype) throw new Error(`${where}: dtype ${r.dtype}, expected ${spec.dtype}`);
      if (r.shape.join(',') !== spec.shape.join(',')) throw new Error(`${where}: shape [${r.shape}], expected [${spec.shape}]`);
      if (r.offset !== expected) throw new Error(`${where}: blob offset ${r.offset}, expected ${expected}`);
      if (r.offset + r.length > u8.length) throw new Error(`${where}: blob runs past the end`);
      if (spec.dtype === DTYPE.CQ) {
        if (r.group !== GROUP || ![2, 3, 4, TERNARY_BITS].includes(r.bits)) throw new Error(`${where}: group ${r.group} bits ${r.bits}`);
        const cp = Math.ceil(spec.shape[1] / GROUP) * GROUP;
        const want = (spec.shape[0] * cp * storedBits(r.bits)) / 8 + (2 * spec.shape[0] * cp) / GROUP;
        if (r.length !== want) throw new Error(`${where}: CQ blob length ${r.length}, expected ${want}`);
      } else if (spec.dtype === DTYPE.FP16) {
        if (r.group || r.bits) throw new Error(`${where}: FP16 record with group ${r.group} bits ${r.bits}`);
        if (r.length !== 2 * spec.shape.reduce((a, b) => a * b, 1)) throw new Error(`${where}: FP16 length ${r.length}`);
      }
      expected = align64(r.offset + r.length);
      this.records.set(spec.key, { ...r, ...spec, index: i });
    });
    const last = recs[N - 1];
    if (last.offset + last.length !== u8.length) throw new Error(`file has ${u8.length - last.offset - last.length} bytes after the last blob`);
    this.tokenizer = withTokenizer ? parseTokenizerBlob(this.blob('tokenizer')) : null;
  }

  record(key) {
    const r = this.records.get(key);
    if (!r) throw new Error(`archive has no record '${key}'`);
    return r;
  }
  blob(key) {
    const r = this.record(key);
    return this.bytes.subarray(r.offset, r.offset + r.length);
  }
  fp16(key) {
    const r = this.record(key);
    if (r.dtype !== DTYPE.FP16) throw new Error(`record '${key}' is not FP16`);
    const n = r.length / 2;
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = fromF16Bits(this.dv.getUint16(r.offset + 2 * i, true));
    return out;
  }
  // Index of column `col` in CQ row `row` (level index; ternary crumbs mapped back to 0/1/2).
  cqIndex(r, row, col) {
    const sb = storedBits(r.bits);
    const cp = Math.ceil(r.shape[1] / GROUP) * GROUP;
    const base = r.offset + (row * cp * sb) / 8;
    let v = 0;
    for (let t = 0; t < sb; t++) {
      const pos = col * sb + t;
      v |= ((this.bytes[base + (pos >> 3)] >> (pos & 7)) & 1) << t;
    }
    if (r.bits === TERNARY_BITS) {
      if (v === 2) throw new Error(`record '${r.key}' row ${row} col ${col}: ternary crumb 2 never occurs`);
      v = { 3: 0, 0: 1, 1: 2 }[v];
    }
    return v;
  }
  // Full dequantisation of a CQ record: Float32Array [rows * cols] (padding dropped).
  dequantize(key) {
    const r = this.record(key);
    if (r.dtype !== DTYPE.CQ) throw new Error(`record '${key}' is not CQ`);
    const [rows, cols] = r.shape;
    const cp = Math.ceil(cols / GROUP) * GROUP;
    const groups = cp / GROUP;
    const levels = levelsFor(r.bits, this.codebooks);
    const normBase = r.offset + (rows * cp * storedBits(r.bits)) / 8;
    const out = new Float32Array(rows * cols);
    const v = new Float64Array(GROUP);
    for (let row = 0; row < rows; row++) {
      for (let g = 0; g < groups; g++) {
        const n = fromF16Bits(this.dv.getUint16(normBase + 2 * (row * groups + g), true));
        for (let k = 0; k < GROUP; k++) v[k] = n * levels[this.cqIndex(r, row, g * GROUP + k)];
        fwht(v);
        for (let k = 0; k < GROUP; k++) {
          const c = g * GROUP + k;
          if (c < cols) out[row * cols + c] = v[k];
        }
      }
    }
    return out;
  }
}
