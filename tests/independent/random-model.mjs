// random-model.mjs: deterministic random float weights for a geometry, made here (not by the C++
// randomModel) so the cross-check shares nothing with host/. Scales keep every activation finite.
import { canonicalLayout, GEOMETRY_FIELDS } from './format.mjs';

// mulberry32 uniform in [0, 1) and Box-Muller normals.
export function makeRng(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u1 = 1 - uniform(), u2 = uniform();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  };
  return { uniform, normal };
}

// Returns {geo, headCodes, tensors: Map key -> {shape, data: Float32Array}} with every record of the
// canonical layout except the tokenizer.
export function randomModel(geo, seed, headCodes = []) {
  const rng = makeRng(seed);
  const tensors = new Map();
  const fill = (shape, f) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return { shape, data: Float32Array.from({ length: n }, (_, i) => f(i)) };
  };
  const N = (mean, std) => () => mean + std * rng.normal();
  const d = geo.d_model, lanes = geo.mhc_lanes;
  for (const spec of canonicalLayout(geo, headCodes, false)) {
    const key = spec.key, shape = spec.shape;
    const name = key.split('.').pop();
    let f;
    if (key === 'embedding') f = N(0, 1 / Math.sqrt(d));
    else if (spec.dtype === 3) f = N(0, 1 / Math.sqrt(shape[1])); // projections, phi, engram: N(0, 1/in)
    else if (['norm_in', 'q_norm', 'k_norm', 'post_norm', 'pre_hada', 'final_norm'].includes(name)) f = N(0, 0.1);
    else if (name === 'attn_gate') f = N(0, 1);
    else if (name === 'd1' || name === 'd2') f = N(1, 0.1);
    else if (name === 'd3') f = N(0.02, 0.01);
    else if (['a_pre', 'a_post', 'a_res'].includes(name)) f = N(0.5, 0.1);
    else if (name === 'b_pre' || name === 'b_post') f = N(0, 0.5);
    else if (name === 'b_res') f = (i) => (Math.floor(i / lanes) % lanes === i % lanes ? 4 : 0) + 0.3 * rng.normal();
    else if (name === 'taps') f = (i) => (i < d ? 1 : 0) + 0.3 * rng.normal();
    else if (key === 'heads.manifest') f = (i) => headCodes[i];
    else if (name === 'probes') f = N(0, 1);
    else if (name === 'proj') f = N(0, 1 / Math.sqrt(shape[1]));
    else if (name === 'bias') { const h = Number(key.split('.')[1]); f = headCodes[h] === 1 ? () => 0 : N(0, 1); }
    else throw new Error(`no initialiser for ${key}`);
    tensors.set(key, fill(shape, f));
  }
  // The engram tables are CQ but read as embeddings: unit-scale rows.
  for (const [key, t] of tensors) if (key.endsWith('.tables')) t.data.forEach((_, i) => { t.data[i] = rng.normal(); });
  return { geo, headCodes, tensors };
}

// Safetensors metadata: every geometry header field by its design-page name, as a decimal string.
export function geometryMetadata(g) {
  const m = {};
  for (const f of GEOMETRY_FIELDS) m[f] = String(g[f]);
  m.num_engram_orders = String(g.engram_orders.length);
  m.engram_orders = g.engram_orders.join(',');
  m.num_engram_sites = String(g.engram_sites.length);
  m.engram_sites = g.engram_sites.join(',');
  m.rope_theta = String(g.rope_theta);
  return m;
}
