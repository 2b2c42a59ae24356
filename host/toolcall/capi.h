/* capi.h: the tool-call session behind a C interface (docs/toolcall.md, "The C API").
 *
 * One implementation of a tool-call request (host/toolcall/session.hpp: rank the tools, render the
 * prompt, constrain every token to the call grammar, feed forced fragments, read the reply back, the
 * envelope) serves three callers through this interface:
 *   - the page and tools/needle-wasm.mjs: this file built with Emscripten (build/toolcall.mjs +
 *     toolcall.wasm), the backend callbacks calling engine.wasm's exports;
 *   - Python (ctypes): libneedle_toolcall.so, the callbacks running a PyTorch model;
 *   - C and C++ programs (tests/cpp/session checks it against the native session).
 *
 * The model-side work (running tokens, sampling, the probe heads) is the caller's: it is reached
 * through a struct of C function pointers (needle_tc_backend). Everything else happens here.
 *
 * Rules for every function below:
 *   - None ever throws, traps or aborts on bad input; failures are reported as documented.
 *   - Every string in and out is UTF-8, NUL-terminated.
 *   - Every char* returned is allocated here with malloc; release it with needle_tc_free.
 *   - Sizes and counts are uint32_t (the same width in wasm32 and in a 64-bit process, which keeps
 *     the callback signatures identical for Emscripten's addFunction and for ctypes).
 */
#ifndef NEEDLE_TOOLCALL_CAPI_H
#define NEEDLE_TOOLCALL_CAPI_H

#include <stdint.h>

/* (emscripten.h is C++ inside when compiled as C++: included outside the extern "C" block) */
#if defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
#define NEEDLE_TC_API EMSCRIPTEN_KEEPALIVE
#elif defined(__GNUC__)
#define NEEDLE_TC_API __attribute__((visibility("default")))
#else
#define NEEDLE_TC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Which probe heads the model has (the `heads` argument of needle_tc_model_new): a bit per head code
 * of the archive's manifest, 1 << (code - 1). */
#define NEEDLE_TC_HEAD_CONTRASTIVE 1u /* code 1: ranks tools against the request */
#define NEEDLE_TC_HEAD_CONFIDENCE 2u  /* code 2: the confidence logit */

/* Head codes as passed to needle_tc_backend.head_output (the archive's, and engine.wat's head_code). */
#define NEEDLE_TC_CODE_CONTRASTIVE 1
#define NEEDLE_TC_CODE_CONFIDENCE 2

/* needle_tc_complete's result. */
#define NEEDLE_TC_OK 0      /* the request ran; the envelope's "success" says whether the reply is a valid answer */
#define NEEDLE_TC_REFUSED 1 /* refused before the reply's first step: bad request JSON, bad tools JSON, an
                               unsupported schema keyword, bad history, a prompt that does not fit the
                               context. The envelope's "error" says what and where. */
#define NEEDLE_TC_FAILED 2  /* a backend callback failed (a negative return) or an internal error; the
                               envelope's "error" names the callback and its code */

/* The sampler's options and seed, as engine.wat's `sampler` and `seed` exports take them (each option's
 * "off" value in brackets; docs/numerics.md, "Sampler"). */
typedef struct needle_tc_sampling {
  float temperature;          /* <= 0: greedy (0) */
  uint32_t top_k;             /* (0) */
  float top_p;                /* (1) */
  float min_p;                /* (0) */
  float repetition_penalty;   /* (1) */
  uint32_t repetition_window; /* last N session tokens; 0 = the whole session (0) */
  uint32_t seed_lo, seed_hi;  /* the generator's u64 seed: low and high 32 bits */
} needle_tc_sampling;

/* What a model offers the session. `user` is passed back to every callback. Callbacks that return
 * int32_t return 0 (or a count, or a token id) on success and a negative number on failure: the
 * session then stops and reports NEEDLE_TC_FAILED with "backend: <callback> failed with code N"
 * (N is the negated return, e.g. an engine ERR_* code).
 *
 * A "session" is the model's state: positions run since the last reset, their KV cache, the token
 * history the repetition penalty reads, and the probe-head pooling. */
typedef struct needle_tc_backend {
  void* user;

  /* Token ids of UTF-8 text: with_prefix 1 = Tokenizer::encode (the dummy-prefix U+2581 first),
   * 0 = encodeRaw (a fragment inside a sequence). Writes at most `cap` ids to `out`; returns the count
   * (which may exceed cap: the session then calls again with a larger buffer), or negative.
   * Optional: NULL = the model handle's own tokenizer (built from the same blob, so the ids are the
   * same). */
  int32_t (*encode)(void* user, const char* utf8, uint32_t bytes, int32_t with_prefix, uint32_t* out,
                    uint32_t cap);

  /* A new, empty session whose first `sink` positions stay pinned in the KV cache while the window
   * slides (engine.wat's session_reset). Also ends probe-head pooling. Required. */
  int32_t (*reset)(void* user, uint32_t sink);

  /* Runs ids[0..n) at the next positions of the session, in order. When want_logits, the logits after
   * the last one are kept for sample / logprob / logits; otherwise the vocabulary projection may be
   * skipped. The session never feeds past max_seq_len. Required. */
  int32_t (*feed)(void* user, const uint32_t* ids, uint32_t n, int32_t want_logits);

  /* Sampling, either by the backend (set_sampler + sample + logprob, all three) or here (logits). */

  /* Sets the sampler's options and seeds its generator; called once per request before the first
   * sample. */
  int32_t (*set_sampler)(void* user, const needle_tc_sampling* sampling);
  /* The next token id from the last kept logits (not run). `mask`: NULL, or ceil(vocab / 32) words,
   * bit (id % 32) of word (id / 32) set when id may be drawn (engine.wat's ADDR_MASK layout; bits past
   * the tokenizer's pieces are 0). Returns the id, or negative (e.g. -ERR_MASK_EMPTY). */
  int32_t (*sample)(void* user, const uint32_t* mask);
  /* log p(token) under the softmax of the last kept logits at temperature 1, no mask, no penalty
   * (docs/numerics.md, "Log-probability"). */
  float (*logprob)(void* user, uint32_t token);

  /* Used when `sample` is NULL: the last kept logits (vocab floats, valid until the next feed or
   * reset), or NULL on failure. The session then samples with the C++ needle::Sampler (the engine's
   * arithmetic: the same ids as the engine for the same logits, options and seed), its repetition
   * history being the ids fed since the last reset, and computes logprob with needle::logprob. */
  const float* (*logits)(void* user);

  /* Probe heads; both may be NULL when the model has none (needle_tc_model_new's `heads` is 0). */
  /* Empties the pooling and pools every position run from now on, until the next reset. */
  int32_t (*heads_begin)(void* user);
  /* The output of the head with this code (NEEDLE_TC_CODE_*) over everything pooled since
   * heads_begin: writes at most `cap` floats to `out` and returns the count (128 contrastive,
   * L2-normalised; 1 confidence, the logit), or negative. */
  int32_t (*head_output)(void* user, int32_t code, float* out, uint32_t cap);

  /* Optional (NULL: never): nonzero when the caller wants the reply to end after the current token. */
  int32_t (*stop_requested)(void* user);
  /* Optional: called once for every reply token, in order, when it is known. `utf8`/`bytes` is the new
   * text it completes (only whole UTF-8 characters; possibly empty; invalid bytes as U+FFFD; chat
   * markers spelled out); `forced` is 1 for a token of a forced fragment (fed without sampling). The
   * concatenation of all deltas is the envelope's "text". */
  void (*on_text)(void* user, const char* utf8, uint32_t bytes, uint32_t token, int32_t forced);
  /* Optional: a monotonic clock in milliseconds (NULL: the C++ steady clock). */
  double (*now_ms)(void* user);
  /* Optional: the process's peak memory in bytes (NULL: 0), reported as peak_memory_bytes. */
  double (*memory_bytes)(void* user);
} needle_tc_backend;

/* Prefix reuse (optional; docs/toolcall.md, "Reusing the tools prefix"): one snapshot of the session
 * that the backend keeps apart from it (reset, feed and the ranking sessions leave it as it is). The
 * session saves it when a prompt's pinned prefix (BOS, system turn, tools through </tools>) has been
 * fed, and restores it, right after reset (and heads_begin when pooling), when the next request's
 * prompt starts with exactly the same ids. A separate struct, so that needle_tc_backend keeps its
 * layout for callers built against it (Python's ctypes). */
typedef struct needle_tc_snapshots {
  /* Saves the session as it is now: its position, token history, KV rows, engram ring and head
   * pooling, replacing the last snapshot. 0, or negative when it could not (the session unchanged;
   * the request goes on without reuse). */
  int32_t (*save)(void* user);
  /* Returns the session to the snapshot when it holds exactly the n ids of `prefix` (its position is
   * n and its token history those ids) and returns n; otherwise negative (no snapshot, or another
   * one), and the session then resets again and prefills the whole prompt. */
  int32_t (*restore)(void* user, const uint32_t* prefix, uint32_t n);
} needle_tc_snapshots;

/* What the session knows of a model: its tokenizer (and the token table built from it, 15-30 ms for
 * 8192 pieces, once), the vocabulary size (the mask's width: vocab >= the tokenizer's pieces),
 * max_seq_len, and which probe heads exist (NEEDLE_TC_HEAD_* bits). */
typedef struct needle_tc_model needle_tc_model;

/* Builds a model handle from the archive's tokenizer blob (copied; the caller may free it). On failure
 * returns NULL and, when `error` is not NULL, sets *error to the message (free with needle_tc_free):
 * a bad blob, a tokenizer without the ten chat markers or byte fallback, vocab smaller than the
 * tokenizer, max_seq_len 0. */
NEEDLE_TC_API needle_tc_model* needle_tc_model_new(const uint8_t* tokenizer_blob, uint32_t blob_bytes,
                                                   uint32_t vocab, uint32_t max_seq_len, uint32_t heads,
                                                   char** error);
NEEDLE_TC_API void needle_tc_model_free(needle_tc_model* model);

/* Runs one tool-call request (JSON text, docs/toolcall.md "The request") with the backend's model:
 * ranks the tools with the contrastive head when there are more than 5, renders the prompt, refuses
 * it if it does not fit, feeds it, generates the reply under the call grammar, and reads it back.
 * Sets *envelope (never NULL on return, unless malloc fails) to the envelope JSON (docs/toolcall.md,
 * "The envelope"; one object, one line) and returns NEEDLE_TC_OK, NEEDLE_TC_REFUSED or
 * NEEDLE_TC_FAILED. The envelope of a refused or failed request has every key, "success": false and
 * "error". Not reentrant for one model handle (one request at a time per handle). */
NEEDLE_TC_API int32_t needle_tc_complete(needle_tc_model* model, const char* request_json,
                                         const needle_tc_backend* backend, char** envelope);

/* needle_tc_complete, with prefix reuse through `snapshots` (NULL: none, which is needle_tc_complete).
 * The model handle remembers which prompt ids the backend's snapshot holds, so use one backend (one
 * engine) per handle; the envelope's "reused_prompt_tokens" says how many positions were restored. */
NEEDLE_TC_API int32_t needle_tc_complete_reusing(needle_tc_model* model, const char* request_json,
                                                 const needle_tc_backend* backend,
                                                 const needle_tc_snapshots* snapshots, char** envelope);

/* Checks tools JSON text as the request would: "" when it is a valid tool list for the call grammar,
 * else the message (tools JSON at line 3, column 7: ...; tool "t" parameter "p": "pattern" is not
 * supported). Never NULL unless malloc fails. Free with needle_tc_free. */
NEEDLE_TC_API char* needle_tc_check_tools(const char* tools_json);

/* malloc and free for callers that share this module's memory (wasm: the bytes of the tokenizer blob,
 * the request text, the callbacks' buffers). needle_tc_free(NULL) does nothing. */
NEEDLE_TC_API void* needle_tc_alloc(uint32_t bytes);
NEEDLE_TC_API void needle_tc_free(void* pointer);

#ifdef __cplusplus
}
#endif

#endif /* NEEDLE_TOOLCALL_CAPI_H */
