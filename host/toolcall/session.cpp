// session.cpp: the tool-call session's driver loop (docs/toolcall.md, "The session", "The request",
// "The envelope").
#include "toolcall/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "mathf.hpp"

namespace needle::toolcall {

using json::Value;

namespace {

constexpr size_t kRankedTools = 5;           // the real engine's rule: the 5 best tools, with more
constexpr uint32_t kMaxTokensLimit = 1u << 20;  // largest max_tokens a request may ask for

std::string str(uint64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------------------------------------
// Reply text as a stream of whole UTF-8 characters.

// Where the UTF-8 sequence at text[at] stands: complete (its length), ill-formed (the length of the
// maximal subpart that becomes one U+FFFD, as Tokenizer::decode and TextDecoder count it), or a
// well-formed start cut off by the end of the text.
struct Utf8Prefix {
  enum class Kind { Whole, Invalid, Incomplete } kind;
  size_t length;
};

Utf8Prefix utf8Prefix(std::string_view text, size_t at) {
  const uint8_t lead = static_cast<uint8_t>(text[at]);
  if (lead < 0x80) return {Utf8Prefix::Kind::Whole, 1};
  size_t trailing;
  uint8_t low = 0x80, high = 0xBF;  // the allowed range of the first trailing byte
  if (lead >= 0xC2 && lead <= 0xDF) trailing = 1;
  else if (lead == 0xE0) trailing = 2, low = 0xA0;   // no overlong 3-byte forms
  else if (lead == 0xED) trailing = 2, high = 0x9F;  // no surrogates
  else if (lead >= 0xE1 && lead <= 0xEF) trailing = 2;
  else if (lead == 0xF0) trailing = 3, low = 0x90;   // no overlong 4-byte forms
  else if (lead >= 0xF1 && lead <= 0xF3) trailing = 3;
  else if (lead == 0xF4) trailing = 3, high = 0x8F;  // nothing past U+10FFFF
  else return {Utf8Prefix::Kind::Invalid, 1};        // a stray continuation byte, C0, C1, F5..FF
  for (size_t k = 1; k <= trailing; ++k) {
    if (at + k >= text.size()) return {Utf8Prefix::Kind::Incomplete, k};
    const uint8_t c = static_cast<uint8_t>(text[at + k]);
    if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return {Utf8Prefix::Kind::Invalid, k};
  }
  return {Utf8Prefix::Kind::Whole, trailing + 1};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes in, whole characters out: the text the deltas add up to is Tokenizer::decode's reading of
// the same bytes (without its leading-space strip).
class Utf8Stream {
 public:
  // The whole characters that `bytes` completes, ill-formed sequences as U+FFFD.
  std::string push(std::string_view bytes) {
    pending_ += bytes;
    std::string out;
    size_t at = 0;
    while (at < pending_.size()) {
      const Utf8Prefix p = utf8Prefix(pending_, at);
      if (p.kind == Utf8Prefix::Kind::Incomplete) break;
      if (p.kind == Utf8Prefix::Kind::Whole) out.append(pending_, at, p.length);
      else out += kReplacement;
      at += p.length;
    }
    pending_.erase(0, at);
    return out;
  }
  // Whatever is left at the end: a cut-off sequence is one U+FFFD.
  std::string finish() {
    std::string out = pending_.empty() ? "" : std::string(kReplacement);
    pending_.clear();
    return out;
  }

 private:
  std::string pending_;
};

// ---------------------------------------------------------------------------------------------
// Reading the request.

[[noreturn]] void badKey(const std::string& key, const std::string& problem) {
  throw Error("request: \"" + key + "\" " + problem);
}

bool boolOf(const Value& v, const std::string& key) {
  if (!v.isBool()) badKey(key, "must be true or false");
  return v.boolean;
}

std::string stringOf(const Value& v, const std::string& key) {
  if (!v.isString()) badKey(key, std::string("must be a string, not ") + json::kindName(v.kind));
  return v.text;
}

// An integral JSON number in [lo, hi] (exactly: the literal is compared as a decimal).
uint64_t integerOf(const Value& v, const std::string& key, uint64_t lo, uint64_t hi) {
  const std::string range = "must be an integer from " + str(lo) + " to " + str(hi);
  if (!v.isNumber() || !json::isIntegral(v.text)) badKey(key, range);
  if (json::compareNumbers(v.text, str(lo)) < 0 || json::compareNumbers(v.text, str(hi)) > 0) badKey(key, range);
  // Integral and in range: the digits of the exact value, read without rounding.
  const json::Decimal d = json::decimal(v.text);
  uint64_t out = 0;
  for (char c : d.digits) out = out * 10 + static_cast<uint64_t>(c - '0');
  for (int64_t e = 0; e < d.exponent; ++e) out *= 10;
  return out;
}

// A finite real number, rounded to f32 once (as the engine's sampler export receives it).
float realOf(const Value& v, const std::string& key) {
  if (!v.isNumber()) badKey(key, "must be a number");
  const double d = std::strtod(v.text.c_str(), nullptr);
  if (!std::isfinite(static_cast<float>(d))) badKey(key, "is out of range");
  return static_cast<float>(d);
}

// The seed: an integer 0..2^64-1, as a number or as a string of digits.
uint64_t seedOf(const Value& v) {
  if (v.isString()) {
    const std::string& t = v.text;
    if (t.empty() || t.size() > 20 || t.find_first_not_of("0123456789") != std::string::npos)
      badKey("seed", "must be an integer from 0 to 18446744073709551615");
    return integerOf(Value::number(t), "seed", 0, UINT64_MAX);
  }
  return integerOf(v, "seed", 0, UINT64_MAX);
}

// An assistant turn's text as the prompt wants it: one leading space (the dummy prefix) and one
// trailing <|im_end|> dropped, so an envelope's "text" can be passed back as it is.
std::string assistantText(std::string text) {
  constexpr std::string_view kEnd = "<|im_end|>";
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  if (text.size() >= kEnd.size() && text.compare(text.size() - kEnd.size(), kEnd.size(), kEnd) == 0)
    text.erase(text.size() - kEnd.size());
  return text;
}

// ---------------------------------------------------------------------------------------------
// Writing the envelope.

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// An f32 that reads back as the same f32.
std::string f32Json(float v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

double Backend::nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------------------------
// SessionModel

SessionModel::SessionModel(Tokenizer tokenizer, uint32_t vocab, uint32_t maxSeqLen, bool hasContrastive,
                           bool hasConfidence)
    : tokenizer_(std::move(tokenizer)),
      vocab_(vocab),
      maxSeqLen_(maxSeqLen),
      hasContrastive_(hasContrastive),
      hasConfidence_(hasConfidence) {
  if (vocab_ < tokenizer_.size())
    throw Error("session: vocab " + str(vocab_) + " is smaller than the tokenizer's " +
                str(tokenizer_.size()) + " pieces");
  if (maxSeqLen_ == 0) throw Error("session: max_seq_len is 0");
  table_ = std::make_unique<TokenTable>(tokenizer_);  // refuses a tokenizer without markers or bytes
  std::fill(std::begin(byteIds_), std::end(byteIds_), UINT32_MAX);
  const TokenizerSpec& spec = tokenizer_.spec();
  for (uint32_t id = 0; id < spec.pieces.size(); ++id) {
    if (spec.pieces[id].type != PieceType::Byte) continue;
    const std::string b = tokenizer_.pieceBytes(id);
    if (b.size() == 1) byteIds_[static_cast<uint8_t>(b[0])] = id;
  }
  for (uint32_t b = 0; b < 256; ++b)
    if (byteIds_[b] == UINT32_MAX) throw Error("session: the tokenizer has no byte piece for byte " + str(b));
}

// ---------------------------------------------------------------------------------------------
// The request

Turn parseTurn(const Value& turn, const std::string& where) {
  if (!turn.isObject()) throw Error(where + ": expected an object, got " + json::kindName(turn.kind));
  for (const json::Member& m : turn.members)
    if (m.name != "role" && m.name != "content")
      throw Error(where + ": unknown key " + json::quoteReadable(m.name));
  const Value* role = turn.find("role");
  const Value* content = turn.find("content");
  if (!role || !role->isString()) throw Error(where + ": \"role\" must be \"user\", \"assistant\" or \"tool\"");
  if (!content) throw Error(where + ": \"content\" is missing");
  Turn out;
  if (role->text == "user" || role->text == "assistant") {
    if (!content->isString())
      throw Error(where + ": the " + role->text + "'s \"content\" must be a string, not " +
                  json::kindName(content->kind));
    out.role = role->text == "user" ? Turn::Role::User : Turn::Role::Assistant;
    out.text = out.role == Turn::Role::User ? content->text : assistantText(content->text);
  } else if (role->text == "tool") {
    out.role = Turn::Role::ToolResult;
    out.result = *content;
  } else {
    throw Error(where + ": \"role\" must be \"user\", \"assistant\" or \"tool\", not " +
                json::quoteReadable(role->text));
  }
  return out;
}

Request parseRequest(std::string_view requestJson) {
  json::ParseOptions options;
  options.source = "request JSON";
  return parseRequest(json::parse(requestJson, options));
}

Request parseRequest(const Value& v) {
  if (!v.isObject()) throw Error(std::string("request: expected an object, got ") + json::kindName(v.kind));
  Request r;
  bool hasTools = false;
  for (const json::Member& m : v.members) {
    const std::string& k = m.name;
    const Value& x = m.value;
    if (k == "tools") {
      hasTools = true;
      if (x.isString()) r.tools = parseTools(std::string_view(x.text));
      else if (x.isArray()) r.tools = parseTools(x);
      else badKey(k, "must be an array of tools or a string of tools JSON");
    } else if (k == "request") {
      r.request = stringOf(x, k);
    } else if (k == "system") {
      r.system = stringOf(x, k);
    } else if (k == "history") {
      if (!x.isArray()) badKey(k, "must be an array of turns");
      for (size_t i = 0; i < x.items.size(); ++i)
        r.history.push_back(parseTurn(x.items[i], "request: history turn " + str(i + 1)));
    } else if (k == "max_tokens") {
      r.maxTokens = static_cast<uint32_t>(integerOf(x, k, 1, kMaxTokensLimit));
    } else if (k == "constrain") {
      r.constrain = boolOf(x, k);
    } else if (k == "temperature") {
      r.sampling.temperature = realOf(x, k);
    } else if (k == "top_k") {
      r.sampling.topK = static_cast<uint32_t>(integerOf(x, k, 0, UINT32_MAX));
    } else if (k == "top_p") {
      r.sampling.topP = realOf(x, k);
    } else if (k == "min_p") {
      r.sampling.minP = realOf(x, k);
    } else if (k == "repeat_penalty") {
      r.sampling.repetitionPenalty = realOf(x, k);
    } else if (k == "repeat_window") {
      r.sampling.repetitionWindow = static_cast<uint32_t>(integerOf(x, k, 0, UINT32_MAX));
    } else if (k == "seed") {
      r.seed = seedOf(x);
    } else if (k == "use_heads") {
      r.useHeads = boolOf(x, k);
    } else if (k == "no_call_bias") {
      r.noCallBias = realOf(x, k);
      if (std::fabs(r.noCallBias) > kNoCallBiasLimit)
        badKey(k, "must be a number from -" + str(kNoCallBiasLimit) + " to " + str(kNoCallBiasLimit));
    } else if (k == "no_call_doubt") {
      r.noCallDoubt = realOf(x, k);
      if (!(r.noCallDoubt >= 0 && r.noCallDoubt <= kNoCallDoubtLimit))
        badKey(k, "must be a number from 0 to " + str(kNoCallDoubtLimit));
    } else if (k == "no_call_named") {
      r.noCallNamed = realOf(x, k);
      if (!(r.noCallNamed >= 0 && r.noCallNamed <= kNoCallNamedLimit))
        badKey(k, "must be a number from 0 to " + str(kNoCallNamedLimit));
    } else if (k == "span_strings") {
      r.spanStrings = boolOf(x, k);
    } else if (k == "steer_named") {
      r.steerNamed = boolOf(x, k);
    } else {
      throw Error("request: unknown key " + json::quoteReadable(k));
    }
  }
  if (!hasTools) throw Error("request: \"tools\" is missing");
  if (!r.request && r.history.empty()) throw Error("request: give \"request\" or a \"history\" of turns");
  return r;
}

// ---------------------------------------------------------------------------------------------
// The envelope

Envelope errorEnvelope(std::string message) {
  Envelope e;
  e.error = std::move(message);
  return e;
}

std::vector<std::string> nameWords(std::string_view text) {
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  std::vector<std::string> words;
  std::string run;
  auto endRun = [&] {
    if (run.size() >= 3) {
      if (run.back() == 's') run.pop_back();
      words.push_back(run);
    }
    run.clear();
  };
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '\0';
    if (!lower(c) && !upper(c)) {
      endRun();
      continue;
    }
    if (upper(c) && i > 0 && lower(text[i - 1])) endRun();  // camelCase: a new word
    run += upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

// Name words too common in tool names to tell tools apart (docs/toolcall.md §8.4), sorted: the
// verbs of a thousand APIs and the prefixes of service names. A request that says "set" names no
// tool by it.
constexpr std::string_view kToolVerbs[] = {
    "add",  "api",  "app",    "cancel", "check",   "create", "delete", "fetch", "find", "get",
    "list", "look", "lookup", "make",   "open",    "play",   "put",    "read",  "remove", "request",
    "run",  "save", "search", "send",   "set",     "show",   "start",  "stop",  "svc",   "tool",
    "turn", "update", "use"};

bool namesTool(std::string_view request, std::string_view toolName) {
  const std::vector<std::string> said = nameWords(request), named = nameWords(toolName);
  return std::any_of(named.begin(), named.end(), [&](const std::string& w) {
    return !std::binary_search(std::begin(kToolVerbs), std::end(kToolVerbs), w) &&
           std::binary_search(said.begin(), said.end(), w);
  });
}

// Calls as the envelope writes them: [{"name", "arguments"}], compact.
static std::string callsJson(const std::vector<FunctionCall>& calls) {
  std::string out = "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i) out += ',';
    out += "{\"name\":" + json::quote(calls[i].name) + ",\"arguments\":" + json::compact(calls[i].arguments) + "}";
  }
  return out + "]";
}

std::string envelopeJson(const Envelope& e) {
  std::string out = "{\"type\":\"" + std::string(e.type()) + "\"";
  out += ",\"success\":" + std::string(e.success ? "true" : "false");
  out += ",\"error\":" + (e.error.empty() ? std::string("null") : json::quote(e.error));
  out += ",\"function_calls\":" + callsJson(e.calls);
  out += ",\"reasoning\":" + json::quote(e.reasoning);
  out += ",\"text\":" + json::quote(e.text);
  out += ",\"confidence\":" + (e.confidence ? f32Json(*e.confidence) : std::string("null"));
  out += ",\"no_call_margin\":" + (e.noCallMargin ? f32Json(*e.noCallMargin) : std::string("null"));
  out += ",\"call_doubt\":" + (e.callDoubt ? f32Json(*e.callDoubt) : std::string("null"));
  out += ",\"calls_named\":" + (e.callsNamed ? std::string(*e.callsNamed ? "true" : "false") : std::string("null"));
  out += ",\"withdrawn_calls\":" + callsJson(e.withdrawnCalls);
  out += ",\"prompt_tokens\":" + str(e.promptTokens);
  out += ",\"pinned_tokens\":" + str(e.pinnedTokens);
  out += ",\"reused_prompt_tokens\":" + str(e.reusedPromptTokens);
  out += ",\"generated_tokens\":" + str(e.generatedTokens);
  out += ",\"forced_tokens\":" + str(e.forcedTokens);
  out += ",\"reply_ids\":[";
  for (size_t i = 0; i < e.replyIds.size(); ++i) out += (i ? "," : "") + str(e.replyIds[i]);
  out += "],\"tools_offered\":";
  if (e.toolsOffered) {
    out += '[';
    for (size_t i = 0; i < e.toolsOffered->size(); ++i) out += (i ? "," : "") + json::quote((*e.toolsOffered)[i]);
    out += ']';
  } else {
    out += "null";
  }
  out += ",\"time_to_first_token_ms\":" + fixed(e.timeToFirstTokenMs, 3);
  out += ",\"prefill_tps\":" + fixed(e.prefillTps, 1);
  out += ",\"decode_tps\":" + fixed(e.decodeTps, 1);
  out += ",\"constraint_ms\":" + fixed(e.constraintMs, 3);
  out += ",\"peak_memory_bytes\":" + str(e.peakMemoryBytes);
  return out + "}";
}

// ---------------------------------------------------------------------------------------------
// Ranking the tools

std::string toolJson(const Tool& tool) {
  const std::string array = toolsJson(std::vector<Tool>{tool});  // "[{...}]"
  return array.substr(1, array.size() - 2);
}

namespace {

// The contrastive head's embedding of [BOS] + encode(text) in a fresh session (at most max_seq_len
// positions: a longer text is cut there).
std::vector<float> embed(Backend& backend, const SessionModel& model, std::string_view text) {
  std::vector<uint32_t> ids{model.tokenizer().spec().bos_id};
  const std::vector<uint32_t> body = backend.encode(text, false);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.size() > model.maxSeqLen()) ids.resize(model.maxSeqLen());
  backend.reset(0);
  backend.headsBegin();
  backend.feed(ids, false);
  return backend.headOutput(HeadCode::Contrastive);
}

}  // namespace

std::vector<size_t> rankTools(Backend& backend, const SessionModel& model, std::string_view query,
                              const std::vector<Tool>& tools, size_t keep) {
  const std::vector<float> q = embed(backend, model, query);
  std::vector<float> score(tools.size());
  for (size_t t = 0; t < tools.size(); ++t) {
    const std::vector<float> e = embed(backend, model, toolJson(tools[t]));
    if (e.size() != q.size())
      throw Error("session: the contrastive head gave " + str(e.size()) + " values for tool " + str(t + 1) +
                  " and " + str(q.size()) + " for the request");
    float dot = 0;  // f32, in index order: the same bits in both engines
    for (size_t i = 0; i < e.size(); ++i) dot += e[i] * q[i];
    score[t] = dot;
  }
  std::vector<size_t> order(tools.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Highest score first; equal scores (and NaN, which compares false) keep the lower index first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
  order.resize(std::min(keep, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

// ---------------------------------------------------------------------------------------------
// One request, start to end.

struct Session::Run {
  const SessionModel& model;
  Backend& backend;
  const Request& req;
  std::optional<Prefix>& prefix;      // what the backend's snapshot holds (Session::prefix_)
  Envelope env;

  double start = 0;
  std::vector<Tool> offered;          // the tools of the prompt, the grammar and the reply check
  std::vector<Turn> turns;            // the conversation
  bool allowText = false;             // free text allowed: the last turn is a tool result
  std::vector<uint32_t> promptIds;
  std::unique_ptr<Grammar> grammar;   // with the constraint
  std::unique_ptr<Matcher> matcher;
  std::unique_ptr<Masker> masker;
  std::vector<uint32_t> tableMask, vocabMask;
  Utf8Stream stream;
  // Confidence: the sampled tokens inside the call block.
  bool inCall = false;
  double callLogprobSum = 0;
  uint32_t callLogprobCount = 0;
  float firstCallLogprob = 0;         // the first of them, left out of the call's doubt (§8.4)
  // The no-call decision (§8.4): the call block's text so far and which way the list went.
  enum class ListChoice : uint8_t { Open, Empty, Calls };
  ListChoice listChoice = ListChoice::Open;
  std::optional<double> margin;       // log P(empty) - log P(calls) where the list opened (env.noCallMargin)
  static constexpr size_t kCallTextKept = 512;
  std::string callText;               // the call block's first bytes (after <tool_call>)
  std::optional<std::string> steerTo; // the one offered tool the request names (steer_named)
  bool namesAnyTool = false;          // the request names an offered tool (the named credit, §8.4)
  std::vector<uint32_t> choiceMask, steerMask;

  Run(const SessionModel& m, Backend& b, const Request& r, std::optional<Prefix>& p)
      : model(m), backend(b), req(r), prefix(p) {}

  uint32_t markerId(Marker m) const { return model.table().markerId(m); }

  // The conversation and the budget, checked before anything runs: the conversation is rendered
  // with every tool (a chat marker spelled where it may not be is refused), and max_tokens must hold
  // the shortest reply (which does not depend on the tools ranking keeps).
  void checkRequest() {
    turns = req.history;
    if (req.request) {
      Turn t;
      t.text = *req.request;
      turns.push_back(std::move(t));
    }
    try {
      (void)renderPrompt(req.tools, turns, req.system);
      allowText = turns.back().role == Turn::Role::ToolResult;
      if (!req.constrain) return;
      const Grammar all(req.tools, grammarOptions(false));
      const uint32_t shortest = Matcher(all).minCompletion();
      if (req.maxTokens < shortest)
        throw Refusal("max_tokens " + str(req.maxTokens) + " is fewer than the " + str(shortest) +
                      " tokens the shortest reply needs");
    } catch (const Refusal&) {
      throw;
    } catch (const Error& e) {
      throw Refusal(e.what());
    }
  }

  // The user's request: the new turn, or else the conversation's last user turn.
  std::string userText() const {
    if (req.request) return *req.request;
    std::string text;
    for (const Turn& t : turns)
      if (t.role == Turn::Role::User) text = t.text;
    return text;
  }

  // The grammar's options: free text after a tool result; with `spans`, span strings from the user's
  // request (the budget check leaves them out: `[]`, the shortest reply, is there either way).
  GrammarOptions grammarOptions(bool spans) const {
    GrammarOptions options;
    options.allowText = allowText;
    if (spans && req.spanStrings) options.spanSource = userText();
    return options;
  }

  // With more than 5 tools and a contrastive head: the 5 that match the request best.
  void chooseTools() {
    offered = req.tools;
    if (!(req.useHeads && model.hasContrastive() && req.tools.size() > kRankedTools)) return;
    const std::vector<size_t> kept = rankTools(backend, model, userText(), req.tools, kRankedTools);
    offered.clear();
    env.toolsOffered.emplace();
    for (size_t i : kept) {
      offered.push_back(req.tools[i]);
      env.toolsOffered->push_back(req.tools[i].name);
    }
  }

  // The prompt's ids, refused when it cannot fit, and the grammar at the reply's start.
  void preparePrompt() {
    const std::string prompt = renderPrompt(offered, turns, req.system);
    promptIds = {model.tokenizer().spec().bos_id};
    const std::vector<uint32_t> body = backend.encode(prompt, false);
    promptIds.insert(promptIds.end(), body.begin(), body.end());
    const uint64_t n = promptIds.size(), context = model.maxSeqLen();
    env.promptTokens = static_cast<uint32_t>(n);
    if (n + 1 > context)
      throw Refusal("the prompt is " + str(n) + " tokens; this model's context holds " + str(context));
    env.pinnedTokens = sinkLength(promptIds, markerId(Marker::ToolsEnd));
    if (!req.constrain) return;
    grammar = std::make_unique<Grammar>(offered, grammarOptions(true));
    matcher = std::make_unique<Matcher>(*grammar);
    masker = std::make_unique<Masker>(model.table());
    tableMask.assign(model.table().maskWords(), 0);
    vocabMask.assign(maskWords(model.vocab()), 0);
    const uint32_t shortest = matcher->minCompletion();
    if (context - n < shortest)
      throw Refusal("the prompt is " + str(n) + " tokens; this model's context holds " + str(context) +
                    ", which leaves " + str(context - n) + " reply tokens, fewer than the " + str(shortest) +
                    " the shortest reply needs");
  }

  // Reply tokens that may still come: the caller's limit and the room left in the context.
  uint32_t tokensLeft() const {
    const uint32_t generated = static_cast<uint32_t>(env.replyIds.size());
    const uint32_t byLimit = req.maxTokens - generated;
    const uint32_t byContext = model.maxSeqLen() - env.promptTokens - generated;
    return std::min(byLimit, byContext);
  }

  // A reply token is known: record it, stream its text, track the call block for confidence.
  void append(uint32_t id, bool forced, float logprob) {
    if (env.replyIds.empty()) env.timeToFirstTokenMs = backend.nowMs() - start;
    env.replyIds.push_back(id);
    if (forced) ++env.forcedTokens;
    if (!forced && inCall) {
      if (callLogprobCount == 0) firstCallLogprob = logprob;
      callLogprobSum += static_cast<double>(logprob);
      ++callLogprobCount;
    }
    if (inCall && callText.size() < kCallTextKept) callText += model.tokenizer().pieceBytes(id);
    if (id == markerId(Marker::ToolCall)) inCall = true;
    if (id == markerId(Marker::ToolCallEnd)) inCall = false;
    const std::string delta = stream.push(model.tokenizer().pieceBytes(id));
    env.text += delta;
    backend.onText(delta, id, forced);
  }

  // Whether the symbols of `ids`, one after another, are exactly the bytes of `text`.
  static bool spells(const TokenTable& table, const std::vector<uint32_t>& ids, std::string_view text) {
    size_t at = 0;
    for (uint32_t id : ids) {
      if (id >= table.vocabSize()) return false;
      for (Symbol s : table.symbols(id)) {
        if (isMarker(s) || at >= text.size() || s != static_cast<uint8_t>(text[at])) return false;
        ++at;
      }
    }
    return at == text.size();
  }

  // The tokens of a forced fragment: whole UTF-8 characters through encode(raw), markers as their
  // ids, bytes of a cut character as byte pieces. A run whose encoding is not exactly its bytes (a
  // marker spelled inside a JSON string, which encode would read as the marker) is fed as bytes.
  std::vector<uint32_t> forcedTokens(const std::vector<Symbol>& symbols) {
    std::vector<uint32_t> out;
    const TokenTable& table = model.table();
    size_t i = 0;
    while (i < symbols.size()) {
      if (isMarker(symbols[i])) {
        out.push_back(markerId(static_cast<Marker>(symbols[i] - kFirstMarker)));
        ++i;
        continue;
      }
      std::string bytes;
      while (i < symbols.size() && !isMarker(symbols[i])) bytes += static_cast<char>(symbols[i++]);
      // Whole characters go to the tokenizer in runs; anything else byte by byte.
      size_t at = 0;
      while (at < bytes.size()) {
        size_t end = at;
        while (end < bytes.size()) {
          const Utf8Prefix p = utf8Prefix(bytes, end);
          if (p.kind != Utf8Prefix::Kind::Whole) break;
          end += p.length;
        }
        if (end > at) {
          const std::string_view run(bytes.data() + at, end - at);
          const std::vector<uint32_t> ids = backend.encode(run, true);
          if (spells(table, ids, run)) {
            out.insert(out.end(), ids.begin(), ids.end());
          } else {
            for (char c : run) out.push_back(model.byteId(static_cast<uint8_t>(c)));
          }
          at = end;
        } else {
          out.push_back(model.byteId(static_cast<uint8_t>(bytes[at])));
          ++at;
        }
      }
    }
    return out;
  }

  // Feeds the forced fragment at the matcher's state, but for its last token when that is text and
  // the fragment does not end the reply: the model was trained on whole-reply tokenizations, where
  // a fragment's last piece is often merged with what follows (`[{"`, `":{"`), so it is left to a
  // masked draw, which offers exactly the tokens that spell the whole rest of the fragment and may
  // go on past it (keepSpellingsOf). Returns Fed (something was fed), Ended (the reply is over) or
  // Nothing (a draw is next: the fragment is one text token).
  enum class Forced : uint8_t { Nothing, Fed, Ended };
  Forced feedForced(const std::vector<Symbol>& symbols, double constraintStart) {
    std::vector<uint32_t> ids = forcedTokens(symbols);
    if (!endsReply(ids) && !ids.empty() && !isMarkerId(ids.back())) ids.pop_back();
    if (ids.empty()) return Forced::Nothing;
    for (uint32_t id : ids)
      if (!model.table().accept(*matcher, id))
        throw Error("session: forced token " + str(id) + " is not accepted by the call grammar");
    if (ids.size() > tokensLeft())
      throw Error("session: a forced fragment of " + str(ids.size()) + " tokens exceeds the " +
                  str(tokensLeft()) + " left");
    env.constraintMs += backend.nowMs() - constraintStart;
    for (uint32_t id : ids) append(id, true, 0);
    const bool done = matcher->done() || tokensLeft() == 0;
    const size_t run = done ? ids.size() - 1 : ids.size();  // the reply's last token is never fed
    if (run) backend.feed(std::span<const uint32_t>(ids.data(), run), !done);
    return done ? Forced::Ended : Forced::Fed;
  }

  // Whether taking `ids` from the matcher's state finishes the reply.
  bool endsReply(const std::vector<uint32_t>& ids) const {
    Matcher probe = *matcher;
    for (uint32_t id : ids)
      if (!model.table().accept(probe, id)) return false;
    return probe.done();
  }
  bool isMarkerId(uint32_t id) const {
    const std::vector<Symbol>& symbols = model.table().symbols(id);
    return symbols.size() == 1 && isMarker(symbols[0]);
  }

  // The budget mask at the matcher's state, widened to the model's vocabulary; when `heldBack` is
  // not empty (feedForced left the fragment's one token to this draw), only the tokens that spell
  // all of it.
  const uint32_t* budgetMask(const std::vector<Symbol>& heldBack) {
    masker->budgetMask(*matcher, tokensLeft(), tableMask.data());
    std::copy(tableMask.begin(), tableMask.end(), vocabMask.begin());
    if (!heldBack.empty()) keepSpellingsOf(heldBack);
    return vocabMask.data();
  }

  // Clears from vocabMask the allowed tokens that spell only a strict prefix of `rest`, the one
  // possible continuation, when feedForced has left its one token to the draw (`":` where the
  // rest is `":"`): SentencePiece would rarely cut the reply there, so a model fed such a piece is
  // off its training distribution (measured: `"ticker":` then `":{}}]` as the value). The
  // held-back token itself passes; should the budget have removed every token that spells all of
  // `rest`, the mask is left as it was.
  void keepSpellingsOf(const std::vector<Symbol>& rest) {
    const TokenTable& table = model.table();
    bool any = false;
    std::vector<uint32_t> kept(vocabMask.size(), 0);
    for (uint32_t id = 0; id < table.vocabSize(); ++id) {
      if (!maskAllows(vocabMask.data(), id)) continue;
      const std::vector<Symbol>& s = table.symbols(id);
      if (s.size() < rest.size() || !std::equal(rest.begin(), rest.end(), s.begin())) continue;
      maskAllow(kept.data(), id);
      any = true;
    }
    if (any) vocabMask = std::move(kept);
  }

  // Whether drawing `id` after the call block's text so far closes the list empty (`[]`).
  bool closesEmpty(uint32_t id) const {
    std::string text = callText;
    for (Symbol s : model.table().symbols(id)) {
      if (text.size() >= 2 || isMarker(s)) break;
      text += static_cast<char>(s);
    }
    return text == "[]";
  }

  // log of the summed probabilities of `ids` (the backend's logprob: no mask, temperature 1).
  double logProbOf(const std::vector<uint32_t>& ids) {
    std::vector<double> lp;
    for (uint32_t id : ids) lp.push_back(static_cast<double>(backend.logprob(id)));
    const double best = *std::max_element(lp.begin(), lp.end());
    if (!std::isfinite(best)) return best;
    double sum = 0;
    for (double x : lp) sum += std::exp(x - best);
    return best + std::log(sum);
  }

  // The no-call decision (docs/toolcall.md §8.4): at a draw where the call list is still open (the
  // call block so far is "" or "[") and the mask allows both a token that closes it empty and one
  // that does not, the margin is log P(empty) - log P(calls), each side the summed probability of
  // its allowed tokens, and the list is empty when margin + bias > 0; the draw (and, after a lone
  // "[", the next one) then keeps only that side's tokens. Bias and doubt 0 leave the mask alone
  // (the plain draw of §8 step 7); the margin is kept in the envelope either way.
  const uint32_t* applyNoCallDecision(const uint32_t* mask) {
    if (!inCall || listChoice == ListChoice::Empty) return mask;
    if (!(callText.empty() || callText == "[")) return mask;
    std::vector<uint32_t> empty, calls;
    for (uint32_t id = 0; id < model.table().vocabSize(); ++id)
      if (maskAllows(mask, id)) (closesEmpty(id) ? empty : calls).push_back(id);
    if (empty.empty() || calls.empty()) return mask;  // no choice here (or none left by the budget)
    if (!margin) margin = logProbOf(empty) - logProbOf(calls);
    if (req.noCallBias == 0 && req.noCallDoubt == 0 && req.noCallNamed == 0) return mask;
    // Empty only where no call could be kept once written: the named credit is the most a call can
    // get, and none can get it when the request names no offered tool.
    if (listChoice == ListChoice::Open) {
      const double credit = namesAnyTool ? req.noCallNamed : 0.0;
      listChoice = *margin + req.noCallBias - credit > 0 ? ListChoice::Empty : ListChoice::Calls;
    }
    choiceMask.assign(maskWords(model.vocab()), 0);
    for (uint32_t id : listChoice == ListChoice::Empty ? empty : calls) maskAllow(choiceMask.data(), id);
    return choiceMask.data();
  }

  // The reply, token by token (docs/toolcall.md, "The session", step 7).
  void generate() {
    const uint32_t imEnd = markerId(Marker::ImEnd), eos = model.tokenizer().spec().eos_id;
    while (tokensLeft() > 0) {
      if (backend.stopRequested()) {
        env.stopped = true;
        break;
      }
      const uint32_t* mask = nullptr;
      if (matcher) {
        const double c0 = backend.nowMs();
        const std::vector<Symbol> forced = matcher->forcedSymbols();
        if (!forced.empty()) {
          const Forced fed = feedForced(forced, c0);
          if (fed == Forced::Ended) break;
          if (fed == Forced::Fed) continue;
        }
        // After a Nothing, `forced` is the held-back token's text: the draw must spell all of it.
        mask = applySteer(applyNoCallDecision(budgetMask(forced)));
        env.constraintMs += backend.nowMs() - c0;
      }
      const uint32_t id = backend.sample(mask);
      const float lp = backend.logprob(id);
      if (matcher) {
        const double c0 = backend.nowMs();
        if (!model.table().accept(*matcher, id))
          throw Error("session: the backend drew token " + str(id) + ", which the mask does not allow");
        env.constraintMs += backend.nowMs() - c0;
      }
      append(id, false, lp);
      const bool done = matcher ? matcher->done() : (id == imEnd || id == eos);
      if (done || tokensLeft() == 0) break;  // the reply's last token is never fed
      backend.feed(std::span<const uint32_t>(&id, 1), true);
    }
    const std::string tail = stream.finish();
    if (!tail.empty()) {
      env.text += tail;
      backend.onText(tail, UINT32_MAX, false);
    }
  }

  // A new reply session with the sink pinned, the sampler set and (when `pooled`) the heads pooling.
  void beginSession(bool pooled) {
    backend.reset(env.pinnedTokens);
    backend.setSampler(req.sampling, req.seed);
    if (pooled) backend.headsBegin();
  }

  // Steps 4-6 of docs/toolcall.md "The session": the sink, the pooling, and the prompt fed in one
  // prefill, except that the pinned prefix (BOS, system turn, tools through </tools>) is restored from
  // the backend's snapshot when it holds exactly these ids (same tools, system turn and pooling), and
  // otherwise saved there on the way for the next request.
  void prefill(bool pooled) {
    beginSession(pooled);
    const std::span<const uint32_t> all(promptIds);
    const uint32_t sink = env.pinnedTokens;
    if (!backend.hasSnapshots() || sink >= all.size()) {  // (a prompt always goes on after </tools>)
      backend.feed(all, true);
      return;
    }
    const std::span<const uint32_t> pinned = all.first(sink), rest = all.subspan(sink);
    if (prefix && prefix->pooled == pooled && std::equal(pinned.begin(), pinned.end(), prefix->ids.begin(),
                                                          prefix->ids.end())) {
      if (backend.snapshotRestore(pinned)) {
        env.reusedPromptTokens = sink;
        backend.feed(rest, true);
        return;
      }
      beginSession(pooled);  // no such snapshot after all: start again from an empty session
    }
    prefix.reset();
    backend.feed(pinned, false);
    if (backend.snapshotSave()) prefix = Prefix{std::vector<uint32_t>(pinned.begin(), pinned.end()), pooled};
    backend.feed(rest, true);
  }

  // steer_named (§8.4): while the first call's name is drawn, only the tokens that keep it the named
  // tool's (`steerTo`); a token that does not reach into the name (the no-call side) is left alone.
  const uint32_t* applySteer(const uint32_t* mask) {
    static const std::string kOpen = "[{\"name\":\"";
    if (!mask || !steerTo || !inCall || callText.size() >= kCallTextKept) return mask;
    const std::string want = *steerTo + "\"";  // the name and its closing quote (no escapes: findNamedTools)
    if (callText.size() < kOpen.size()) {
      if (kOpen.compare(0, callText.size(), callText) != 0) return mask;
    } else {
      const std::string_view drawn = std::string_view(callText).substr(kOpen.size());
      if (callText.compare(0, kOpen.size(), kOpen) != 0 || drawn.size() >= want.size() ||
          want.compare(0, drawn.size(), drawn) != 0)
        return mask;  // not the first call's name, or it is written already
    }
    std::vector<uint32_t> steered(maskWords(model.vocab()), 0);
    bool any = false;
    for (uint32_t id = 0; id < model.table().vocabSize(); ++id) {
      if (!maskAllows(mask, id)) continue;
      const std::string text = callText + model.tokenizer().pieceBytes(id);
      if (text.size() > kOpen.size() && text.compare(0, kOpen.size(), kOpen) == 0) {
        const std::string_view name = std::string_view(text).substr(kOpen.size(), want.size());
        if (want.compare(0, name.size(), name) != 0) continue;
      }
      maskAllow(steered.data(), id);
      any = true;
    }
    if (!any) return mask;
    steerMask = std::move(steered);
    return steerMask.data();
  }

  // The named credit and steer (§8.4), once the tools are chosen: whether the user's request names
  // an offered tool, and with steer_named the one it names, when only one and its name needs no JSON
  // escape (printable ASCII without '"' and '\\').
  void findNamedTools() {
    const std::string request = userText();
    std::vector<std::string> named;
    for (const Tool& t : offered)
      if (namesTool(request, t.name)) named.push_back(t.name);
    namesAnyTool = !named.empty();
    if (!req.steerNamed || named.size() != 1) return;
    for (unsigned char c : named[0])
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return;
    steerTo = named[0];
  }

  // The no-call decision's envelope fields and its second half (§8.4), once the reply is read: the
  // margin; whether the request names every called tool; once the calls side was chosen, the calls'
  // doubt, minus the mean log-prob of the call block's drawn tokens after its first (the draw that
  // opens the list, where the decision is made whenever the tokenizer has pieces that close it empty
  // at once). With no_call_doubt or no_call_named the calls are withdrawn (the list counts as empty)
  // when margin + bias + no_call_doubt x doubt - no_call_named x [named] > 0.
  void weighCalls() {
    if (!env.calls.empty()) {
      const std::string request = userText();
      env.callsNamed = std::all_of(env.calls.begin(), env.calls.end(),
                                   [&](const FunctionCall& c) { return namesTool(request, c.name); });
    }
    if (!margin) return;
    env.noCallMargin = static_cast<float>(*margin);
    if (listChoice != ListChoice::Calls) return;
    const uint32_t after = callLogprobCount > 0 ? callLogprobCount - 1 : 0;
    const double doubt = after ? -(callLogprobSum - static_cast<double>(firstCallLogprob)) / after : 0.0;
    env.callDoubt = static_cast<float>(doubt);
    if ((req.noCallDoubt == 0 && req.noCallNamed == 0) || env.calls.empty()) return;
    const double credit = *env.callsNamed ? req.noCallNamed : 0.0;
    if (*margin + req.noCallBias + req.noCallDoubt * doubt - credit > 0) {
      env.withdrawnCalls = std::move(env.calls);
      env.calls.clear();
    }
  }

  // docs/toolcall.md, "Confidence": min(sigmoid(head logit), exp(mean logprob of the sampled call
  // tokens)), in f32.
  void confidence() {
    const std::vector<float> out = backend.headOutput(HeadCode::Confidence);
    if (out.empty()) throw Error("session: the confidence head gave no value");
    const float head = 1.0f / (1.0f + expf32(-out[0]));
    const float call = callLogprobCount
                           ? expf32(static_cast<float>(callLogprobSum / static_cast<double>(callLogprobCount)))
                           : 1.0f;
    env.confidence = std::min(head, call);
  }

  Envelope go() {
    start = backend.nowMs();
    checkRequest();
    chooseTools();
    findNamedTools();
    try {
      preparePrompt();
    } catch (const Refusal&) {
      throw;
    } catch (const Error& e) {
      throw Refusal(e.what());
    }
    const bool pooled = req.useHeads && model.hasConfidence();
    const double prefillStart = backend.nowMs();
    prefill(pooled);
    const double prefillEnd = backend.nowMs();
    generate();
    const double end = backend.nowMs();

    const Reply reply = parseReply(env.text, offered, allowText);
    env.calls = reply.calls;
    weighCalls();
    env.reasoning = reply.reasoning;
    env.generatedTokens = static_cast<uint32_t>(env.replyIds.size());
    env.error = reply.error;
    if (env.stopped && !env.error.empty())
      env.error = "stopped after " + str(env.generatedTokens) + " tokens: " + env.error;
    env.success = env.error.empty();
    if (pooled) confidence();
    const double prefillMs = prefillEnd - prefillStart, decodeMs = end - prefillEnd;
    const uint32_t prefilled = env.promptTokens - env.reusedPromptTokens;
    env.prefillTps = prefillMs > 0 ? prefilled * 1000.0 / prefillMs : 0;
    env.decodeTps = decodeMs > 0 ? env.generatedTokens * 1000.0 / decodeMs : 0;
    env.peakMemoryBytes = backend.memoryBytes();
    return env;
  }
};

Envelope Session::complete(Backend& backend, const Request& request) {
  Run run(model_, backend, request, prefix_);
  return run.go();
}

}  // namespace needle::toolcall
