// format.mjs: the facts of the Needle 2 `.cact` format that both the independent writer and reader
// need: header fields, codebooks, fp16 rounding, the Walsh-Hadamard transform, the canonical record
// order and the bits map. Written from the design page (needle2-cact.md §1-§2) alone, as a cross-check
// of the C++ host library; nothing here is shared with host/.

export const TAG_NEEDLE2 = 0x05e12a83;
export const HEADER_BYTES = 120;
export const CODEBOOK_LEN = 28;
export const CODEBOOK_OFFSET = 120;
export const DIRECTORY_OFFSET = CODEBOOK_OFFSET + 4 * CODEBOOK_LEN; // 232
export const RECORD_BYTES = 44;
export const BLOB_ALIGN = 64;
export const GROUP = 128;
export const DTYPE = { FP16: 1, FP32: 2, CQ: 3, RAW: 4 };
export const TERNARY_BITS = 5;
export const TERNARY_C = 1.2240064;

// The u32 header fields after tag/num_tensors/codebook_len, in byte order (§1.1).
export const GEOMETRY_FIELDS = [
  'kv_window', 'kv_bits', 'vocab', 'd_model', 'num_heads', 'num_kv_heads', 'num_layers', 'head_dim',
  'max_seq_len', 'hada_n', 'mhc_lanes', 'engram_slots', 'engram_sub_dim', 'num_engram_tables',
  'engram_conv_taps', 'engram_conv_dilation',
];

// The geometry of the C++ preset "tiny", as given in the helper brief.
export const TINY = Object.freeze({
  kv_window: 32, kv_bits: 8, vocab: 512, d_model: 128, num_heads: 2, num_kv_heads: 1,
  num_layers: 4, head_dim: 64, max_seq_len: 256, hada_n: 128, mhc_lanes: 4, engram_slots: 256,
  engram_sub_dim: 64, num_engram_tables: 2, engram_conv_taps: 4, engram_conv_dilation: 3,
  engram_orders: [2, 3], engram_sites: [1, 3], rope_theta: 10000,
});

// ---- codebooks (§1.2): cb2 from the page's hex, cb3/cb4 as f32 of the printed decimals ----

function f32FromHex(hex) {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setUint32(0, parseInt(hex, 16));
  return dv.getFloat32(0);
}
export const CB2 = Float32Array.from(['be085e47', 'bd237060', '3d23fc09', '3e08a9db'].map(f32FromHex));
export const CB3 = Float32Array.from([
  -0.189261362, -0.117884994, -0.0661496893, -0.0210134611, 0.0221010316, 0.0667850673,
  0.118262075, 0.189826027]);
export const CB4 = Float32Array.from([
  -0.239531547, -0.180706054, -0.140957937, -0.109012552, -0.0815129653, -0.0565276518,
  -0.0329391509, -0.0101161096, 0.0127108004, 0.0357079171, 0.0594582558, 0.0849770233,
  0.112741619, 0.144696921, 0.184239, 0.242273703]);
// Ternary levels {-c, 0, +c}/sqrt(G) as f32; not stored in the file (§2).
const TERN = Math.fround(TERNARY_C / Math.sqrt(GROUP));
export const CB_TERNARY = Float32Array.from([-TERN, 0, TERN]);

// The quantisation levels for a record's bits field, given the file's 28 codebook floats.
export function levelsFor(bits, codebooks = null) {
  const cb = codebooks ?? Float32Array.from([...CB2, ...CB3, ...CB4]);
  if (bits === 2) return cb.subarray(0, 4);
  if (bits === 3) return cb.subarray(4, 12);
  if (bits === 4) return cb.subarray(12, 28);
  if (bits === TERNARY_BITS) return CB_TERNARY;
  throw new Error(`no CQ levels for bits ${bits}`);
}
// Bits per stored index: ternary crumbs are 2 bits.
export const storedBits = (bits) => (bits === TERNARY_BITS ? 2 : bits);

// ---- fp16, round half to even from any double (numpy's astype(float16)) ----

function roundHalfEven(v) {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

export function toF16Bits(x) {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // halfway to 65536 rounds to even = overflow
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24); // subnormal; 1024 becomes min normal
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  let q = roundHalfEven(a * 2 ** (10 - e)); // in [1024, 2048]
  if (q === 2048) { q = 1024; e += 1; }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | (q - 1024);
}

export function fromF16Bits(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

// ---- Walsh-Hadamard transform in natural (Sylvester) order, normalised ----

// In place on a Float64Array (or any array) of power-of-two length n: x <- H_n x with
// H(i,j) = (-1)^popcount(i&j) / sqrt(n).
export function fwht(x) {
  const n = x.length;
  for (let h = 1; h < n; h *= 2) {
    for (let i = 0; i < n; i += 2 * h) {
      for (let j = i; j < i + h; j++) {
        const a = x[j];
        const b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const s = 1 / Math.sqrt(n);
  for (let i = 0; i < n; i++) x[i] *= s;
  return x;
}

// ---- canonical record order (§1.4) ----

export const LAYER_KEYS = [
  ['norm_in', 'FP16'], ['q_proj', 'CQ'], ['k_proj', 'CQ'], ['v_proj', 'CQ'], ['q_norm', 'FP16'],
  ['k_norm', 'FP16'], ['gate_proj', 'CQ'], ['out_proj', 'CQ'], ['post_norm', 'FP16'],
  ['attn_gate', 'FP16'], ['pre_hada', 'FP16'], ['d1', 'FP16'], ['d2', 'FP16'], ['d3', 'FP16'],
];

export const coreRecordCount = (g) => 1 + 14 * g.num_layers + 9 + 4 * g.engram_sites.length + 1;

// Records in file order: {key, dtype (number), shape, bitsName (upstream canonical name for the bits
// map; null for non-CQ)}. headCodes: 1 contrastive, 2 confidence, in manifest order.
export function canonicalLayout(g, headCodes = [], withTokenizer = false) {
  const d = g.d_model, hd = g.head_dim, L = g.num_layers, lanes = g.mhc_lanes;
  const qd = g.num_heads * hd, kvd = g.num_kv_heads * hd;
  const out = [];
  const add = (key, dt, shape, bitsName = null) =>
    out.push({ key, dtype: DTYPE[dt], shape, bitsName: dt === 'CQ' ? bitsName : null });
  add('embedding', 'CQ', [g.vocab, d], 'embedding');
  const layerShapes = {
    norm_in: [d], q_proj: [qd, d], k_proj: [kvd, d], v_proj: [kvd, d], q_norm: [hd], k_norm: [hd],
    gate_proj: [qd, d], out_proj: [d, qd], post_norm: [d], attn_gate: [1], pre_hada: [d],
    d1: [g.hada_n], d2: [g.hada_n], d3: [g.hada_n],
  };
  for (let i = 0; i < L; i++)
    for (const [name, dt] of LAYER_KEYS) add(`layers.${i}.${name}`, dt, layerShapes[name], `attn.${name}`);
  add('mhc.a_pre', 'FP16', [L]);
  add('mhc.a_post', 'FP16', [L]);
  add('mhc.a_res', 'FP16', [L]);
  add('mhc.b_pre', 'FP16', [L, lanes]);
  add('mhc.b_post', 'FP16', [L, lanes]);
  add('mhc.b_res', 'FP16', [L, lanes, lanes]);
  add('mhc.phi_pre', 'CQ', [L * lanes, lanes * d], 'mhc_phi_pre');
  add('mhc.phi_post', 'CQ', [L * lanes, lanes * d], 'mhc_phi_post');
  add('mhc.phi_res', 'CQ', [L * lanes * lanes, lanes * d], 'mhc_phi_res');
  const cat = g.num_engram_tables * g.engram_sub_dim;
  g.engram_sites.forEach((_, s) => {
    add(`engram.${s}.tables`, 'CQ', [g.num_engram_tables * g.engram_slots, g.engram_sub_dim], `engram${s}.tables`);
    add(`engram.${s}.key_proj`, 'CQ', [d, cat], `engram${s}.key_proj`);
    add(`engram.${s}.value_proj`, 'CQ', [d, cat], `engram${s}.value_proj`);
    add(`engram.${s}.taps`, 'FP16', [g.engram_conv_taps, d]);
  });
  add('final_norm', 'FP16', [d]);
  if (headCodes.length) {
    add('heads.manifest', 'FP16', [headCodes.length]);
    headCodes.forEach((code, h) => {
      let P, outDim;
      if (code === 1) { P = 4; outDim = 128; } else if (code === 2) { P = 8; outDim = 1; } else
        throw new Error(`unknown probe head code ${code} for head ${h}`);
      add(`heads.${h}.probes`, 'FP16', [P, d]);
      add(`heads.${h}.proj`, 'FP16', [outDim, P * d]);
      add(`heads.${h}.bias`, 'FP16', [outDim]);
    });
  }
  if (withTokenizer) add('tokenizer', 'RAW', []);
  return out;
}

// ---- bits map (§2): "embedding=4,mhc=4,default=2"; longest prefix of the canonical name wins ----

export function parseBitsMap(text) {
  const prefixes = [];
  let def = 4;
  for (const entry of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq < 0) throw new Error(`bits map entry '${entry}' has no '='`);
    const name = entry.slice(0, eq).trim();
    const v = entry.slice(eq + 1).trim();
    const bits = v === '1.58' ? TERNARY_BITS : { 2: 2, 3: 3, 4: 4 }[v];
    if (!bits) throw new Error(`bits map entry '${entry}': width must be 2, 3, 4 or 1.58`);
    if (name === 'default') def = bits; else prefixes.push([name, bits]);
  }
  return (bitsName) => {
    let best = -1, bits = def;
    for (const [p, b] of prefixes) if (bitsName.startsWith(p) && p.length > best) { best = p.length; bits = b; }
    return bits;
  };
}

export const align64 = (n) => Math.ceil(n / BLOB_ALIGN) * BLOB_ALIGN;
