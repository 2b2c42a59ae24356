// sampler.hpp: the token sampler of engine.wat, transcribed (docs/numerics.md, "Sampler"), so that
// the C++ programs draw exactly the tokens the wasm engine draws for the same logits, session tokens,
// options, seed and mask. The same arithmetic in the same order: expf32 of host/mathf, f64 sums of the
// f32 weights in candidate order, the same heap-based ranking (weight, then the lower id), splitmix64.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace needle {

// What the sampler does with the logits. Each option's "off" value is its default.
struct SamplerOptions {
  float temperature = 0;          // <= 0 (or NaN): greedy, the highest logit, the lowest id on ties
  uint32_t topK = 0;              // keep the k best candidates (0, or k >= candidates: off)
  float topP = 1;                 // keep the shortest rank prefix reaching topP of the weight (>= 1: off)
  float minP = 0;                 // keep weights >= minP (the best token's weight is 1) (0: off)
  float repetitionPenalty = 1;    // a seen token's logit: divided when positive, multiplied when not (1 or <= 0: off)
  uint32_t repetitionWindow = 0;  // the penalty looks at the last N session tokens (0: the whole session)
};

// A token mask: a bitset over the vocabulary in 32-bit words, bit (id mod 32) of word (id / 32) set
// when token `id` may be drawn. The engine's ADDR_MASK block has exactly this layout.
inline size_t maskWords(uint32_t vocab) { return (static_cast<size_t>(vocab) + 31) / 32; }
inline bool maskAllows(const uint32_t* mask, uint32_t id) { return (mask[id >> 5] >> (id & 31)) & 1u; }
inline void maskAllow(uint32_t* mask, uint32_t id) { mask[id >> 5] |= 1u << (id & 31); }

// splitmix64: the engine's generator (`seed`, `uniform`), and the one generator of the C++ code (the
// random models of host/random_model.cpp, needle-corpus).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed = 0) : state_(seed) {}
  void seed(uint64_t seed) { state_ = seed; }
  uint64_t next();   // the next 64-bit output
  double uniform();  // the next 53 bits as a double in [0, 1)

 private:
  uint64_t state_;
};

// One sampler for one vocabulary size: options, the generator, and scratch sized once.
class Sampler {
 public:
  Sampler(uint32_t vocab, SamplerOptions options = {}, uint64_t seed = 0);

  void setOptions(const SamplerOptions& options) { options_ = options; }
  const SamplerOptions& options() const { return options_; }
  void seed(uint64_t seed) { rng_.seed(seed); }

  // The next token for `logits` (vocab values). `history` is every token of the session so far (the
  // repetition penalty reads its last repetitionWindow entries); `mask` (maskWords(vocab) words, or
  // null for none) excludes tokens in every mode. Error when the mask allows no token, when logits has
  // the wrong size, or when a history token is past the vocabulary. Temperature sampling draws one
  // uniform from the generator; greedy draws none.
  uint32_t sample(std::span<const float> logits, std::span<const uint32_t> history, const uint32_t* mask);

 private:
  void penalize(std::span<const uint32_t> history);
  bool before(uint32_t a, uint32_t b) const;
  void sift(size_t i, size_t n);
  void keepBest(size_t n, size_t k);
  void rank(size_t n);
  double weightSum(size_t n) const;

  uint32_t vocab_;
  SamplerOptions options_;
  SplitMix64 rng_;
  std::vector<float> work_;        // vocab: penalised logits, then the weights of allowed tokens
  std::vector<uint32_t> order_;    // candidate ids (id order, then rank order)
  std::vector<uint8_t> seen_;      // vocab: tokens already penalised in this call
};

// log p(token) under the softmax of `logits` at temperature 1, no mask, no penalty (docs/numerics.md,
// "Log-probability"): (l_token - lmax) - logf32(f32(sum over ids in order of f64(expf32(l_i - lmax))))).
// Error for a token past the logits or empty logits.
float logprob(std::span<const float> logits, uint32_t token);

}  // namespace needle
