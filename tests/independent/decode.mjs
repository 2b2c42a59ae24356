// decode.mjs: the design page §3 decode step on an Archive (cact-reader.mjs), written independently of
// host/reference.cpp. Weights are held as Float32Array (CQ records dequantised once); arithmetic is f64.
// KV cache: full-precision, no sinks; keys attended at position p are those with pk <= p and
// p - pk < kv_window (kv_window 0: plain causal).

const EPS = 1e-6;
const sigmoid = (x) => 1 / (1 + Math.exp(-x));

function meanSquareScale(x) {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  return 1 / Math.sqrt(ss / x.length + EPS);
}
// x / sqrt(mean(x^2) + eps)
export function rmsunit(x) {
  const s = meanSquareScale(x);
  return Float64Array.from(x, (v) => v * s);
}
// (1 + s) * x / sqrt(mean(x^2) + eps); s is the stored zero-centred scale.
export function zcrms(x, scale) {
  const s = meanSquareScale(x);
  return Float64Array.from(x, (v, i) => (1 + scale[i]) * v * s);
}
// y = W x for W [rows, cols] row-major (rows given by a row range of a bigger matrix when rowOffset set).
function matvec(W, cols, x, rows, rowOffset = 0) {
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let acc = 0;
    const base = (rowOffset + r) * cols;
    for (let c = 0; c < cols; c++) acc += W[base + c] * x[c];
    y[r] = acc;
  }
  return y;
}
function fwhtNorm(x) {
  const n = x.length;
  for (let h = 1; h < n; h *= 2)
    for (let i = 0; i < n; i += 2 * h)
      for (let j = i; j < i + h; j++) { const a = x[j], b = x[j + h]; x[j] = a + b; x[j + h] = a - b; }
  const s = 1 / Math.sqrt(n);
  for (let i = 0; i < n; i++) x[i] *= s;
  return x;
}

// Engram slot for table tau at position p (§3 step 3). Returns -1 when the row is not used.
export function engramSlot(tokens, p, tau, order, slots) {
  if (p - (order - 1) < 0) return -1;
  let acc = Math.imul(0x9e3779b9, tau + 1) >>> 0;
  for (let j = 0; j < order; j++) {
    const t = p - j >= 0 ? tokens[p - j] : 0;
    acc = Math.imul((acc ^ t) >>> 0, 0x01000193) >>> 0;
  }
  acc = (acc ^ (acc >>> 15)) >>> 0;
  return acc % slots;
}
// The raw accumulator after the final shift-xor, for the design page's test vector.
export function engramAcc(tokens, p, tau, order) {
  let acc = Math.imul(0x9e3779b9, tau + 1) >>> 0;
  for (let j = 0; j < order; j++) acc = Math.imul((acc ^ (p - j >= 0 ? tokens[p - j] : 0)) >>> 0, 0x01000193) >>> 0;
  return (acc ^ (acc >>> 15)) >>> 0;
}

export class Decoder {
  // options.postOffsetOwnLane: the h_post offset of lane i mod lanes (design page §3 4b: 0). Only for
  // diagnosing a disagreement; the tests use the page's value.
  constructor(archive, options = {}) {
    const g = archive.geo;
    this.g = g;
    this.postOffEll = options.postOffsetOwnLane ?? 0;
    const W = {};
    for (const [key, rec] of archive.records) {
      if (key === 'tokenizer' || key.startsWith('heads.')) continue;
      W[key] = rec.dtype === 3 ? archive.dequantize(key) : archive.fp16(key);
    }
    this.W = W;
    this.tokens = [];
    this.kcache = [...Array(g.num_layers)].map(() => []); // per layer: array over positions of Float64Array(kvd)
    this.vcache = [...Array(g.num_layers)].map(() => []);
    this.engramV = g.engram_sites.map(() => []); // per site: v_p (before taps) per position
    const hd = g.head_dim;
    this.freq = Float64Array.from({ length: hd / 2 }, (_, m) => Math.fround(1 / Math.pow(g.rope_theta, (2 * m) / hd)));
  }

  rope(x, p) {
    const half = this.g.head_dim / 2;
    for (let m = 0; m < half; m++) {
      const ang = Math.fround(p * this.freq[m]);
      const c = Math.fround(Math.cos(ang)), s = Math.fround(Math.sin(ang));
      const a = x[m], b = x[m + half];
      x[m] = a * c - b * s;
      x[m + half] = b * c + a * s;
    }
  }

  // Run one position with token `tok`; returns Float64Array logits (vocab). If this.onLayer is set it
  // is called after every layer with the lanes before and after (used to locate a disagreement).
  step(tok) {
    const g = this.g, W = this.W;
    const d = g.d_model, lanes = g.mhc_lanes, L = g.num_layers;
    const p = this.tokens.length;
    this.tokens.push(tok);

    // 1-2. embedding and lane broadcast
    const E = W.embedding;
    const sd = Math.sqrt(d);
    const e = new Float64Array(d);
    for (let c = 0; c < d; c++) e[c] = E[tok * d + c] * sd;
    let X = [...Array(lanes)].map(() => Float64Array.from(e));

    // 3. engram keys and tapped values per site
    const nOrders = g.engram_orders.length;
    const eheads = g.num_engram_tables / nOrders;
    const sub = g.engram_sub_dim, cat = g.num_engram_tables * sub;
    const engram = g.engram_sites.map((_, s) => {
      const tables = W[`engram.${s}.tables`];
      const ep = new Float64Array(cat);
      for (let tau = 0; tau < g.num_engram_tables; tau++) {
        const order = g.engram_orders[Math.floor(tau / eheads)];
        const slot = engramSlot(this.tokens, p, tau, order, g.engram_slots);
        if (slot < 0) continue;
        const row = tau * g.engram_slots + slot;
        for (let c = 0; c < sub; c++) ep[tau * sub + c] = tables[row * sub + c];
      }
      const k = matvec(W[`engram.${s}.key_proj`], cat, ep, d);
      const v = matvec(W[`engram.${s}.value_proj`], cat, ep, d);
      this.engramV[s].push(v);
      const taps = W[`engram.${s}.taps`];
      const vt = new Float64Array(d);
      for (let j = 0; j < g.engram_conv_taps; j++) {
        const pj = p - g.engram_conv_dilation * j;
        if (pj < 0) continue;
        const vj = this.engramV[s][pj];
        for (let c = 0; c < d; c++) vt[c] += taps[j * d + c] * vj[c];
      }
      return { k, vt };
    });

    // 4. layers
    for (let i = 0; i < L; i++) {
      const flat = new Float64Array(lanes * d);
      X.forEach((x, k) => flat.set(x, k * d));
      const nx = rmsunit(flat);
      const ell = i % lanes;
      const aPre = W['mhc.a_pre'][i], aPost = W['mhc.a_post'][i], aRes = W['mhc.a_res'][i];
      const phiPre = matvec(W['mhc.phi_pre'], lanes * d, nx, lanes, lanes * i);
      const phiPost = matvec(W['mhc.phi_post'], lanes * d, nx, lanes, lanes * i);
      const phiRes = matvec(W['mhc.phi_res'], lanes * d, nx, lanes * lanes, lanes * lanes * i);
      const u = new Float64Array(d);
      const hpost = new Float64Array(lanes);
      for (let k = 0; k < lanes; k++) {
        const hpre = sigmoid(aPre * phiPre[k] + W['mhc.b_pre'][i * lanes + k] + (k === ell ? 4 : -4));
        for (let c = 0; c < d; c++) u[c] += hpre * X[k][c];
        hpost[k] = 2 * sigmoid(aPost * phiPost[k] + W['mhc.b_post'][i * lanes + k] + (k === ell ? this.postOffEll : -4));
      }
      const M = [...Array(lanes)].map((_, r) => Float64Array.from({ length: lanes },
        (_, c) => aRes * phiRes[r * lanes + c] + W['mhc.b_res'][(i * lanes + r) * lanes + c]));
      for (let it = 0; it < 20; it++) {
        for (let r = 0; r < lanes; r++) {
          const mx = Math.max(...M[r]);
          let s = 0;
          for (let c = 0; c < lanes; c++) s += Math.exp(M[r][c] - mx);
          const lse = mx + Math.log(s);
          for (let c = 0; c < lanes; c++) M[r][c] -= lse;
        }
        for (let c = 0; c < lanes; c++) {
          let mx = -Infinity;
          for (let r = 0; r < lanes; r++) mx = Math.max(mx, M[r][c]);
          let s = 0;
          for (let r = 0; r < lanes; r++) s += Math.exp(M[r][c] - mx);
          const lse = mx + Math.log(s);
          for (let r = 0; r < lanes; r++) M[r][c] -= lse;
        }
      }
      const P = M.map((row) => row.map(Math.exp));

      // g. engram at site layers
      let b = u;
      const site = g.engram_sites.indexOf(i);
      if (site >= 0) {
        const ru = rmsunit(u), rk = rmsunit(engram[site].k);
        let dot = 0;
        for (let c = 0; c < d; c++) dot += ru[c] * rk[c];
        const alpha = sigmoid(dot / sd);
        b = Float64Array.from(u, (v, c) => v + alpha * engram[site].vt[c]);
      }

      const out = this.block(i, b, p);
      const y = Float64Array.from(out, (v, c) => v - u[c]);
      const Xin = X;
      X = [...Array(lanes)].map((_, r) => {
        const nr = new Float64Array(d);
        for (let c = 0; c < lanes; c++) for (let j = 0; j < d; j++) nr[j] += P[r][c] * X[c][j];
        for (let j = 0; j < d; j++) nr[j] += hpost[r] * y[j];
        return nr;
      });
      if (this.onLayer) this.onLayer({ layer: i, p, in: Xin, out: X, u, b, blockOut: out, hpost, P });
    }

    // 5. output
    const x = new Float64Array(d);
    for (let k = 0; k < lanes; k++) for (let c = 0; c < d; c++) x[c] += X[k][c] / lanes;
    const xn = zcrms(x, W.final_norm);
    return matvec(E, d, xn, g.vocab);
  }

  block(i, b, p) {
    const g = this.g, W = this.W;
    const d = g.d_model, hd = g.head_dim, H = g.num_heads, KV = g.num_kv_heads;
    const Lk = (name) => W[`layers.${i}.${name}`];
    const h = zcrms(b, Lk('norm_in'));
    const q = matvec(Lk('q_proj'), d, h, H * hd);
    const k = matvec(Lk('k_proj'), d, h, KV * hd);
    const v = matvec(Lk('v_proj'), d, h, KV * hd);
    const qn = new Float64Array(H * hd), kn = new Float64Array(KV * hd);
    for (let j = 0; j < H; j++) {
      const x = zcrms(q.subarray(j * hd, (j + 1) * hd), Lk('q_norm'));
      this.rope(x, p);
      qn.set(x, j * hd);
    }
    for (let j = 0; j < KV; j++) {
      const x = zcrms(k.subarray(j * hd, (j + 1) * hd), Lk('k_norm'));
      this.rope(x, p);
      kn.set(x, j * hd);
    }
    this.kcache[i].push(kn);
    this.vcache[i].push(v);
    const lo = g.kv_window > 0 ? Math.max(0, p - g.kv_window + 1) : 0;
    const o = new Float64Array(H * hd);
    const scale = 1 / Math.sqrt(hd);
    const group = H / KV;
    for (let j = 0; j < H; j++) {
      const kvh = Math.floor(j / group);
      const scores = [];
      for (let pk = lo; pk <= p; pk++) {
        const kk = this.kcache[i][pk];
        let s = 0;
        for (let t = 0; t < hd; t++) s += qn[j * hd + t] * kk[kvh * hd + t];
        scores.push(s * scale);
      }
      const mx = Math.max(...scores);
      const w = scores.map((s) => Math.exp(s - mx));
      const sum = w.reduce((a, c) => a + c, 0);
      for (let pk = lo; pk <= p; pk++) {
        const vv = this.vcache[i][pk];
        const wt = w[pk - lo] / sum;
        for (let t = 0; t < hd; t++) o[j * hd + t] += wt * vv[kvh * hd + t];
      }
    }
    const gate = matvec(Lk('gate_proj'), d, h, H * hd);
    for (let t = 0; t < H * hd; t++) o[t] *= sigmoid(gate[t]);
    const a = matvec(Lk('out_proj'), H * hd, o, d);
    const an = zcrms(a, Lk('post_norm'));
    const ag = sigmoid(Lk('attn_gate')[0]);
    const x1 = Float64Array.from(b, (v, c) => v + ag * an[c]);
    // Hadamard MLP
    const n = g.hada_n;
    const z0 = zcrms(x1, Lk('pre_hada'));
    const d1 = Lk('d1'), d2 = Lk('d2'), d3 = Lk('d3');
    const z = new Float64Array(n);
    for (let c = 0; c < d; c++) z[c] = z0[c];
    for (let c = 0; c < n; c++) z[c] *= d1[c];
    fwhtNorm(z);
    for (let c = 0; c < n; c++) { const t = d2[c] * z[c]; z[c] = t * sigmoid(t); }
    fwhtNorm(z);
    return Float64Array.from(x1, (v, c) => v + d3[c] * z[c]);
  }
}

// Logits for every position of a teacher-forced id sequence: array of Float64Array.
export function decodeAll(archive, ids, options = {}) {
  const dec = new Decoder(archive, options);
  return ids.map((t) => dec.step(t));
}
