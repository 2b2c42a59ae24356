// native.hpp: the session's Backend on the C++ side: the Reference step (the engine's numerics by
// default: A8 activations, int8 KV), the engine's sampler transcribed (host/sampler), the archive's
// tokenizer and probe-head pooling (host/heads). needle-run and the session tests use it.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "archive.hpp"
#include "heads.hpp"
#include "reference.hpp"
#include "sampler.hpp"
#include "tokenizer.hpp"
#include "toolcall/session.hpp"

namespace needle::toolcall {

struct NativeOptions {
  bool kvInt8 = true;  // int8 KV cache, as engine.wat (false: f32, the exact oracle)
  bool a8 = true;      // A8 activations into CQ products, as engine.wat (false: f32)
};

class NativeBackend : public Backend {
 public:
  // `model` and `tokenizer` must outlive the backend.
  NativeBackend(const Model& model, const Tokenizer& tokenizer, NativeOptions options = {});

  std::vector<uint32_t> encode(std::string_view text, bool raw) override;
  void reset(uint32_t sink) override;
  void feed(std::span<const uint32_t> ids, bool wantLogits) override;
  void setSampler(const SamplerOptions& options, uint64_t seed) override;
  uint32_t sample(const uint32_t* mask) override;
  float logprob(uint32_t token) override;
  void headsBegin() override;
  std::vector<float> headOutput(HeadCode code) override;
  // One snapshot: the Reference's (Reference::Snapshot), the head pooling, the token history.
  bool hasSnapshots() const override { return true; }
  bool snapshotSave() override;
  bool snapshotRestore(std::span<const uint32_t> prefix) override;
  bool stopRequested() override { return stop && stop(); }
  void onText(std::string_view delta, uint32_t token, bool forced) override {
    if (text) text(delta, token, forced);
  }
  // Peak resident memory of the process (getrusage's ru_maxrss).
  uint64_t memoryBytes() override;

  // Optional hooks for the caller: Stop, and the streamed text.
  std::function<bool()> stop;
  std::function<void(std::string_view, uint32_t, bool)> text;

  // The last kept logits (vocab floats; empty before the first feed that wanted them).
  const std::vector<float>& logits() const { return logits_; }
  // Positions run in the current session.
  uint32_t position() const { return ref_ ? ref_->position() : 0; }

 private:
  const Model& model_;
  const Tokenizer& tokenizer_;
  NativeOptions options_;
  std::unique_ptr<Reference> ref_;  // rebuilt when the sink changes (the KV cache's rows depend on it)
  std::unique_ptr<HeadPooling> pooling_;  // (a pointer: HeadPooling is copied, not assigned)
  bool poolingOn_ = false;                   // headsBegin since the last reset
  Sampler sampler_;
  std::vector<uint32_t> history_;  // every id run since the last reset (the repetition penalty's)
  std::vector<float> logits_;      // the last kept logits
  bool hasLogits_ = false;
  // The snapshot (snapshotSave), kept apart from the session: reset and feed leave it as it is.
  struct Saved {
    Reference::Snapshot reference;
    std::unique_ptr<HeadPooling> pooling;  // null when the pooling was off
  };
  std::optional<Saved> saved_;
};

// A SessionModel for an archive (its tokenizer, vocab, max_seq_len and heads). Error without a
// tokenizer.
std::unique_ptr<SessionModel> sessionModelOf(const Model& model);

}  // namespace needle::toolcall
