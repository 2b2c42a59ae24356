// reference.cpp: the fp32 Needle 2 token step (design page §3, docs/model.md), our oracle.
//
// One step runs, in order:
//   1. embedding x sqrt(d)            2. lane broadcast
//   3. engram keys and values (hash, table rows, projections, dilated taps)
//   4. for each layer: a. nx = rmsunit(lanes)  b.-e. mHC coefficients  f. Sinkhorn
//      c. u = pre-mix of the lanes   g. engram gate at site layers   h. the block (attention, MLP)
//      i. y = out - u                j. routing into new lanes
//   5. output: lane mean, final norm, tied logits.
// The numerics choices the math leaves open (rounding, int8 KV, A8) follow docs/numerics.md.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "cq.hpp"
#include "heads.hpp"
#include "mathf.hpp"

namespace needle {

namespace {

constexpr float kEps = 1e-6f;              // inside every sqrt(mean(x^2) + eps)
constexpr uint32_t kSinkhornIterations = 20;
constexpr float kPreOffsetOn = 4.0f;       // hpre offset on lane i mod lanes, -4 elsewhere
constexpr float kPreOffsetOff = -4.0f;
constexpr float kPostOffsetOn = 0.0f;      // hpost offset on lane i mod lanes, -4 elsewhere
constexpr float kPostOffsetOff = -4.0f;
constexpr uint32_t kHashSeed = 0x9E3779B9u;
constexpr uint32_t kHashPrime = 0x01000193u;
constexpr uint32_t kHashShift = 15;
constexpr uint32_t kKvBlock = 32;          // int8 KV: one f32 scale per 32 values

float sigmoid(float x) { return 1.0f / (1.0f + expf32(-x)); }
float silu(float x) { return x * sigmoid(x); }

// 1 / sqrt(mean(x^2) + eps): the factor of rmsunit and ZCRMS. The sum of squares in four interleaved
// partial sums (part j takes x_i^2 for i = j mod 4, in index order), then (p0 + p1) + (p2 + p3)
// (numerics.md, "Sum order"; four partial sums let the engine keep one in each SIMD lane).
float invRms(const float* x, uint32_t n) {
  float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (uint32_t i = 0; i < n; ++i) part[i % 4] += x[i] * x[i];
  const float ss = (part[0] + part[1]) + (part[2] + part[3]);
  return 1.0f / std::sqrt(ss / static_cast<float>(n) + kEps);
}

// rmsunit(x) = x / sqrt(mean(x^2) + eps), in place.
void rmsUnit(float* x, uint32_t n) {
  const float inv = invRms(x, n);
  for (uint32_t i = 0; i < n; ++i) x[i] *= inv;
}

// ZCRMS(x, s) = (1 + s) * x / sqrt(mean(x^2) + eps): the archive stores the zero-centred s.
// `out` may be `x`.
void zcrms(const float* x, const float* s, uint32_t n, float* out) {
  const float inv = invRms(x, n);
  for (uint32_t i = 0; i < n; ++i) out[i] = x[i] * inv * (1.0f + s[i]);
}

// logsumexp of n values at stride `stride`, with the maximum subtracted first.
float logSumExp(const float* x, uint32_t n, uint32_t stride) {
  float mx = x[0];
  for (uint32_t i = 1; i < n; ++i) mx = std::max(mx, x[i * stride]);
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; ++i) sum += expf32(x[i * stride] - mx);
  return mx + logf32(sum);
}

// out = (X_0 + X_1 + ... + X_{lanes-1}) / lanes: f32 sums from 0 in lane order, one division.
void laneMean(const float* lanes, uint32_t count, uint32_t d, float* out) {
  std::fill(out, out + d, 0.0f);
  for (uint32_t k = 0; k < count; ++k)
    for (uint32_t c = 0; c < d; ++c) out[c] += lanes[static_cast<size_t>(k) * d + c];
  const float n = static_cast<float>(count);
  for (uint32_t c = 0; c < d; ++c) out[c] /= n;
}

std::string str(uint64_t v) { return std::to_string(v); }

// Error unless a CQ matrix has the shape the geometry implies (a Model built by hand could differ
// from what readArchive checked; a wrong shape would read outside the packed rows).
void requireShape(const CqMatrix& m, uint32_t rows, uint32_t cols, const std::string& label) {
  if (m.rows != rows || m.cols != cols || m.group == 0 || m.colsPadded % m.group != 0 ||
      m.colsPadded < cols || m.packed == nullptr || m.norms == nullptr)
    throw Error("reference: " + label + " is [" + str(m.rows) + ", " + str(m.cols) +
                "], expected [" + str(rows) + ", " + str(cols) + "]");
}

void requireLength(const std::vector<float>& v, size_t n, const std::string& label) {
  if (v.size() != n)
    throw Error("reference: " + label + " has " + str(v.size()) + " values, expected " + str(n));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Small public helpers (exposed for the unit tests).

KeyRange attendedKeys(uint32_t position, uint32_t sink, uint32_t window) {
  KeyRange r;
  r.end = position + 1;
  r.sinkEnd = std::min(sink, r.end);
  if (window == 0) {
    r.windowBegin = r.sinkEnd;  // plain causal: every earlier position
  } else {
    const uint32_t oldest = r.end > window ? r.end - window : 0;  // p - window + 1, floored at 0
    r.windowBegin = std::min(std::max(sink, oldest), r.end);
  }
  return r;
}

uint32_t engramHash(uint32_t table, uint32_t order, const uint32_t* tokens, uint32_t position) {
  uint32_t acc = kHashSeed * (table + 1);  // mod 2^32 by unsigned wrap-around
  for (uint32_t j = 0; j < order; ++j) {
    const uint32_t token = position >= j ? tokens[position - j] : 0;  // before position 0: token 0
    acc = (acc ^ token) * kHashPrime;
  }
  return acc ^ (acc >> kHashShift);
}

void sinkhornLog(float* m, uint32_t n, uint32_t iterations) {
  for (uint32_t it = 0; it < iterations; ++it) {
    for (uint32_t r = 0; r < n; ++r) {  // rows: subtract the logsumexp over c
      const float lse = logSumExp(m + r * n, n, 1);
      for (uint32_t c = 0; c < n; ++c) m[r * n + c] -= lse;
    }
    for (uint32_t c = 0; c < n; ++c) {  // then columns: subtract the logsumexp over r
      const float lse = logSumExp(m + c, n, n);
      for (uint32_t r = 0; r < n; ++r) m[r * n + c] -= lse;
    }
  }
}

void prepareF32Into(const CqMatrix& m, const float* x, std::vector<float>& out) {
  out.resize(m.colsPadded);  // within the capacity reserved by the caller: no allocation
  std::copy(x, x + m.cols, out.begin());
  std::fill(out.begin() + m.cols, out.end(), 0.0f);
  for (uint32_t g = 0; g < m.colsPadded; g += m.group) fwhtNormalized(out.data() + g, m.group);
}

void prepareA8Into(const CqMatrix& m, const float* x, std::vector<float>& scratch, PreparedA8& out) {
  prepareF32Into(m, x, scratch);
  out.q.resize(m.colsPadded);
  out.scale.resize(m.colsPadded / kA8Block);
  for (uint32_t b = 0; b < m.colsPadded / kA8Block; ++b)
    out.scale[b] = quantizeBlockInt8(scratch.data() + b * kA8Block, kA8Block, out.q.data() + b * kA8Block);
}

// ---------------------------------------------------------------------------------------------
// The state.

namespace {

// One activation vector prepared for CQ products: products that share an input (q/k/v/gate share h;
// the three phi share nx; the engram key and value share e) prepare it once. In A8 mode the prepared
// vector is also quantised per 32 (docs/numerics.md), and every product goes through the int8 path.
struct Activation {
  bool a8 = false;
  const float* source = nullptr;
  uint32_t cols = 0, colsPadded = 0, group = 0;
  std::vector<float> f32;
  PreparedA8 q8;

  void reserve(uint32_t maxPadded) {
    f32.reserve(maxPadded);
    q8.q.reserve(maxPadded);
    q8.scale.reserve(maxPadded / kA8Block + 1);
  }
  void prepare(const CqMatrix& m, const float* x) {
    source = x;
    cols = m.cols;
    colsPadded = m.colsPadded;
    group = m.group;
    if (a8) prepareA8Into(m, x, f32, q8);
    else prepareF32Into(m, x, f32);
  }
  // y[r - rowBegin] = (W x)[r] for rows [rowBegin, rowEnd). A matrix padded or grouped differently from
  // the one the input was prepared for gets the input prepared again (never the case in a real archive).
  void product(const CqMatrix& m, float* y, uint32_t rowBegin, uint32_t rowEnd) {
    if (m.cols != cols || m.colsPadded != colsPadded || m.group != group) prepare(m, source);
    if (a8) cqMatvecA8Prepared(m, q8, y, rowBegin, rowEnd);
    else cqMatvecPrepared(m, f32.data(), y, rowBegin, rowEnd);
  }
  void product(const CqMatrix& m, float* y) { product(m, y, 0, m.rows); }
};

// The shapes every product of the step relies on, record by record: an error names the first that
// differs from the geometry (a Model built by hand, not read from an archive, gets them too).
void requireModelShapes(const Model& model) {
  const Geometry& g = model.geo;
  const uint32_t d = g.d_model, L = g.num_layers, lanes = g.mhc_lanes, H = g.num_heads,
                 KV = g.num_kv_heads, hd = g.head_dim, S = g.num_engram_sites,
                 T = g.num_engram_tables;
  requireShape(model.embedding, g.vocab, d, "embedding");
  if (model.layers.size() != L) throw Error("reference: the model has " + str(model.layers.size()) +
                                            " layers, the header says " + str(L));
  for (uint32_t i = 0; i < L; ++i) {
    const Layer& ly = model.layers[i];
    const std::string n = "layer " + str(i);
    requireShape(ly.q_proj, H * hd, d, n + " query projection");
    requireShape(ly.k_proj, KV * hd, d, n + " key projection");
    requireShape(ly.v_proj, KV * hd, d, n + " value projection");
    requireShape(ly.gate_proj, H * hd, d, n + " gate projection");
    requireShape(ly.out_proj, d, H * hd, n + " output projection");
    requireLength(ly.norm_in, d, n + " input norm");
    requireLength(ly.q_norm, hd, n + " query norm");
    requireLength(ly.k_norm, hd, n + " key norm");
    requireLength(ly.post_norm, d, n + " post norm");
    requireLength(ly.pre_hada, d, n + " pre-Hadamard norm");
    requireLength(ly.d1, g.hada_n, n + " Hadamard scale d1");
    requireLength(ly.d2, g.hada_n, n + " Hadamard scale d2");
    requireLength(ly.d3, g.hada_n, n + " Hadamard scale d3");
  }
  requireShape(model.mhc.phi_pre, L * lanes, lanes * d, "mHC phi_pre");
  requireShape(model.mhc.phi_post, L * lanes, lanes * d, "mHC phi_post");
  requireShape(model.mhc.phi_res, L * lanes * lanes, lanes * d, "mHC phi_res");
  requireLength(model.mhc.a_pre, L, "mHC a_pre");
  requireLength(model.mhc.a_post, L, "mHC a_post");
  requireLength(model.mhc.a_res, L, "mHC a_res");
  requireLength(model.mhc.b_pre, L * lanes, "mHC b_pre");
  requireLength(model.mhc.b_post, L * lanes, "mHC b_post");
  requireLength(model.mhc.b_res, L * lanes * lanes, "mHC b_res");
  if (model.engram.size() != S) throw Error("reference: the model has " + str(model.engram.size()) +
                                            " engram sites, the header says " + str(S));
  const uint32_t eDim = T * g.engram_sub_dim;
  for (uint32_t s = 0; s < S; ++s) {
    const EngramSite& site = model.engram[s];
    const std::string n = "engram site " + str(s);
    if (site.layer != g.engram_sites[s] || site.layer >= L)
      throw Error("reference: " + n + " is at layer " + str(site.layer) + ", the header says " +
                  str(g.engram_sites[s]));
    requireShape(site.tables, T * g.engram_slots, g.engram_sub_dim, n + " tables");
    requireShape(site.key_proj, d, eDim, n + " key projection");
    requireShape(site.value_proj, d, eDim, n + " value projection");
    requireLength(site.taps, static_cast<size_t>(g.engram_conv_taps) * d, n + " taps");
  }
  requireLength(model.final_norm, d, "final norm");

}

// The KV cache's two forms (ReferenceOptions::kvInt8), as views of State's arrays; each row holds
// head_dim values of one (layer, KV head, slot). The session picks one form once (attention()).

// int8 values with per-32 f32 scales (docs/numerics.md "Attention").
struct Int8Kv {
  std::vector<int8_t>& kq;
  std::vector<int8_t>& vq;
  std::vector<float>& kScale;
  std::vector<float>& vScale;
  uint32_t hd;

  // k and v into row `row`, quantised block by block.
  void store(size_t row, const float* k, const float* v) {
    const uint32_t blocks = hd / kKvBlock;
    for (uint32_t blk = 0; blk < blocks; ++blk) {
      const uint32_t off = blk * kKvBlock;
      kScale[row * blocks + blk] = quantizeBlockInt8(k + off, kKvBlock, kq.data() + row * hd + off);
      vScale[row * blocks + blk] = quantizeBlockInt8(v + off, kKvBlock, vq.data() + row * hd + off);
    }
  }
  // q . k_row: the sum over blocks of kscale_b x (the f32 sum over the block of q_c k_c, in order).
  float dot(size_t row, const float* q) const {
    const uint32_t blocks = hd / kKvBlock;
    float sum = 0.0f;
    for (uint32_t blk = 0; blk < blocks; ++blk) {
      float part = 0.0f;
      for (uint32_t c = blk * kKvBlock; c < (blk + 1) * kKvBlock; ++c)
        part += q[c] * static_cast<float>(kq[row * hd + c]);
      sum += kScale[row * blocks + blk] * part;
    }
    return sum;
  }
  // o += w v_row: per block, w x vscale_b times each int8 value.
  void addWeighted(size_t row, float w, float* o) const {
    const uint32_t blocks = hd / kKvBlock;
    for (uint32_t blk = 0; blk < blocks; ++blk) {
      const float wb = w * vScale[row * blocks + blk];
      for (uint32_t c = blk * kKvBlock; c < (blk + 1) * kKvBlock; ++c) o[c] += wb * static_cast<float>(vq[row * hd + c]);
    }
  }
};

// f32 values: the exact oracle.
struct F32Kv {
  std::vector<float>& kf;
  std::vector<float>& vf;
  uint32_t hd;

  void store(size_t row, const float* k, const float* v) {
    std::copy(k, k + hd, kf.data() + row * hd);
    std::copy(v, v + hd, vf.data() + row * hd);
  }
  float dot(size_t row, const float* q) const {
    float sum = 0.0f;
    for (uint32_t c = 0; c < hd; ++c) sum += q[c] * kf[row * hd + c];
    return sum;
  }
  void addWeighted(size_t row, float w, float* o) const {
    for (uint32_t c = 0; c < hd; ++c) o[c] += w * vf[row * hd + c];
  }
};

}  // namespace

struct Reference::State {
  // --- The session, carried from step to step.
  std::vector<uint32_t> history;   // max_seq_len: every token so far, by logical position
  std::vector<float> lanes;        // lanes x d: the mHC residual streams X_k, lane-major
  uint32_t kvSlots = 0;            // physical KV rows per layer and KV head
  uint32_t ringRows = 0;           // engram: (taps - 1) x dilation + 1 values of v per site
  Memory mem;                      // the KV cache and the engram ring (reference.hpp)

  // --- Constants of the model, computed once.
  std::vector<float> ropeFreq;     // head_dim / 2: 1 / theta^(2m / head_dim)
  float sqrtD = 0;                 // sqrt(d_model): embedding scale and engram gate divisor

  // --- Scratch of one step (overwritten every step).
  std::vector<float> ropeCos, ropeSin;  // head_dim / 2, at the current position
  std::vector<uint32_t> engramSlot;     // tables: slot of each table at this position
  std::vector<uint8_t> engramValid;     // tables: enough tokens for the table's order
  std::vector<float> engramE;           // [site][tables x sub_dim]: e_p
  std::vector<float> engramK;           // [site][d]: k_p = Wkey e_p
  std::vector<float> engramV;           // [site][d]: v'_p (tapped)
  std::vector<float> nx;                // lanes x d
  std::vector<float> hpre, hpost;       // lanes
  std::vector<float> route;             // lanes x lanes: M, then P = exp(M)
  std::vector<float> u, b, h;           // d
  std::vector<float> q, gate, o;        // H x hd
  std::vector<float> k, v;              // KV x hd
  std::vector<uint32_t> attendedRows;   // kvSlots: physical rows of the keys attended at this position
  uint32_t attendedCount = 0;           // how many of them
  std::vector<float> scores;            // kvSlots: one query head's scores, then weights
  std::vector<float> a, x1, out, y;     // d
  std::vector<float> z;                 // hada_n
  std::vector<float> newLanes;          // lanes x d
  std::vector<float> x;                 // d: the lane mean at the output
  std::vector<float> cell;              // d: the lane mean after a layer, for the probe heads
  Activation act;

  // Index of KV row `slot` of `head` in `layer`, in values (x head_dim) or blocks (x head_dim / 32).
  size_t kvRow(uint32_t layer, uint32_t head, uint32_t slot, uint32_t numKvHeads) const {
    return (static_cast<size_t>(layer) * numKvHeads + head) * kvSlots + slot;
  }
};

Reference::Reference(const Model& model, ReferenceOptions options)
    : model_(model), options_(options), s_(std::make_unique<State>()) {
  const Geometry& g = model.geo;
  const uint32_t d = g.d_model, L = g.num_layers, lanes = g.mhc_lanes, H = g.num_heads,
                 KV = g.num_kv_heads, hd = g.head_dim, S = g.num_engram_sites,
                 T = g.num_engram_tables;
  validateGeometry(g);  // a Model built by hand gets the reader's header rules too
  if (options.kvInt8 && hd % kKvBlock != 0)
    throw Error("reference: int8 KV needs head_dim (" + str(hd) + ") to be a multiple of 32");

  requireModelShapes(model);

  const uint32_t eDim = T * g.engram_sub_dim;
  State& s = *s_;
  // KV rows: the sinks plus a ring of kv_window, never more than max_seq_len (the most ever used).
  s.kvSlots = g.kv_window == 0 ? g.max_seq_len
                               : static_cast<uint32_t>(std::min<uint64_t>(
                                     uint64_t{options.sink} + g.kv_window, g.max_seq_len));
  const size_t kvValues = checkedMul(checkedMul(uint64_t{L} * KV, s.kvSlots, "KV cache"), hd, "KV cache");
  if (options.kvInt8) {
    s.mem.kq.assign(kvValues, 0);
    s.mem.vq.assign(kvValues, 0);
    s.mem.kScale.assign(kvValues / kKvBlock, 0.0f);
    s.mem.vScale.assign(kvValues / kKvBlock, 0.0f);
  } else {
    s.mem.kf.assign(kvValues, 0.0f);
    s.mem.vf.assign(kvValues, 0.0f);
  }
  s.ringRows = g.engramRingRows();
  s.mem.engramRing.assign(static_cast<size_t>(S) * s.ringRows * d, 0.0f);
  s.history.assign(g.max_seq_len, 0);
  s.lanes.assign(static_cast<size_t>(lanes) * d, 0.0f);

  // RoPE frequencies: freq_m = 1 / theta^(2m / head_dim) = 1 / e^(ln theta x 2m / head_dim), in f64
  // with the transcendentals of numerics.md, rounded to f32.
  s.ropeFreq.resize(hd / 2);
  const double lnTheta = log64(static_cast<double>(g.rope_theta));
  for (uint32_t m = 0; m < hd / 2; ++m)
    s.ropeFreq[m] = static_cast<float>(
        1.0 / exp64(lnTheta * ((2.0 * static_cast<double>(m)) / static_cast<double>(hd))));
  s.sqrtD = std::sqrt(static_cast<float>(d));

  s.ropeCos.resize(hd / 2);
  s.ropeSin.resize(hd / 2);
  s.engramSlot.resize(T);
  s.engramValid.resize(T);
  s.engramE.resize(static_cast<size_t>(S) * eDim);
  s.engramK.resize(static_cast<size_t>(S) * d);
  s.engramV.resize(static_cast<size_t>(S) * d);
  s.nx.resize(static_cast<size_t>(lanes) * d);
  s.hpre.resize(lanes);
  s.hpost.resize(lanes);
  s.route.resize(static_cast<size_t>(lanes) * lanes);
  for (auto* v : {&s.u, &s.b, &s.h, &s.a, &s.x1, &s.out, &s.y, &s.x, &s.cell}) v->resize(d);
  s.q.resize(H * hd);
  s.gate.resize(H * hd);
  s.o.resize(H * hd);
  s.k.resize(KV * hd);
  s.v.resize(KV * hd);
  s.attendedRows.resize(s.kvSlots);
  s.scores.resize(s.kvSlots);
  s.z.resize(g.hada_n);
  s.newLanes.resize(static_cast<size_t>(lanes) * d);
  s.act.a8 = options.a8;
  uint32_t maxPadded = 0;
  for (const CqMatrix* m : {&model.embedding, &model.mhc.phi_pre, &model.layers[0].out_proj})
    maxPadded = std::max(maxPadded, m->colsPadded);
  for (const EngramSite& site : model.engram) maxPadded = std::max(maxPadded, site.key_proj.colsPadded);
  for (const Layer& ly : model.layers)
    for (const CqMatrix* m : {&ly.q_proj, &ly.k_proj, &ly.v_proj, &ly.gate_proj, &ly.out_proj})
      maxPadded = std::max(maxPadded, m->colsPadded);
  s.act.reserve(maxPadded);
  logits_.resize(g.vocab);
}

Reference::~Reference() = default;

void Reference::reset() {
  State& s = *s_;
  position_ = 0;
  std::fill(s.history.begin(), s.history.end(), 0u);
  std::fill(s.lanes.begin(), s.lanes.end(), 0.0f);
  s.mem.clear();
}

bool Reference::Memory::sameShape(const Memory& o) const {
  return kq.size() == o.kq.size() && vq.size() == o.vq.size() && kScale.size() == o.kScale.size() &&
         vScale.size() == o.vScale.size() && kf.size() == o.kf.size() && vf.size() == o.vf.size() &&
         engramRing.size() == o.engramRing.size();
}

void Reference::Memory::clear() {
  std::fill(kq.begin(), kq.end(), int8_t{0});
  std::fill(vq.begin(), vq.end(), int8_t{0});
  for (std::vector<float>* v : {&kScale, &vScale, &kf, &vf, &engramRing}) std::fill(v->begin(), v->end(), 0.0f);
}

const std::vector<float>& Reference::prefill(std::span<const uint32_t> ids, bool wantLogits) {
  const Geometry& g = model_.geo;
  if (ids.size() > g.max_seq_len - position_)
    throw Error("reference prefill at position " + str(position_) + ": " + str(ids.size()) +
                " tokens would pass max_seq_len (" + str(g.max_seq_len) + "); nothing was run");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= g.vocab)
      throw Error("reference prefill at position " + str(position_ + i) + ": token " + str(ids[i]) +
                  " is past the vocabulary (" + str(g.vocab) + " ids); nothing was run");
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool last = i + 1 == ids.size();
    const std::vector<float>& logits = step(ids[i], wantLogits && last);
    if (last) return logits;
  }
  return noLogits_;
}

Reference::Snapshot Reference::snapshot() const {
  const State& s = *s_;
  Snapshot snap;
  snap.position = position_;
  snap.sink = options_.sink;
  snap.kvInt8 = options_.kvInt8;
  snap.history.assign(s.history.begin(), s.history.begin() + position_);
  snap.memory = s.mem;
  return snap;
}

void Reference::restore(const Snapshot& snap) {
  State& s = *s_;
  if (snap.sink != options_.sink || snap.kvInt8 != options_.kvInt8)
    throw Error("reference restore: the snapshot was taken with sink " + str(snap.sink) +
                (snap.kvInt8 ? " and int8 KV" : " and f32 KV") + ", this session has sink " +
                str(options_.sink) + (options_.kvInt8 ? " and int8 KV" : " and f32 KV"));
  if (snap.position > model_.geo.max_seq_len || snap.history.size() != snap.position ||
      !snap.memory.sameShape(s.mem))
    throw Error("reference restore: the snapshot is of another geometry");
  position_ = snap.position;
  std::fill(s.history.begin(), s.history.end(), 0u);
  std::copy(snap.history.begin(), snap.history.end(), s.history.begin());
  s.mem = snap.memory;
}

// ---------------------------------------------------------------------------------------------
// The step.

const std::vector<float>& Reference::step(uint32_t token, bool wantLogits) {
  const Geometry& g = model_.geo;
  // Both refusals come before anything is written, so the session stays usable.
  if (token >= g.vocab)
    throw Error("reference step at position " + str(position_) + ": token " + str(token) +
                " is past the vocabulary (" + str(g.vocab) + " ids)");
  if (position_ >= g.max_seq_len)
    throw Error("reference step: position " + str(position_) + " would reach max_seq_len (" +
                str(g.max_seq_len) + "); the session is full");

  State& s = *s_;
  s.history[position_] = token;
  // The keys this position attends to (the same in every layer): sinks first, then the window, each as
  // its physical cache row.
  const KeyRange keys = attendedKeys(position_, options_.sink, g.kv_window);
  s.attendedCount = 0;
  for (uint32_t pk = 0; pk < keys.sinkEnd; ++pk)
    s.attendedRows[s.attendedCount++] = physicalSlot(pk, options_.sink, g.kv_window);
  for (uint32_t pk = keys.windowBegin; pk < keys.end; ++pk)
    s.attendedRows[s.attendedCount++] = physicalSlot(pk, options_.sink, g.kv_window);
  if (trace_) {
    trace_->laneIn.assign(g.num_layers, {});
    trace_->laneOut.assign(g.num_layers, {});
  }
  embed(token);            // 1. and 2.
  if (heads_) heads_->addCell(s.x.data());  // cell 0: the scaled embedding
  engramKeysAndValues();   // 3.
  for (uint32_t i = 0; i < g.num_layers; ++i) {  // 4.
    layer(i);
    if (heads_) poolLaneMean();  // cell i + 1
  }
  ++position_;
  if (!wantLogits) return noLogits_;
  output();                // 5.
  return logits_;
}

// 1. Embedding: e = E[token] * sqrt(d). 2. Lane broadcast: X_k = e for every lane.
void Reference::embed(uint32_t token) {
  State& s = *s_;
  const uint32_t d = model_.geo.d_model;
  dequantizeRow(model_.embedding, token, s.x.data());
  for (uint32_t c = 0; c < d; ++c) s.x[c] *= s.sqrtD;
  for (uint32_t k = 0; k < model_.geo.mhc_lanes; ++k)
    std::copy(s.x.begin(), s.x.end(), s.lanes.begin() + static_cast<size_t>(k) * d);
  if (trace_) trace_->embedding = s.x;
}

// 3. Engram keys and values, once per position, for every site.
void Reference::engramKeysAndValues() {
  State& s = *s_;
  const Geometry& g = model_.geo;
  if (trace_) {
    trace_->engramE.assign(g.num_engram_sites, {});
    trace_->engramK.assign(g.num_engram_sites, {});
    trace_->engramV.assign(g.num_engram_sites, {});
  }
  if (g.num_engram_sites == 0) return;  // (then the table count is not checked against the orders)
  const uint32_t p = position_, d = g.d_model, T = g.num_engram_tables, sub = g.engram_sub_dim,
                 eDim = T * sub, heads = g.engramHeads();

  // 3a. Hash: table tau = order index x heads + head; a table is used only once its n-gram is whole
  // (p - (order - 1) >= 0), otherwise it contributes zeros.
  for (uint32_t tau = 0; tau < T; ++tau) {
    const uint32_t order = g.engram_orders[tau / heads];
    s.engramValid[tau] = p + 1 >= order;
    s.engramSlot[tau] = engramHash(tau, order, s.history.data(), p) % g.engram_slots;
  }

  for (uint32_t site = 0; site < g.num_engram_sites; ++site) {
    const EngramSite& es = model_.engram[site];
    // 3b. e_p: the fetched rows concatenated in tau order.
    float* e = s.engramE.data() + static_cast<size_t>(site) * eDim;
    for (uint32_t tau = 0; tau < T; ++tau) {
      float* row = e + static_cast<size_t>(tau) * sub;
      if (s.engramValid[tau]) dequantizeRow(es.tables, tau * g.engram_slots + s.engramSlot[tau], row);
      else std::fill(row, row + sub, 0.0f);
    }
    // 3c. k_p = Wkey e_p, v_p = Wval e_p (one prepared e for both). The raw v_p goes into the ring.
    float* kp = s.engramK.data() + static_cast<size_t>(site) * d;
    float* ring = s.mem.engramRing.data() + static_cast<size_t>(site) * s.ringRows * d;
    s.act.prepare(es.key_proj, e);
    s.act.product(es.key_proj, kp);
    s.act.product(es.value_proj, ring + static_cast<size_t>(p % s.ringRows) * d);
    // 3d. Dilated causal taps on v only: v'_p = sum_j taps[j] * v_{p - dilation j}, p - dilation j >= 0.
    float* vt = s.engramV.data() + static_cast<size_t>(site) * d;
    std::fill(vt, vt + d, 0.0f);
    for (uint32_t j = 0; j < g.engram_conv_taps; ++j) {
      const uint32_t back = j * g.engram_conv_dilation;
      if (back > p) break;
      const float* vj = ring + static_cast<size_t>((p - back) % s.ringRows) * d;
      const float* tap = es.taps.data() + static_cast<size_t>(j) * d;
      for (uint32_t c = 0; c < d; ++c) vt[c] += tap[c] * vj[c];
    }
    if (trace_) {
      trace_->engramE[site].assign(e, e + eDim);
      trace_->engramK[site].assign(kp, kp + d);
      trace_->engramV[site].assign(vt, vt + d);
    }
  }
}

// 4. One layer: mHC read, engram, block, mHC write.
void Reference::layer(uint32_t i) {
  State& s = *s_;
  const Geometry& g = model_.geo;
  const Mhc& mhc = model_.mhc;
  const uint32_t d = g.d_model, lanes = g.mhc_lanes, ell = i % lanes;
  if (trace_) trace_->laneIn[i] = s.lanes;

  // a. nx = rmsunit(X_0 | X_1 | ... ), one lanes x d vector, prepared once for the three phi products.
  std::copy(s.lanes.begin(), s.lanes.end(), s.nx.begin());
  rmsUnit(s.nx.data(), lanes * d);
  s.act.prepare(mhc.phi_pre, s.nx.data());

  // b.-c. hpre_k = sigmoid(a_pre[i] (phi_pre[lanes i + k] . nx) + b_pre[i,k] + pre_off_k),
  // pre_off = +4 on lane i mod lanes, -4 elsewhere (only this layer's rows are computed).
  s.act.product(mhc.phi_pre, s.hpre.data(), lanes * i, lanes * (i + 1));
  for (uint32_t k = 0; k < lanes; ++k)
    s.hpre[k] = sigmoid(mhc.a_pre[i] * s.hpre[k] + mhc.b_pre[i * lanes + k] +
                        (k == ell ? kPreOffsetOn : kPreOffsetOff));
  // d. hpost_k = 2 sigmoid(a_post[i] (phi_post[lanes i + k] . nx) + b_post[i,k] + post_off_k),
  // post_off = 0 on lane i mod lanes, -4 elsewhere.
  s.act.product(mhc.phi_post, s.hpost.data(), lanes * i, lanes * (i + 1));
  for (uint32_t k = 0; k < lanes; ++k)
    s.hpost[k] = 2.0f * sigmoid(mhc.a_post[i] * s.hpost[k] + mhc.b_post[i * lanes + k] +
                                (k == ell ? kPostOffsetOn : kPostOffsetOff));
  // e. M_rc = a_res[i] (phi_res[lanes^2 i + lanes r + c] . nx) + b_res[i,r,c].
  const uint32_t ll = lanes * lanes;
  s.act.product(mhc.phi_res, s.route.data(), ll * i, ll * (i + 1));
  for (uint32_t rc = 0; rc < ll; ++rc) s.route[rc] = mhc.a_res[i] * s.route[rc] + mhc.b_res[i * ll + rc];
  // f. Sinkhorn in the log domain, then P = exp(M).
  sinkhornLog(s.route.data(), lanes, kSinkhornIterations);
  for (float& m : s.route) m = expf32(m);

  // c. u = sum_k hpre_k X_k (the weights are not normalised).
  std::fill(s.u.begin(), s.u.end(), 0.0f);
  for (uint32_t k = 0; k < lanes; ++k) {
    const float* xk = s.lanes.data() + static_cast<size_t>(k) * d;
    for (uint32_t c = 0; c < d; ++c) s.u[c] += s.hpre[k] * xk[c];
  }

  // g. Engram at a site layer: alpha = sigmoid(rmsunit(u) . rmsunit(k_p) / sqrt(d)); b = u + alpha v'_p.
  s.b = s.u;
  const int site = g.siteOfLayer(i);
  if (site >= 0) {
    const float* kp = s.engramK.data() + static_cast<size_t>(site) * d;
    const float* vt = s.engramV.data() + static_cast<size_t>(site) * d;
    const float iu = invRms(s.u.data(), d), ik = invRms(kp, d);
    float dot = 0.0f;
    for (uint32_t c = 0; c < d; ++c) dot += (s.u[c] * iu) * (kp[c] * ik);
    const float alpha = sigmoid(dot / s.sqrtD);
    for (uint32_t c = 0; c < d; ++c) s.b[c] += alpha * vt[c];
  }

  // h. The block: attention (b -> x1), then the Hadamard MLP (x1 -> out).
  attention(i);
  mlp(i);

  // i. y = out - u (the block's update; it includes the engram term).
  for (uint32_t c = 0; c < d; ++c) s.y[c] = s.out[c] - s.u[c];

  // j. Routing: X_r <- sum_c P_rc X_c + hpost_r y.
  for (uint32_t r = 0; r < lanes; ++r) {
    float* nr = s.newLanes.data() + static_cast<size_t>(r) * d;
    std::fill(nr, nr + d, 0.0f);
    for (uint32_t c = 0; c < lanes; ++c) {
      const float prc = s.route[r * lanes + c];
      const float* xc = s.lanes.data() + static_cast<size_t>(c) * d;
      for (uint32_t col = 0; col < d; ++col) nr[col] += prc * xc[col];
    }
    for (uint32_t col = 0; col < d; ++col) nr[col] += s.hpost[r] * s.y[col];
  }
  s.lanes.swap(s.newLanes);
  if (trace_) trace_->laneOut[i] = s.lanes;
}

// 4h. Attention half of the block: b -> x1 = b + sigmoid(attn_gate) ZCRMS(Wout(o * sigmoid(Wgate h))).
void Reference::attention(uint32_t i) {
  State& s = *s_;
  const Geometry& g = model_.geo;
  const Layer& ly = model_.layers[i];
  const uint32_t d = g.d_model, H = g.num_heads, KV = g.num_kv_heads, hd = g.head_dim;

  // h = ZCRMS(b, norm_in); q, k, v and the gate all read this one prepared h.
  zcrms(s.b.data(), ly.norm_in.data(), d, s.h.data());
  s.act.prepare(ly.q_proj, s.h.data());
  s.act.product(ly.q_proj, s.q.data());
  s.act.product(ly.k_proj, s.k.data());
  s.act.product(ly.v_proj, s.v.data());
  s.act.product(ly.gate_proj, s.gate.data());

  // Per-head norms (one hd vector shared by all heads), then RoPE at the logical position.
  ropeTables(position_);
  for (uint32_t j = 0; j < H; ++j) normAndRotate(s.q.data() + j * hd, ly.q_norm);
  for (uint32_t j = 0; j < KV; ++j) normAndRotate(s.k.data() + j * hd, ly.k_norm);

  // The KV cache in the session's one mode: store this position's rows, then every query head's
  // scores and softmax, and its weighted values into o.
  if (options_.kvInt8)
    attendHeads(Int8Kv{s.mem.kq, s.mem.vq, s.mem.kScale, s.mem.vScale, hd}, i);
  else
    attendHeads(F32Kv{s.mem.kf, s.mem.vf, hd}, i);

  // o <- o * sigmoid(Wgate h); a = Wout o.
  for (uint32_t c = 0; c < H * hd; ++c) s.o[c] *= sigmoid(s.gate[c]);
  s.act.prepare(ly.out_proj, s.o.data());
  s.act.product(ly.out_proj, s.a.data());

  // x1 = b + sigmoid(attn_gate) ZCRMS(a, post_norm).
  zcrms(s.a.data(), ly.post_norm.data(), d, s.a.data());
  const float ag = sigmoid(ly.attn_gate);
  for (uint32_t c = 0; c < d; ++c) s.x1[c] = s.b[c] + ag * s.a[c];
}

// RoPE's cos and sin at logical position p: angle = f32(p) x freq_m in f32, cos and sin in f64.
void Reference::ropeTables(uint32_t p) {
  State& s = *s_;
  const float angleP = static_cast<float>(p);
  for (uint32_t m = 0; m < model_.geo.head_dim / 2; ++m) {
    const float angle = angleP * s.ropeFreq[m];  // f32, as numerics.md fixes it
    s.ropeCos[m] = static_cast<float>(cos64(static_cast<double>(angle)));
    s.ropeSin[m] = static_cast<float>(sin64(static_cast<double>(angle)));
  }
}

// x <- ZCRMS(x, scale) over one head, then rotate-half:
// (x_m, x_{m+half}) -> (x_m cos - x_{m+half} sin, x_{m+half} cos + x_m sin).
void Reference::normAndRotate(float* x, const std::vector<float>& scale) {
  const State& s = *s_;
  const uint32_t hd = model_.geo.head_dim, half = hd / 2;
  zcrms(x, scale.data(), hd, x);
  for (uint32_t m = 0; m < half; ++m) {
    const float lo = x[m], hi = x[m + half];
    x[m] = lo * s.ropeCos[m] - hi * s.ropeSin[m];
    x[m + half] = hi * s.ropeCos[m] + lo * s.ropeSin[m];
  }
}

// Store, score and mix for layer i with the KV cache `kv` (Int8Kv or F32Kv): the position's k and
// v rows at its physical slot, then for each query head j (reading KV head j / (H / KV)) the scores
// of the attended rows (the sinks and the window, listed once per step in step()), their softmax,
// and the weighted value sum into o.
template <class Kv>
void Reference::attendHeads(Kv kv, uint32_t i) {
  State& s = *s_;
  const Geometry& g = model_.geo;
  const uint32_t H = g.num_heads, KV = g.num_kv_heads, hd = g.head_dim;
  const uint32_t slot = physicalSlot(position_, options_.sink, g.kv_window);
  for (uint32_t j = 0; j < KV; ++j) kv.store(s.kvRow(i, j, slot, KV), s.k.data() + j * hd, s.v.data() + j * hd);

  const uint32_t count = s.attendedCount;
  const float scoreScale = std::sqrt(static_cast<float>(hd));
  for (uint32_t j = 0; j < H; ++j) {
    const uint32_t kvh = j / (H / KV);
    // score: q . k / sqrt(hd) for every attended row, then the softmax (max subtracted)
    float mx = -INFINITY;
    for (uint32_t t = 0; t < count; ++t) {
      s.scores[t] = kv.dot(s.kvRow(i, kvh, s.attendedRows[t], KV), s.q.data() + j * hd) / scoreScale;
      mx = std::max(mx, s.scores[t]);
    }
    float sum = 0.0f;
    for (uint32_t t = 0; t < count; ++t) {
      s.scores[t] = expf32(s.scores[t] - mx);
      sum += s.scores[t];
    }
    for (uint32_t t = 0; t < count; ++t) s.scores[t] /= sum;
    // mix: o_j = sum of weight_t v_t, in key order
    float* oj = s.o.data() + j * hd;
    std::fill(oj, oj + hd, 0.0f);
    for (uint32_t t = 0; t < count; ++t) kv.addWeighted(s.kvRow(i, kvh, s.attendedRows[t], KV), s.scores[t], oj);
  }
}

// 4h. MLP half of the block: out = x1 + (d3 * H_n silu(d2 * H_n (d1 * ZCRMS(x1, pre_hada)|0)))[:d].
// No gate and no post-norm on this residual.
void Reference::mlp(uint32_t i) {
  State& s = *s_;
  const Geometry& g = model_.geo;
  const Layer& ly = model_.layers[i];
  const uint32_t d = g.d_model, n = g.hada_n;
  zcrms(s.x1.data(), ly.pre_hada.data(), d, s.z.data());
  std::fill(s.z.begin() + d, s.z.end(), 0.0f);  // zero padding to hada_n
  for (uint32_t c = 0; c < n; ++c) s.z[c] *= ly.d1[c];
  fwhtNormalized(s.z.data(), n);
  for (uint32_t c = 0; c < n; ++c) s.z[c] = silu(ly.d2[c] * s.z[c]);
  fwhtNormalized(s.z.data(), n);
  for (uint32_t c = 0; c < d; ++c) s.out[c] = s.x1[c] + ly.d3[c] * s.z[c];
}

// Probe heads: the lane mean after a layer, before final_norm, is the layer's cell.
void Reference::poolLaneMean() {
  State& s = *s_;
  laneMean(s.lanes.data(), model_.geo.mhc_lanes, model_.geo.d_model, s.cell.data());
  heads_->addCell(s.cell.data());
}

// 5. Output: x = mean of the lanes; x = ZCRMS(x, final_norm); logits = E x (tied, no bias).
void Reference::output() {
  State& s = *s_;
  const Geometry& g = model_.geo;
  const uint32_t d = g.d_model;
  laneMean(s.lanes.data(), g.mhc_lanes, d, s.x.data());
  zcrms(s.x.data(), model_.final_norm.data(), d, s.x.data());
  s.act.prepare(model_.embedding, s.x.data());
  s.act.product(model_.embedding, logits_.data());
}

}  // namespace needle
