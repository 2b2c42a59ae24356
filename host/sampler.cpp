// sampler.cpp: engine.wat's sampler ($sample and the functions it calls), step for step. Every
// comparison, every f32 operation and every f64 sum is the engine's, in the engine's order, so that
// the two draw the same ids (docs/numerics.md, "Sampler"; the Node and C++ tests pin shared draws).
#include "sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "bytes.hpp"
#include "mathf.hpp"

namespace needle {

// ---------------------------------------------------------------------------------------------
// splitmix64

uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

// ---------------------------------------------------------------------------------------------
// The sampler

Sampler::Sampler(uint32_t vocab, SamplerOptions options, uint64_t seed)
    : vocab_(vocab), options_(options), rng_(seed), work_(vocab), order_(vocab), seen_(vocab) {
  if (vocab == 0) throw Error("sampler: the vocabulary is empty");
}

// The repetition penalty on the working logits: each distinct token of the window once, divided by
// the penalty when positive, multiplied when not.
void Sampler::penalize(std::span<const uint32_t> history) {
  const float rep = options_.repetitionPenalty;
  if (rep == 1.0f || rep <= 0.0f) return;
  const size_t p = history.size();
  const size_t window = options_.repetitionWindow;
  const size_t begin = window != 0 && p > window ? p - window : 0;
  std::fill(seen_.begin(), seen_.end(), uint8_t{0});
  for (size_t b = begin; b < p; ++b) {
    const uint32_t t = history[b];
    if (seen_[t]) continue;
    seen_[t] = 1;
    const float v = work_[t];
    work_[t] = v > 0.0f ? v / rep : v * rep;
  }
}

// Candidate a ranks before b: a higher weight, or the same weight and a lower id.
bool Sampler::before(uint32_t a, uint32_t b) const {
  const float wa = work_[a], wb = work_[b];
  return wa > wb || (wa == wb && a < b);
}

// Sift-down in the heap order_[0..n) whose root is the LAST-ranked candidate.
void Sampler::sift(size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && before(order_[c], order_[c + 1])) c = c + 1;
    if (!before(order_[i], order_[c])) return;
    std::swap(order_[i], order_[c]);
    i = c;
  }
}

// Keeps the k best of the n candidates in order_[0..k): a heap of k whose root is the worst kept.
void Sampler::keepBest(size_t n, size_t k) {
  for (size_t i = k >> 1; i > 0;) sift(--i, k);
  for (size_t i = k; i < n; ++i) {
    if (before(order_[i], order_[0])) {
      order_[0] = order_[i];
      sift(0, k);
    }
  }
}

// Heap sort of order_[0..n) by rank: order_[0] is the best.
void Sampler::rank(size_t n) {
  for (size_t i = n >> 1; i > 0;) sift(--i, n);
  for (size_t i = n; i > 1;) {
    --i;
    std::swap(order_[0], order_[i]);
    sift(0, i);
  }
}

// Sum of the weights of the first n candidates, f64, in candidate order.
double Sampler::weightSum(size_t n) const {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(work_[order_[i]]);
  return sum;
}

uint32_t Sampler::sample(std::span<const float> logits, std::span<const uint32_t> history,
                         const uint32_t* mask) {
  if (logits.size() != vocab_)
    throw Error("sampler: " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                std::to_string(vocab_));
  for (size_t i = 0; i < history.size(); ++i)
    if (history[i] >= vocab_)
      throw Error("sampler: session token " + std::to_string(i) + " is " + std::to_string(history[i]) +
                  ", past the vocabulary (" + std::to_string(vocab_) + " ids)");
  auto allowed = [&](uint32_t i) { return mask == nullptr || maskAllows(mask, i); };

  std::copy(logits.begin(), logits.end(), work_.begin());
  penalize(history);

  // The greedy choice over the allowed tokens: the highest logit, the lowest id on ties; the lowest
  // allowed id when no allowed logit is above -inf. lmax is its logit.
  int64_t first = -1, best = -1;
  float top = -std::numeric_limits<float>::infinity();
  for (uint32_t i = 0; i < vocab_; ++i) {
    if (!allowed(i)) continue;
    if (first < 0) first = i;
    if (work_[i] > top) {
      top = work_[i];
      best = i;
    }
  }
  if (first < 0)
    throw Error("sampler: the token mask allows none of the " + std::to_string(vocab_) + " ids");
  if (best < 0) best = first;
  const float lmax = work_[best];
  const float t = options_.temperature;
  if (!(t > 0.0f)) return static_cast<uint32_t>(best);

  // Weights w = expf((l - lmax) / T) of the allowed tokens; candidates in id order: the greedy
  // choice, and every allowed token whose weight passes min-p and is above 0.
  size_t n = 0;
  for (uint32_t i = 0; i < vocab_; ++i) {
    if (!allowed(i)) continue;
    const float w = expf32((work_[i] - lmax) / t);
    work_[i] = w;
    if (i == static_cast<uint32_t>(best) || (!(w < options_.minP) && w > 0.0f)) order_[n++] = i;
  }

  // Rank (by weight, then id) when top-k or top-p needs it; top-k keeps the best k.
  const uint32_t k = options_.topK;
  const bool cutK = k > 0 && k < n;
  const bool cutP = options_.topP < 1.0f;
  if (cutK || cutP) {
    if (cutK) {
      keepBest(n, k);
      n = k;
    }
    rank(n);
  }
  // Top-p: the shortest prefix in rank order whose weight reaches topP of the total.
  if (cutP) {
    const double target = static_cast<double>(options_.topP) * weightSum(n);
    double cum = 0.0;
    size_t i = 0;
    do {
      cum += static_cast<double>(work_[order_[i]]);
      ++i;
    } while (!(cum >= target) && i < n);
    n = i;
  }

  // One draw by cumulative weight over the candidates in order.
  const double r = rng_.uniform() * weightSum(n);
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += static_cast<double>(work_[order_[i]]);
    if (r < cum) return order_[i];
  }
  return order_[n - 1];
}

float logprob(std::span<const float> logits, uint32_t token) {
  if (token >= logits.size())
    throw Error("logprob: token " + std::to_string(token) + " is past the logits (" +
                std::to_string(logits.size()) + " values)");
  float lmax = -std::numeric_limits<float>::infinity();
  for (float l : logits)
    if (l > lmax) lmax = l;
  double sum = 0.0;
  for (float l : logits) sum += static_cast<double>(expf32(l - lmax));
  return (logits[token] - lmax) - logf32(static_cast<float>(sum));
}

}  // namespace needle
