// reference.hpp: the fp32 Needle 2 token step, our oracle (docs/model.md follows it step by step).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "archive.hpp"

namespace needle {

class HeadPooling;  // heads.hpp

struct ReferenceOptions {
  bool kvInt8 = true;   // int8 KV cache with per-32 scales (false: f32 KV, the exact oracle)
  bool a8 = false;      // activations into CQ products quantised as the wasm engine does
  uint32_t sink = 0;    // first `sink` positions stay pinned in the KV cache
};

// What the parity ladder records of one step (filled when a Trace is attached).
struct Trace {
  std::vector<float> embedding;                 // E[tok] * sqrt(d)
  std::vector<std::vector<float>> engramE;      // per site: concatenated table rows e_p
  std::vector<std::vector<float>> engramK;      // per site: Wkey e_p
  std::vector<std::vector<float>> engramV;      // per site: tapped v'_p
  std::vector<std::vector<float>> laneIn;       // per layer: lanes x d before the layer
  std::vector<std::vector<float>> laneOut;      // per layer: lanes x d after the layer
};

// Weights (the Model, read in place), geometry (model.geo) and State (everything below) of one
// session. step() follows docs/model.md in order.
class Reference {
 public:
  // Sizes the whole state once. Error when the options cannot work with the geometry (int8 KV needs
  // head_dim to be a multiple of 32).
  Reference(const Model& model, ReferenceOptions options);
  ~Reference();
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  // Runs `token` at the next logical position. Returns the logits (vocab) when wantLogits, else an
  // empty vector (prefill skips the vocabulary projection). Error for a token past the vocabulary or
  // when the position would reach max_seq_len; the state is then unchanged.
  const std::vector<float>& step(uint32_t token, bool wantLogits);
  uint32_t position() const { return position_; }
  // Runs ids at the next positions, in order: exactly what ids.size() step()s give (state, head
  // pooling and the last logits). The reference steps; engine.wat batches. Both refusals of step()
  // (a token past the vocabulary, a position reaching max_seq_len) come before any position is run.
  const std::vector<float>& prefill(std::span<const uint32_t> ids, bool wantLogits);

  // What a session remembers of its past positions besides their tokens: the KV cache (in the
  // session's one form, int8 or f32; the other form's vectors stay empty) and the engram ring.
  struct Memory {
    std::vector<int8_t> kq, vq;          // int8 KV: [layer][kv head][slot][head_dim]
    std::vector<float> kScale, vScale;   // int8 KV: [layer][kv head][slot][head_dim / 32]
    std::vector<float> kf, vf;           // f32 KV (kvInt8 false): [layer][kv head][slot][head_dim]
    std::vector<float> engramRing;       // [site][ring row][d]: raw v_p at row p mod ringRows
    // Whether `other` has every vector of the same size (a memory of the same geometry and options).
    bool sameShape(const Memory& other) const;
    void clear();                        // every value 0 (the sizes stay)
  };

  // The session at one position: everything step() carries to the next position (token history, KV
  // rows, engram ring). restore() returns to it; the steps after a restore give bit for bit what the
  // uninterrupted session gives. Head pooling is not part of it (HeadPooling is the caller's).
  struct Snapshot {
    uint32_t position = 0;
    uint32_t sink = 0;                 // the options it was taken under (restore checks them)
    bool kvInt8 = true;
    std::vector<uint32_t> history;     // positions [0, position)
    Memory memory;
  };
  Snapshot snapshot() const;
  // Error when the snapshot was taken with another sink or KV mode, or of another geometry.
  void restore(const Snapshot& snapshot);
  // Back to an empty session (position 0); the next steps give the same results as a fresh Reference.
  void reset();
  void setTrace(Trace* trace) { trace_ = trace; }
  // When attached, every step feeds the position's cells to `heads` (docs/model.md, "Probe heads"):
  // the scaled embedding, then the lane mean after each layer (before final_norm). Null detaches.
  void setHeads(HeadPooling* heads) { heads_ = heads; }
  const ReferenceOptions& options() const { return options_; }

 private:
  // Everything that changes from step to step (the session: token history, lanes, KV cache, engram
  // ring) and the scratch vectors of one step, all sized once in the constructor. See reference.cpp.
  struct State;

  void embed(uint32_t token);
  void engramKeysAndValues();
  void layer(uint32_t i);
  void attention(uint32_t i);
  void ropeTables(uint32_t position);
  void normAndRotate(float* x, const std::vector<float>& scale);
  template <class Kv>
  void attendHeads(Kv kv, uint32_t i);  // Kv: the cache's int8 or f32 form (reference.cpp)
  void mlp(uint32_t i);
  void output();
  void poolLaneMean();

  const Model& model_;
  ReferenceOptions options_;
  uint32_t position_ = 0;
  Trace* trace_ = nullptr;
  HeadPooling* heads_ = nullptr;
  std::vector<float> logits_;
  const std::vector<float> noLogits_;  // what step() returns when the logits were not wanted
  std::unique_ptr<State> s_;
};

// Physical KV row of a logical position: pinned sinks first, then a ring of `window` rows.
inline uint32_t physicalSlot(uint32_t position, uint32_t sink, uint32_t window) {
  if (position < sink || window == 0) return position;
  return sink + (position - sink) % window;
}

// The logical positions a query at position p attends to (docs/numerics.md): the pinned sinks
// [0, sinkEnd) and the window [windowBegin, end), with sinkEnd <= windowBegin <= end = p + 1.
struct KeyRange {
  uint32_t sinkEnd = 0, windowBegin = 0, end = 0;
};
KeyRange attendedKeys(uint32_t position, uint32_t sink, uint32_t window);

// Engram hash of table `table` (of n-gram order `order`) at position p, over tokens[0..p]; positions
// before 0 read token 0. Returns the raw accumulator after the final xor-shift; slot = hash % slots.
uint32_t engramHash(uint32_t table, uint32_t order, const uint32_t* tokens, uint32_t position);

// Log-domain Sinkhorn on an n x n matrix (row-major), in place: `iterations` times, subtract each
// row's logsumexp, then each column's (both max-subtracted). exp() of the result has columns summing
// to 1 (and rows to about 1).
void sinkhornLog(float* m, uint32_t n, uint32_t iterations);

// An activation prepared for CQ products the way the reference does it, without allocating: x zero-
// padded to m.colsPadded and rotated by H_G per group (f32), and in A8 mode then quantised per 32.
// Identical, bit for bit, to prepareF32 and prepareA8 of cq.hpp (tests/cpp/reference checks it).
void prepareF32Into(const CqMatrix& m, const float* x, std::vector<float>& out);
struct PreparedA8;
void prepareA8Into(const CqMatrix& m, const float* x, std::vector<float>& scratch, PreparedA8& out);

}  // namespace needle
