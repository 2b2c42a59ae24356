// reference.hpp: the fp32 Needle 2 token step, our oracle (docs/model.md follows it step by step).
#pragma once
#include <cstdint>
#include <vector>

#include "archive.hpp"

namespace needle {

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
  Reference(const Model& model, ReferenceOptions options);

  // Runs `token` at the next logical position. Returns the logits (vocab) when wantLogits, else an
  // empty vector (prefill skips the vocabulary projection). Error for a token past the vocabulary or
  // when the position would reach max_seq_len; the state is then unchanged.
  const std::vector<float>& step(uint32_t token, bool wantLogits);
  uint32_t position() const { return position_; }
  void reset();
  void setTrace(Trace* trace) { trace_ = trace; }

 private:
  struct Impl;
  const Model& model_;
  ReferenceOptions options_;
  uint32_t position_ = 0;
  Trace* trace_ = nullptr;
  std::vector<float> logits_;
  // State (sized once in the constructor; see reference.cpp for the fields).
  std::vector<uint32_t> history_;            // every token so far, by logical position
  std::vector<float> lanes_;                 // lanes x d
  std::vector<int8_t> kq_, vq_;              // int8 KV: [layer][kv head][slot][head_dim]
  std::vector<float> kScale_, vScale_;       // [layer][kv head][slot][head_dim / 32]
  std::vector<float> kf_, vf_;               // f32 KV (kvInt8 = false), same layout
  std::vector<float> engramRing_;            // [site][ring row][d]: raw v_p at p mod ring rows
  uint32_t kvSlots_ = 0;                     // sink + kv_window (or max_seq_len when window is 0)
};

// Physical KV row of a logical position: pinned sinks first, then a ring of `window` rows.
inline uint32_t physicalSlot(uint32_t position, uint32_t sink, uint32_t window) {
  if (position < sink || window == 0) return position;
  return sink + (position - sink) % window;
}

}  // namespace needle
