// native.cpp: the session's Backend on the C++ side (Reference, Sampler, HeadPooling).
#include "toolcall/native.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace needle::toolcall {

NativeBackend::NativeBackend(const Model& model, const Tokenizer& tokenizer, NativeOptions options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      pooling_(std::make_unique<HeadPooling>(model.heads, model.geo.d_model)),
      sampler_(model.geo.vocab) {}

std::vector<uint32_t> NativeBackend::encode(std::string_view text, bool raw) {
  return raw ? tokenizer_.encodeRaw(text) : tokenizer_.encode(text);
}

void NativeBackend::reset(uint32_t sink) {
  if (ref_ && ref_->options().sink == sink) {
    ref_->reset();
  } else {
    ReferenceOptions o;
    o.kvInt8 = options_.kvInt8;
    o.a8 = options_.a8;
    o.sink = sink;
    ref_ = std::make_unique<Reference>(model_, o);
  }
  ref_->setHeads(nullptr);
  poolingOn_ = false;
  history_.clear();
  hasLogits_ = false;
}

void NativeBackend::feed(std::span<const uint32_t> ids, bool wantLogits) {
  if (!ref_) throw Error("native backend: feed before reset");
  if (ids.empty()) return;
  const std::vector<float>& logits = ref_->prefill(ids, wantLogits);
  history_.insert(history_.end(), ids.begin(), ids.end());
  hasLogits_ = wantLogits;
  if (wantLogits) logits_ = logits;
}

bool NativeBackend::snapshotSave() {
  if (!ref_) return false;
  Saved s{ref_->snapshot(), poolingOn_ ? std::make_unique<HeadPooling>(*pooling_) : nullptr};
  saved_ = std::move(s);
  return true;
}

bool NativeBackend::snapshotRestore(std::span<const uint32_t> prefix) {
  // Only the snapshot of exactly this prefix, taken with the same sink, KV mode and pooling.
  if (!ref_ || !saved_) return false;
  const Reference::Snapshot& r = saved_->reference;
  if (r.sink != ref_->options().sink || r.kvInt8 != ref_->options().kvInt8 ||
      !std::equal(prefix.begin(), prefix.end(), r.history.begin(), r.history.end()) ||
      (saved_->pooling != nullptr) != poolingOn_)
    return false;
  ref_->restore(r);
  if (poolingOn_) {
    pooling_ = std::make_unique<HeadPooling>(*saved_->pooling);
    ref_->setHeads(pooling_.get());
  }
  history_.assign(prefix.begin(), prefix.end());
  hasLogits_ = false;
  return true;
}

void NativeBackend::setSampler(const SamplerOptions& options, uint64_t seed) {
  sampler_.setOptions(options);
  sampler_.seed(seed);
}

uint32_t NativeBackend::sample(const uint32_t* mask) {
  if (!hasLogits_) throw Error("native backend: sample without logits");
  return sampler_.sample(logits_, history_, mask);
}

float NativeBackend::logprob(uint32_t token) {
  if (!hasLogits_) throw Error("native backend: logprob without logits");
  return needle::logprob(logits_, token);
}

void NativeBackend::headsBegin() {
  if (!ref_) throw Error("native backend: heads before reset");
  if (model_.heads.empty()) throw Error("native backend: the archive has no probe heads");
  pooling_->clear();
  ref_->setHeads(pooling_.get());
  poolingOn_ = true;
}

std::vector<float> NativeBackend::headOutput(HeadCode code) {
  for (size_t h = 0; h < model_.heads.size(); ++h)
    if (static_cast<int32_t>(model_.heads[h].kind) == static_cast<int32_t>(code)) return pooling_->output(h);
  throw Error(std::string("native backend: the archive has no ") +
              (code == HeadCode::Contrastive ? "contrastive" : "confidence") + " head");
}

uint64_t NativeBackend::memoryBytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

std::unique_ptr<SessionModel> sessionModelOf(const Model& model) {
  if (model.tokenizer.empty()) throw Error("the archive has no tokenizer");
  bool contrastive = false, confidence = false;
  for (const ProbeHead& h : model.heads) {
    contrastive = contrastive || h.kind == HeadKind::Contrastive;
    confidence = confidence || h.kind == HeadKind::Confidence;
  }
  return std::make_unique<SessionModel>(Tokenizer::fromBlob(model.tokenizer), model.geo.vocab,
                                        model.geo.max_seq_len, contrastive, confidence);
}

}  // namespace needle::toolcall
