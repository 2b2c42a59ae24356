// session.hpp: one tool-call request from tools and a request to a checked call, the one driver loop
// of both engines (docs/toolcall.md, "The session").
//
// complete() parses the tools (every error before anything runs), ranks them with the contrastive
// head when there are more than 5, renders the prompt, refuses a prompt that does not fit, pins the
// prefix through </tools> as the KV sink, feeds the prompt (restoring the backend's snapshot of that
// prefix when the last request saved the same one), then generates the reply token by token:
// a forced fragment of the call grammar is fed without sampling; otherwise the next token is drawn
// under the grammar's budget mask. The reply is read back (reply.hpp) and reported as an Envelope.
//
// The model is behind Backend: natively the C++ Reference (native.hpp), in the page engine.wasm
// (through the C API, capi.h), in the trainer a PyTorch model (the same C API from Python).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "json.hpp"
#include "sampler.hpp"
#include "tokenizer.hpp"
#include "toolcall/prompt.hpp"
#include "toolcall/reply.hpp"
#include "toolcall/tokens.hpp"

namespace needle::toolcall {

// The probe heads the session uses (the archive's head codes).
enum class HeadCode : int32_t { Contrastive = 1, Confidence = 2 };

// What a model offers the session. Every failure is an Error (a C backend's negative return becomes
// one, naming the callback). "The session" below is the model's state: the positions run since the
// last reset, their KV cache, the token history the repetition penalty reads, and the head pooling.
class Backend {
 public:
  virtual ~Backend() = default;
  // Token ids of UTF-8 text: raw = false is Tokenizer::encode (dummy prefix first), raw = true is
  // encodeRaw (a fragment inside a sequence).
  virtual std::vector<uint32_t> encode(std::string_view text, bool raw) = 0;
  // A new, empty session with the first `sink` positions pinned in the KV cache; pooling off.
  virtual void reset(uint32_t sink) = 0;
  // Runs ids at the next positions, in order; when wantLogits, keeps the logits after the last one.
  virtual void feed(std::span<const uint32_t> ids, bool wantLogits) = 0;
  // The sampler's options and the generator's seed, once per request before the first sample.
  virtual void setSampler(const SamplerOptions& options, uint64_t seed) = 0;
  // The next token from the kept logits (not run); mask: maskWords(vocab) words or null.
  virtual uint32_t sample(const uint32_t* mask) = 0;
  // log p(token) under the softmax of the kept logits at temperature 1, no mask, no penalty.
  virtual float logprob(uint32_t token) = 0;
  // Empties the probe-head pooling and pools every position run from now on (until reset).
  virtual void headsBegin() = 0;
  // The output of the head with this code over everything pooled since headsBegin.
  virtual std::vector<float> headOutput(HeadCode code) = 0;
  // True when the caller wants the reply to end after the current token.
  virtual bool stopRequested() { return false; }
  // Each reply token, when known: the whole UTF-8 characters it completes (possibly none), the id,
  // and whether it was forced (fed without sampling).
  virtual void onText(std::string_view delta, uint32_t token, bool forced) {
    (void)delta, (void)token, (void)forced;
  }
  // A monotonic clock in milliseconds.
  virtual double nowMs();

  // Prefix reuse (optional; docs/toolcall.md, "Reusing the tools prefix"). The backend keeps one
  // snapshot apart from the session: reset, feed and the ranking sessions leave it as it is.
  // Whether the two calls below work (false: every prompt is prefilled whole).
  virtual bool hasSnapshots() const { return false; }
  // Saves the session as it is now (positions, KV rows, engram ring, token history, head pooling),
  // replacing the last snapshot. False when it could not be saved (the session is unchanged).
  virtual bool snapshotSave() { return false; }
  // Returns the session, right after reset(sink) (and headsBegin() when pooling), to the snapshot,
  // which the caller expects to hold exactly the positions of `prefix`. False when there is no such
  // snapshot; the caller then resets again and prefills everything.
  virtual bool snapshotRestore(std::span<const uint32_t> prefix) {
    (void)prefix;
    return false;
  }
  // The process's peak memory in bytes (0 when unknown).
  virtual uint64_t memoryBytes() { return 0; }
};

// What the session knows of a model besides the Backend: the tokenizer (ids of markers and bytes, the
// token table), the vocabulary size (the mask's width) and max_seq_len, and which heads exist.
class SessionModel {
 public:
  // Error if the tokenizer lacks the ten chat markers or byte fallback (TokenTable's refusal), if
  // vocab is smaller than the tokenizer or max_seq_len is 0.
  SessionModel(Tokenizer tokenizer, uint32_t vocab, uint32_t maxSeqLen, bool hasContrastive,
               bool hasConfidence);
  SessionModel(const SessionModel&) = delete;
  SessionModel& operator=(const SessionModel&) = delete;

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const TokenTable& table() const { return *table_; }
  uint32_t vocab() const { return vocab_; }
  uint32_t maxSeqLen() const { return maxSeqLen_; }
  bool hasContrastive() const { return hasContrastive_; }
  bool hasConfidence() const { return hasConfidence_; }
  // The byte piece for byte b (what a forced fragment that is not whole UTF-8 is fed as).
  uint32_t byteId(uint8_t b) const { return byteIds_[b]; }

 private:
  Tokenizer tokenizer_;
  std::unique_ptr<TokenTable> table_;
  uint32_t vocab_, maxSeqLen_;
  bool hasContrastive_, hasConfidence_;
  uint32_t byteIds_[256];
};

// |no_call_bias| at most: a log-odds shift past it leaves no decision to the model.
constexpr uint32_t kNoCallBiasLimit = 100;
// no_call_doubt at most (it is a weight on the call's doubt, §8.4, so never below 0).
constexpr uint32_t kNoCallDoubtLimit = 100;
// no_call_named at most (a credit for calls the request names, §8.4, so never below 0).
constexpr uint32_t kNoCallNamedLimit = 100;

// The name words of a text (docs/toolcall.md §8.4): its runs of three or more ASCII letters, split
// where a lower-case letter meets an upper-case one (camelCase), lower-cased, a final "s" dropped.
std::vector<std::string> nameWords(std::string_view text);
// Whether `request` names the tool `toolName`: they share a name word that is not a tool verb
// ("set", "get", "search" ...: kToolVerbs in session.cpp).
bool namesTool(std::string_view request, std::string_view toolName);

// One request (docs/toolcall.md, "The request"; parseRequest reads its JSON form).
struct Request {
  std::vector<Tool> tools;      // parsed: every tool error is found before anything runs
  std::string system;           // the system turn's text ("" = none)
  std::vector<Turn> history;    // earlier turns (the first is the user's)
  std::optional<std::string> request;  // the new user turn; absent: history is the conversation
  uint32_t maxTokens = 256;     // reply tokens, sampled and forced together
  bool constrain = true;        // false: plain sampling, no mask, no forcing (then the same parser)
  SamplerOptions sampling;      // greedy by default
  uint64_t seed = 0;
  bool useHeads = true;         // rank tools (more than 5, contrastive head) and give confidence
  float noCallBias = 0;         // added to the log-odds of an empty call list at its decision (§8.4)
  float noCallDoubt = 0;        // the weight of the drawn call's doubt in that decision (§8.4)
  float noCallNamed = 0;        // subtracted there when the request names every called tool (§8.4)
  bool spanStrings = false;     // free string values are spans of the user's request (§8.5)
  bool steerNamed = false;      // the first call's name steered to the one tool the request names (§8.4)
};

// Reads a request's JSON text. Error naming the key and the problem ("request: "max_tokens" must be
// an integer from 1 to 1048576"; tool errors as parseTools gives them). "tools" may be an array or a
// string holding the tools JSON text (then its errors give line and column in that text).
Request parseRequest(std::string_view requestJson);
Request parseRequest(const json::Value& request);
// One history turn {"role": "user"|"assistant"|"tool", "content": ...}; `where` names it in errors.
Turn parseTurn(const json::Value& turn, const std::string& where);

// The outcome of a request: the envelope's fields (envelopeJson writes them).
struct Envelope {
  bool success = false;
  std::string error;                    // "" on success
  std::vector<FunctionCall> calls;      // the calls read from the reply (even invalid ones)
  std::string reasoning;                // inside <think>...</think>
  std::string text;                     // the reply as generated, markers spelled, invalid bytes U+FFFD
  std::optional<float> confidence;      // with the confidence head
  std::optional<float> noCallMargin;    // log P(empty) - log P(calls) where the call list opened (§8.4)
  std::optional<float> callDoubt;       // minus the mean log-prob of the calls' drawn tokens after it
  std::optional<bool> callsNamed;       // the request names every called tool (§8.4); none: no calls
  std::vector<FunctionCall> withdrawnCalls;  // calls the decision took back after they were written (§8.4)
  uint32_t promptTokens = 0, pinnedTokens = 0, generatedTokens = 0, forcedTokens = 0;
  uint32_t reusedPromptTokens = 0;      // prompt positions restored from the backend's snapshot
  std::vector<uint32_t> replyIds;
  std::optional<std::vector<std::string>> toolsOffered;  // when the contrastive head ranked the tools
  double timeToFirstTokenMs = 0, prefillTps = 0, decodeTps = 0, constraintMs = 0;
  uint64_t peakMemoryBytes = 0;
  bool stopped = false;                 // the caller asked to stop (not in the JSON: see "error")

  // "call" when at least one call was read, else "respond".
  const char* type() const { return calls.empty() ? "respond" : "call"; }
};

// The envelope as one JSON object, keys in the order of docs/toolcall.md ("The envelope").
std::string envelopeJson(const Envelope& envelope);
// The envelope of a request that was refused or failed before a reply: every key, success false.
Envelope errorEnvelope(std::string message);

// A request refused before the reply's first step (bad tools, a prompt that does not fit, ...).
struct Refusal : Error {
  using Error::Error;
};

// Runs requests against one model. Not thread-safe: one request at a time.
class Session {
 public:
  explicit Session(const SessionModel& model) : model_(model) {}

  // Runs one request. Throws Refusal before any step of the reply session (tools, history, a prompt
  // that does not fit: "the prompt is 2100 tokens; this model's context holds 2048"), Error when the
  // backend fails; otherwise returns the envelope (success false when the reply is not a valid answer,
  // e.g. unconstrained output or a stopped reply).
  Envelope complete(Backend& backend, const Request& request);

  // Forgets which prompt prefix the backend's snapshot holds: the next request prefills whole (and
  // saves a new one). Needed only when something else wrote the backend's snapshot.
  void forgetPrefix() { prefix_.reset(); }

 private:
  struct Run;
  // What the backend's snapshot holds, as far as this session knows: the prompt's ids through
  // </tools> (BOS, system turn, tools) and whether the head pooling was on.
  struct Prefix {
    std::vector<uint32_t> ids;
    bool pooled = false;
  };
  const SessionModel& model_;
  std::optional<Prefix> prefix_;
};

// The contrastive ranking (docs/toolcall.md, "Ranking the tools"): the indices of the `keep` tools
// whose embedding has the largest dot product with the query's, in their original order (ties: the
// lower index first). Each text is embedded as [BOS] + encode(text) in a fresh session.
std::vector<size_t> rankTools(Backend& backend, const SessionModel& model, std::string_view query,
                              const std::vector<Tool>& tools, size_t keep);

// The compact JSON of one tool as it appears inside the prompt's tools block.
std::string toolJson(const Tool& tool);

}  // namespace needle::toolcall
