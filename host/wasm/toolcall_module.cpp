// toolcall_module.cpp: the Emscripten side of build/toolcall.wasm (scripts/build-toolcall-wasm.sh).
//
// The module is the C API of host/toolcall/capi.h, built with em++, plus this one entry point: it
// fills a needle_tc_backend whose callbacks are the JavaScript functions of the object the driver
// Worker installs as `Module.backend` (site/engine/worker.mjs), reached through EM_JS imports, and
// runs needle_tc_complete with it. So JavaScript never writes a C struct or a function table: every
// layout stays here, in C, and JS sees plain numbers (pointers into this module's memory, ids, sizes).
//
// Contract for the JS functions (worker.mjs implements them on engine.wasm's exports): each returns
// what the capi.h callback returns, never throws (a failure is a negative number, and the JS side
// keeps its message for the envelope), and reads or writes this module's memory only at the pointers
// it is given. Not compiled natively (host/wasm/ is outside the CMake globs).
#include <emscripten/emscripten.h>

#include <cstdint>

#include "toolcall/capi.h"

namespace {

// The imports: each forwards to Module.backend.<name>. The arguments are the callback's, minus `user`
// (one backend per module instance), and set_sampler's struct passed as its fields.
EM_JS(int32_t, js_reset, (uint32_t sink), { return Module.backend.reset(sink); });
EM_JS(int32_t, js_feed, (const uint32_t* ids, uint32_t n, int32_t want_logits),
      { return Module.backend.feed(ids, n, want_logits); });
EM_JS(int32_t, js_set_sampler,
      (float temperature, uint32_t top_k, float top_p, float min_p, float repetition_penalty,
       uint32_t repetition_window, uint32_t seed_lo, uint32_t seed_hi),
      {
        return Module.backend.setSampler(temperature, top_k, top_p, min_p, repetition_penalty,
                                         repetition_window, seed_lo, seed_hi);
      });
EM_JS(int32_t, js_sample, (const uint32_t* mask), { return Module.backend.sample(mask); });
EM_JS(float, js_logprob, (uint32_t token), { return Module.backend.logprob(token); });
EM_JS(int32_t, js_heads_begin, (), { return Module.backend.headsBegin(); });
EM_JS(int32_t, js_head_output, (int32_t code, float* out, uint32_t cap),
      { return Module.backend.headOutput(code, out, cap); });
EM_JS(int32_t, js_stop_requested, (), { return Module.backend.stopRequested(); });
EM_JS(int32_t, js_snapshot_save, (), { return Module.backend.snapshotSave(); });
EM_JS(int32_t, js_snapshot_restore, (const uint32_t* prefix, uint32_t n),
      { return Module.backend.snapshotRestore(prefix, n); });
EM_JS(void, js_on_text, (const char* utf8, uint32_t bytes, uint32_t token, int32_t forced),
      { Module.backend.onText(utf8, bytes, token, forced); });
EM_JS(double, js_now_ms, (), { return Module.backend.nowMs(); });
EM_JS(double, js_memory_bytes, (), { return Module.backend.memoryBytes(); });

EM_JS(void, js_set_constants,
      (int32_t ok, int32_t refused, int32_t failed, uint32_t head_contrastive, uint32_t head_confidence,
       int32_t code_contrastive, int32_t code_confidence),
      {
        Module.constants = {
          OK : ok, REFUSED : refused, FAILED : failed,
          HEAD_CONTRASTIVE : head_contrastive, HEAD_CONFIDENCE : head_confidence,
          CODE_CONTRASTIVE : code_contrastive, CODE_CONFIDENCE : code_confidence
        };
      });

// The callbacks of capi.h, each calling its import.
int32_t reset(void*, uint32_t sink) { return js_reset(sink); }
int32_t feed(void*, const uint32_t* ids, uint32_t n, int32_t want_logits) { return js_feed(ids, n, want_logits); }
int32_t setSampler(void*, const needle_tc_sampling* s) {
  return js_set_sampler(s->temperature, s->top_k, s->top_p, s->min_p, s->repetition_penalty,
                        s->repetition_window, s->seed_lo, s->seed_hi);
}
int32_t sample(void*, const uint32_t* mask) { return js_sample(mask); }
float logprob(void*, uint32_t token) { return js_logprob(token); }
int32_t headsBegin(void*) { return js_heads_begin(); }
int32_t headOutput(void*, int32_t code, float* out, uint32_t cap) { return js_head_output(code, out, cap); }
int32_t stopRequested(void*) { return js_stop_requested(); }
int32_t snapshotSave(void*) { return js_snapshot_save(); }
int32_t snapshotRestore(void*, const uint32_t* prefix, uint32_t n) { return js_snapshot_restore(prefix, n); }
void onText(void*, const char* utf8, uint32_t bytes, uint32_t token, int32_t forced) {
  js_on_text(utf8, bytes, token, forced);
}
double nowMs(void*) { return js_now_ms(); }
double memoryBytes(void*) { return js_memory_bytes(); }

}  // namespace

extern "C" {

// Sets Module.constants to capi.h's values, so that JavaScript keeps no copy of them:
// {OK, REFUSED, FAILED, HEAD_CONTRASTIVE, HEAD_CONFIDENCE, CODE_CONTRASTIVE, CODE_CONFIDENCE}.
EMSCRIPTEN_KEEPALIVE void needle_tcw_constants() {
  js_set_constants(NEEDLE_TC_OK, NEEDLE_TC_REFUSED, NEEDLE_TC_FAILED, NEEDLE_TC_HEAD_CONTRASTIVE,
                   NEEDLE_TC_HEAD_CONFIDENCE, NEEDLE_TC_CODE_CONTRASTIVE, NEEDLE_TC_CODE_CONFIDENCE);
}

// needle_tc_complete_reusing with the JavaScript backend and its snapshot slot (the engine's one
// snapshot: the handle's session keeps the last request's tools prefix there). `heads` says whether the
// probe-head callbacks are offered (the model handle's heads bits; 0 leaves them NULL). Text is
// encoded by the model handle's own tokenizer (encode = NULL: the archive's blob, the same ids as
// engine.wat's encode). Returns NEEDLE_TC_OK / _REFUSED / _FAILED and sets *envelope as
// needle_tc_complete does.
EMSCRIPTEN_KEEPALIVE int32_t needle_tcw_complete(needle_tc_model* model, const char* request_json,
                                                 uint32_t heads, char** envelope) {
  needle_tc_backend backend{};
  backend.user = nullptr;
  backend.encode = nullptr;
  backend.reset = reset;
  backend.feed = feed;
  backend.set_sampler = setSampler;
  backend.sample = sample;
  backend.logprob = logprob;
  backend.logits = nullptr;
  backend.heads_begin = heads ? headsBegin : nullptr;
  backend.head_output = heads ? headOutput : nullptr;
  backend.stop_requested = stopRequested;
  backend.on_text = onText;
  backend.now_ms = nowMs;
  backend.memory_bytes = memoryBytes;
  const needle_tc_snapshots snapshots{snapshotSave, snapshotRestore};
  return needle_tc_complete_reusing(model, request_json, &backend, &snapshots, envelope);
}

}  // extern "C"
