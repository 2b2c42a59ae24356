// capi.cpp: the tool-call session behind the C interface of capi.h. Every exception stops here.
#include "toolcall/capi.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "sampler.hpp"
#include "toolcall/session.hpp"

using namespace needle;
using namespace needle::toolcall;

struct needle_tc_model {
  std::unique_ptr<SessionModel> model;
  std::unique_ptr<Session> session;
};

namespace {

// A malloc'd copy of `text` (NULL only if malloc fails).
char* copyOut(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Thrown by CallbackBackend when a callback fails: the request then reports NEEDLE_TC_FAILED.
struct BackendFailure : Error {
  using Error::Error;
};

[[noreturn]] void failed(const char* callback, int64_t code) {
  throw BackendFailure(std::string("backend: ") + callback + " failed with code " + std::to_string(-code));
}

// The session's Backend over a needle_tc_backend's function pointers.
class CallbackBackend : public Backend {
 public:
  CallbackBackend(const needle_tc_backend& c, const needle_tc_snapshots* snapshots, const SessionModel& model)
      : c_(c), snapshots_(snapshots && snapshots->save && snapshots->restore ? snapshots : nullptr),
        model_(model), sampler_(model.vocab()) {
    if (!c_.reset) throw Error("backend: \"reset\" is required");
    if (!c_.feed) throw Error("backend: \"feed\" is required");
    const bool own = c_.set_sampler && c_.sample && c_.logprob;
    if (!own && !c_.logits)
      throw Error("backend: give either \"set_sampler\", \"sample\" and \"logprob\", or \"logits\"");
    if ((model.hasContrastive() || model.hasConfidence()) && (!c_.heads_begin || !c_.head_output))
      throw Error("backend: the model has probe heads, so \"heads_begin\" and \"head_output\" are required");
  }

  std::vector<uint32_t> encode(std::string_view text, bool raw) override {
    if (!c_.encode) return raw ? model_.tokenizer().encodeRaw(text) : model_.tokenizer().encode(text);
    std::vector<uint32_t> ids(text.size() + 8);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const int32_t n = c_.encode(c_.user, text.data(), static_cast<uint32_t>(text.size()), raw ? 0 : 1,
                                  ids.data(), static_cast<uint32_t>(ids.size()));
      if (n < 0) failed("encode", n);
      if (static_cast<size_t>(n) <= ids.size()) {
        ids.resize(static_cast<size_t>(n));
        for (uint32_t id : ids)
          if (id >= model_.vocab()) throw BackendFailure("backend: encode gave id " + std::to_string(id) +
                                                         ", past the vocabulary");
        return ids;
      }
      ids.resize(static_cast<size_t>(n));
    }
    throw BackendFailure("backend: encode asked for a larger buffer twice");
  }

  void reset(uint32_t sink) override {
    if (const int32_t r = c_.reset(c_.user, sink); r < 0) failed("reset", r);
    history_.clear();
  }

  void feed(std::span<const uint32_t> ids, bool wantLogits) override {
    if (const int32_t r = c_.feed(c_.user, ids.data(), static_cast<uint32_t>(ids.size()), wantLogits ? 1 : 0); r < 0)
      failed("feed", r);
    history_.insert(history_.end(), ids.begin(), ids.end());
  }

  void setSampler(const SamplerOptions& o, uint64_t seed) override {
    if (!c_.sample) {  // sampling here, on the backend's logits
      sampler_.setOptions(o);
      sampler_.seed(seed);
      return;
    }
    needle_tc_sampling s{o.temperature, o.topK, o.topP, o.minP, o.repetitionPenalty, o.repetitionWindow,
                         static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    if (const int32_t r = c_.set_sampler(c_.user, &s); r < 0) failed("set_sampler", r);
  }

  uint32_t sample(const uint32_t* mask) override {
    if (!c_.sample) return sampler_.sample(logits(), history_, mask);
    const int32_t id = c_.sample(c_.user, mask);
    if (id < 0) failed("sample", id);
    if (static_cast<uint32_t>(id) >= model_.vocab())
      throw BackendFailure("backend: sample gave id " + std::to_string(id) + ", past the vocabulary");
    return static_cast<uint32_t>(id);
  }

  float logprob(uint32_t token) override {
    if (!c_.sample) return needle::logprob(logits(), token);
    return c_.logprob(c_.user, token);
  }

  void headsBegin() override {
    if (!c_.heads_begin) throw BackendFailure("backend: no \"heads_begin\"");
    if (const int32_t r = c_.heads_begin(c_.user); r < 0) failed("heads_begin", r);
  }

  std::vector<float> headOutput(HeadCode code) override {
    if (!c_.head_output) throw BackendFailure("backend: no \"head_output\"");
    std::vector<float> out(256);
    const int32_t n = c_.head_output(c_.user, static_cast<int32_t>(code), out.data(), static_cast<uint32_t>(out.size()));
    if (n < 0) failed("head_output", n);
    if (static_cast<size_t>(n) > out.size())
      throw BackendFailure("backend: head_output gave " + std::to_string(n) + " values, more than " +
                           std::to_string(out.size()));
    out.resize(static_cast<size_t>(n));
    return out;
  }

  bool hasSnapshots() const override { return snapshots_ != nullptr; }

  bool snapshotSave() override { return snapshots_ && snapshots_->save(c_.user) >= 0; }

  bool snapshotRestore(std::span<const uint32_t> prefix) override {
    if (!snapshots_) return false;
    const int32_t position = snapshots_->restore(c_.user, prefix.data(), static_cast<uint32_t>(prefix.size()));
    if (position < 0 || static_cast<size_t>(position) != prefix.size()) return false;
    history_.assign(prefix.begin(), prefix.end());
    return true;
  }

  bool stopRequested() override { return c_.stop_requested && c_.stop_requested(c_.user) != 0; }

  void onText(std::string_view delta, uint32_t token, bool forced) override {
    if (c_.on_text) c_.on_text(c_.user, delta.data(), static_cast<uint32_t>(delta.size()), token, forced ? 1 : 0);
  }

  double nowMs() override { return c_.now_ms ? c_.now_ms(c_.user) : Backend::nowMs(); }

  uint64_t memoryBytes() override {
    if (!c_.memory_bytes) return 0;
    const double b = c_.memory_bytes(c_.user);
    return b > 0 ? static_cast<uint64_t>(b) : 0;
  }

 private:
  // The backend's last kept logits, as a span of vocab floats.
  std::span<const float> logits() {
    const float* l = c_.logits(c_.user);
    if (!l) throw BackendFailure("backend: logits gave none");
    return std::span<const float>(l, model_.vocab());
  }

  const needle_tc_backend& c_;
  const needle_tc_snapshots* snapshots_;  // null: no prefix reuse
  const SessionModel& model_;
  Sampler sampler_;                // used when the backend does not sample
  std::vector<uint32_t> history_;  // ids fed since the last reset
};

}  // namespace

extern "C" {

needle_tc_model* needle_tc_model_new(const uint8_t* tokenizer_blob, uint32_t blob_bytes, uint32_t vocab,
                                     uint32_t max_seq_len, uint32_t heads, char** error) {
  if (error) *error = nullptr;
  try {
    if (!tokenizer_blob) throw Error("model: no tokenizer blob");
    if (heads & ~(NEEDLE_TC_HEAD_CONTRASTIVE | NEEDLE_TC_HEAD_CONFIDENCE))
      throw Error("model: heads " + std::to_string(heads) + " has bits other than 1 (contrastive) and 2 (confidence)");
    auto handle = std::make_unique<needle_tc_model>();
    handle->model = std::make_unique<SessionModel>(Tokenizer::fromBlob(ByteView(tokenizer_blob, blob_bytes)), vocab,
                                                   max_seq_len, (heads & NEEDLE_TC_HEAD_CONTRASTIVE) != 0,
                                                   (heads & NEEDLE_TC_HEAD_CONFIDENCE) != 0);
    handle->session = std::make_unique<Session>(*handle->model);
    return handle.release();
  } catch (const std::exception& e) {
    if (error) *error = copyOut(e.what());
  } catch (...) {
    if (error) *error = copyOut("model: unknown error");
  }
  return nullptr;
}

void needle_tc_model_free(needle_tc_model* model) { delete model; }

int32_t needle_tc_complete(needle_tc_model* model, const char* request_json, const needle_tc_backend* backend,
                           char** envelope) {
  return needle_tc_complete_reusing(model, request_json, backend, nullptr, envelope);
}

int32_t needle_tc_complete_reusing(needle_tc_model* model, const char* request_json, const needle_tc_backend* backend,
                                   const needle_tc_snapshots* snapshots, char** envelope) {
  int32_t status = NEEDLE_TC_OK;
  std::string out;
  try {
    Envelope env;
    try {
      if (!model || !backend || !request_json) throw Refusal("complete: model, request and backend are required");
      Request request;
      try {
        request = parseRequest(std::string_view(request_json));
      } catch (const Error& e) {
        throw Refusal(e.what());
      }
      CallbackBackend b(*backend, snapshots, *model->model);
      env = model->session->complete(b, request);
    } catch (const Refusal& e) {
      status = NEEDLE_TC_REFUSED;
      env = errorEnvelope(e.what());
    } catch (const std::bad_alloc&) {
      status = NEEDLE_TC_FAILED;
      env = errorEnvelope("out of memory");
    } catch (const std::exception& e) {
      status = NEEDLE_TC_FAILED;
      env = errorEnvelope(e.what());
    }
    out = envelopeJson(env);
  } catch (...) {
    status = NEEDLE_TC_FAILED;
    out = "{\"type\":\"respond\",\"success\":false,\"error\":\"internal error while writing the envelope\"}";
  }
  if (envelope) *envelope = copyOut(out);
  return status;
}

char* needle_tc_check_tools(const char* tools_json) {
  try {
    if (!tools_json) return copyOut("tools: no text");
    const std::vector<Tool> tools = parseTools(std::string_view(tools_json));
    Grammar grammar(tools);  // the grammar's own limits, as the request would meet them
    return copyOut("");
  } catch (const std::exception& e) {
    return copyOut(e.what());
  } catch (...) {
    return copyOut("tools: unknown error");
  }
}

void* needle_tc_alloc(uint32_t bytes) { return std::malloc(bytes ? bytes : 1); }

void needle_tc_free(void* pointer) { std::free(pointer); }

}  // extern "C"
