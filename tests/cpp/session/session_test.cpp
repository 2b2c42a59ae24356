// The session's behaviour on micro.cact with the Reference as the backend: refusals before any step
// (with the backend untouched and working after), the exact budget at the end of the context, Stop,
// the pinned tools, the contrastive ranking and the confidence recomputed independently, plain
// sampling, a conversation with a tool result; the request reader and the envelope writer.
#include <cmath>
#include <numeric>
#include <optional>

#include "fixture.hpp"
#include "heads.hpp"
#include "mathf.hpp"
#include "reference.hpp"
#include "sampler.hpp"
#include "toolcall/prompt.hpp"

using namespace session_test;

namespace {

// Counts what reaches the model: resets (with their sinks) and fed positions.
struct CountingBackend : RecordingBackend {
  using RecordingBackend::RecordingBackend;
  void reset(uint32_t sink) override {
    sinks.push_back(sink);
    RecordingBackend::reset(sink);
  }
  void feed(std::span<const uint32_t> ids, bool wantLogits) override {
    fed += ids.size();
    RecordingBackend::feed(ids, wantLogits);
  }
  std::vector<uint32_t> sinks;
  size_t fed = 0;
};

tc::Request request(const std::string& text, uint64_t seed = 0, float temperature = 0) {
  tc::Request r;
  r.tools = tc::parseTools(std::string_view(kTools));
  r.request = text;
  r.seed = seed;
  r.sampling.temperature = temperature;
  return r;
}

// The prompt ids the session must build for `r` with `tools`.
std::vector<uint32_t> expectedPrompt(const Loaded& l, const tc::Request& r, const std::vector<tc::Tool>& tools) {
  std::vector<tc::Turn> turns = r.history;
  if (r.request) {
    tc::Turn t;
    t.text = *r.request;
    turns.push_back(t);
  }
  return tc::promptIds(l.session->tokenizer(), tc::renderPrompt(tools, turns, r.system));
}

// A request text whose prompt is exactly `target` tokens, or "" if none of the tried fillers gives it.
std::string requestOfLength(const Loaded& l, size_t target) {
  for (const char* filler : {" a", " b", " word"}) {
    for (size_t k = 1; k < 4000; ++k) {
      std::string text = "go";
      for (size_t i = 0; i < k; ++i) text += filler;
      const size_t n = expectedPrompt(l, request(text), tc::parseTools(std::string_view(kTools))).size();
      if (n == target) return text;
      if (n > target) break;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("refusals come before any step and say what is wrong and leave the backend working", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  const tc::Envelope fresh = session.complete(backend, request("What's the weather in Paris?", 3, 1));
  REQUIRE(fresh.success);

  auto refused = [&](const tc::Request& r) -> std::string {
    backend.sinks.clear();
    backend.fed = 0;
    try {
      (void)session.complete(backend, r);
    } catch (const tc::Refusal& e) {
      CHECK(backend.sinks.empty());  // no reset
      CHECK(backend.fed == 0);       // no step
      return e.what();
    }
    FAIL("not refused");
    return "";
  };

  SECTION("a prompt longer than the context: both lengths") {
    std::string text = "weather";
    for (int i = 0; i < 3000; ++i) text += " in Paris";
    const size_t n = expectedPrompt(l, request(text), request("").tools).size();
    REQUIRE(n > 2048);
    REQUIRE(refused(request(text)) ==
            "the prompt is " + std::to_string(n) + " tokens; this model's context holds 2048");
  }
  SECTION("a prompt that fills the context: no position left") {
    const std::string text = requestOfLength(l, 2048);
    REQUIRE(!text.empty());
    REQUIRE(refused(request(text)) == "the prompt is 2048 tokens; this model's context holds 2048");
  }
  SECTION("room for fewer tokens than the shortest reply") {
    const std::string text = requestOfLength(l, 2045);
    REQUIRE(!text.empty());
    REQUIRE(refused(request(text)) ==
            "the prompt is 2045 tokens; this model's context holds 2048, which leaves 3 reply tokens, fewer "
            "than the 5 the shortest reply needs");
  }
  SECTION("max_tokens below the shortest reply") {
    tc::Request r = request("hi");
    r.maxTokens = 4;
    REQUIRE(refused(r) == "max_tokens 4 is fewer than the 5 tokens the shortest reply needs");
  }
  SECTION("max_tokens below the shortest reply, with tools to rank: refused before the ranking") {
    Rng rng{5};
    tc::Request r;
    r.tools = tc::parseTools(std::string_view(randomToolsJson(rng, 7, 8)));
    REQUIRE(r.tools.size() > 5);
    r.request = "hi";
    r.maxTokens = 2;
    REQUIRE(refused(r) == "max_tokens 2 is fewer than the 5 tokens the shortest reply needs");
  }
  SECTION("a chat marker spelled in the request") {
    REQUIRE(refused(request("hi <|im_end|> there")) ==
            "prompt: turn 1 (user) spells the chat marker <|im_end|>, which would be read as the marker itself");
  }
  // After any refusal the same backend gives what a fresh one gives.
  const tc::Envelope again = session.complete(backend, request("What's the weather in Paris?", 3, 1));
  REQUIRE(outcome(again) == outcome(fresh));
}

TEST_CASE("a prompt with room for exactly the shortest reply gets it", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  const std::string text = requestOfLength(l, 2043);  // 5 positions left
  REQUIRE(!text.empty());
  for (uint64_t seed = 0; seed < 4; ++seed) {
    tc::Request r = request(text, seed, 1);
    backend.clear();
    const tc::Envelope env = session.complete(backend, r);
    checkConstrainedReply(l, r, env, backend.streamed);
    REQUIRE(env.promptTokens == 2043);
    REQUIRE(env.generatedTokens <= 5);
    REQUIRE(env.text == "<tool_call>[]</tool_call><|im_end|>");  // no room for the space, a thought or a call
  }
}

TEST_CASE("the tools are pinned: positions 0 through </tools> are the sink that is longer than the window", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  tc::Request r = request("Set a timer for ten minutes", 11, 1);
  const tc::Envelope env = session.complete(backend, r);
  checkConstrainedReply(l, r, env, backend.streamed);
  const std::vector<uint32_t> ids = expectedPrompt(l, r, r.tools);
  REQUIRE(env.promptTokens == ids.size());
  const uint32_t toolsEnd = l.session->table().markerId(tc::Marker::ToolsEnd);
  REQUIRE(ids[env.pinnedTokens - 1] == toolsEnd);
  REQUIRE(std::count(ids.begin(), ids.begin() + env.pinnedTokens, toolsEnd) == 1);
  REQUIRE(env.pinnedTokens > l.model.geo.kv_window);  // the tools alone exceed micro's 64-position window
  REQUIRE(backend.sinks == std::vector<uint32_t>{env.pinnedTokens});
  // Every position fed: the prompt, then every reply token but the last.
  REQUIRE(backend.fed == env.promptTokens + env.generatedTokens - 1);
}

TEST_CASE("Stop ends the reply after the current token and the next request is unaffected", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  // The first seed whose reply is long enough to be stopped in the middle.
  tc::Request r;
  tc::Envelope full;
  for (uint64_t seed = 0; seed < 20 && full.generatedTokens <= 20; ++seed) {
    r = request("What's the weather in Paris?", seed, 1);
    full = session.complete(backend, r);
  }
  REQUIRE(full.generatedTokens > 20);

  backend.clear();
  backend.stop = [&] { return backend.forced.size() >= 9; };
  const tc::Envelope stopped = session.complete(backend, r);
  backend.stop = nullptr;
  REQUIRE(stopped.stopped);
  REQUIRE(!stopped.success);
  REQUIRE(stopped.error.rfind("stopped after " + std::to_string(stopped.generatedTokens) + " tokens: ", 0) == 0);
  REQUIRE(stopped.generatedTokens >= 9);
  REQUIRE(stopped.generatedTokens < full.generatedTokens);
  REQUIRE(backend.streamed == stopped.text);
  // The stopped reply is the start of the full one: the same draws up to the stop.
  REQUIRE(std::equal(stopped.replyIds.begin(), stopped.replyIds.end(), full.replyIds.begin()));

  backend.clear();
  REQUIRE(outcome(session.complete(backend, r)) == outcome(full));
}

TEST_CASE("more than 5 tools: the contrastive head keeps the 5 best (recomputed here)", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  Rng rng{99};
  const std::string text = eightNamedToolsJson(rng);
  tc::Request r;
  r.tools = tc::parseTools(std::string_view(text));
  r.request = "Play some jazz in the kitchen";
  const tc::Envelope env = session.complete(backend, r);
  checkConstrainedReply(l, r, env, backend.streamed);
  REQUIRE(env.toolsOffered);
  REQUIRE(env.toolsOffered->size() == 5);
  REQUIRE(backend.sinks.size() == 1 + 8 + 1);  // the request, each tool, the reply session

  // The ranking, independently: each text through a fresh Reference with head pooling.
  const needle::Tokenizer& tok = l.session->tokenizer();
  size_t contrastive = 0;
  while (l.model.heads[contrastive].kind != needle::HeadKind::Contrastive) ++contrastive;
  auto embed = [&](const std::string& s) {
    needle::ReferenceOptions o;
    o.a8 = true;
    needle::Reference ref(l.model, o);
    needle::HeadPooling pooling(l.model.heads, l.model.geo.d_model);
    ref.setHeads(&pooling);
    ref.step(tok.spec().bos_id, false);
    for (uint32_t id : tok.encode(s)) ref.step(id, false);
    return pooling.output(contrastive);
  };
  const std::vector<float> q = embed(*r.request);
  std::vector<std::pair<float, size_t>> scored;
  for (size_t t = 0; t < r.tools.size(); ++t) {
    const std::vector<float> e = embed(tc::toolJson(r.tools[t]));
    float dot = 0;
    for (size_t i = 0; i < e.size(); ++i) dot += e[i] * q[i];
    scored.push_back({dot, t});
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<size_t> kept;
  for (size_t i = 0; i < 5; ++i) kept.push_back(scored[i].second);
  std::sort(kept.begin(), kept.end());
  std::vector<std::string> expected;
  std::vector<tc::Tool> tools;
  for (size_t i : kept) {
    expected.push_back(r.tools[i].name);
    tools.push_back(r.tools[i]);
  }
  REQUIRE(*env.toolsOffered == expected);
  // Only those went into the prompt.
  REQUIRE(env.promptTokens == expectedPrompt(l, r, tools).size());

  // use_heads off: every tool, no ranking, no confidence.
  r.useHeads = false;
  backend.clear();
  const tc::Envelope all = session.complete(backend, r);
  REQUIRE(!all.toolsOffered);
  REQUIRE(!all.confidence);
  REQUIRE(all.promptTokens == expectedPrompt(l, r, r.tools).size());
}

namespace {

// The reply session run again by hand (the Reference with the envelope's sink; with `pooling`, the
// heads pooling from position 0): the log-probs of the reply's drawn (not `forced`) tokens inside the
// call block, in order.
std::vector<double> drawnCallLogprobs(const Loaded& l, const tc::Request& r, const tc::Envelope& env,
                                      const std::vector<bool>& forced, needle::HeadPooling* pooling = nullptr) {
  needle::ReferenceOptions o;
  o.a8 = true;
  o.sink = env.pinnedTokens;
  needle::Reference ref(l.model, o);
  if (pooling) ref.setHeads(pooling);
  const std::vector<uint32_t> prompt = expectedPrompt(l, r, r.tools);
  std::vector<float> logits;
  for (size_t i = 0; i < prompt.size(); ++i) logits = ref.step(prompt[i], i + 1 == prompt.size());
  const uint32_t open = l.session->table().markerId(tc::Marker::ToolCall);
  const uint32_t close = l.session->table().markerId(tc::Marker::ToolCallEnd);
  bool inCall = false;
  std::vector<double> out;
  for (size_t i = 0; i < env.replyIds.size(); ++i) {
    const uint32_t id = env.replyIds[i];
    if (inCall && !forced[i]) out.push_back(needle::logprob(logits, id));
    if (id == open) inCall = true;
    if (id == close) inCall = false;
    if (i + 1 < env.replyIds.size()) logits = ref.step(id, true);
  }
  return out;
}

}  // namespace

TEST_CASE("confidence is the lesser of the head's sigmoid and the mean call-token probability (recomputed here)", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  size_t checked = 0, withCall = 0;
  for (uint64_t seed = 0; seed < 60 && withCall < 3; ++seed) {
    tc::Request r = request("What's the weather in Paris?", seed, 1);
    r.maxTokens = 48;
    backend.clear();
    const tc::Envelope env = session.complete(backend, r);
    checkConstrainedReply(l, r, env, backend.streamed);
    REQUIRE(env.confidence);
    REQUIRE(backend.forced.size() == env.replyIds.size());

    // The reply session again, by hand, pooling from position 0.
    needle::HeadPooling pooling(l.model.heads, l.model.geo.d_model);
    const std::vector<double> drawn = drawnCallLogprobs(l, r, env, backend.forced, &pooling);
    const double sum = std::accumulate(drawn.begin(), drawn.end(), 0.0);
    const size_t count = drawn.size();
    size_t confidenceHead = 0;
    while (l.model.heads[confidenceHead].kind != needle::HeadKind::Confidence) ++confidenceHead;
    const float logit = pooling.output(confidenceHead)[0];
    const float head = 1.0f / (1.0f + needle::expf32(-logit));
    const float call = count ? needle::expf32(static_cast<float>(sum / count)) : 1.0f;
    REQUIRE(*env.confidence == std::min(head, call));
    withCall += count > 0;
    ++checked;
  }
  REQUIRE(withCall == 3);  // replies whose call tokens were sampled, not only forced
}

namespace {

// Records, at every draw, the reply's text so far and the mask it was drawn from; never draws
// <think> (micro's random weights think until the budget closes the list, leaving no choice).
struct DrawRecordingBackend : RecordingBackend {
  DrawRecordingBackend(const Loaded& l)
      : RecordingBackend(l), vocab(l.session->vocab()), think(l.session->table().markerId(tc::Marker::Think)) {}
  struct Draw {
    std::string textBefore;
    std::vector<uint32_t> mask;
  };
  uint32_t sample(const uint32_t* mask) override {
    draws.push_back({streamed, std::vector<uint32_t>(mask, mask + needle::maskWords(vocab))});
    std::vector<uint32_t> noThink = draws.back().mask;
    noThink[think >> 5] &= ~(1u << (think & 31));
    return RecordingBackend::sample(noThink.data());
  }
  uint32_t vocab, think;
  std::vector<Draw> draws;
};

// log P(empty list) - log P(calls) at the first draw where the call list is open and the mask
// allows both, worked out here from the token pieces and the Reference's logits; nullopt if the
// reply had no such draw.
std::optional<double> emptyMinusCalls(const Loaded& l, const tc::Request& r, const tc::Envelope& env,
                                      const DrawRecordingBackend& backend) {
  const std::vector<uint32_t> prompt = expectedPrompt(l, r, r.tools);
  needle::ReferenceOptions o;
  o.a8 = true;
  o.sink = env.pinnedTokens;
  size_t drawn = 0;  // draws seen so far, walking the reply
  const std::string open = "<tool_call>";
  for (size_t i = 0; i < env.replyIds.size() && drawn < backend.draws.size(); ++i) {
    if (backend.forced[i]) continue;
    const auto& d = backend.draws[drawn++];
    const size_t at = d.textBefore.rfind(open);
    if (at == std::string::npos) continue;
    const std::string tail = d.textBefore.substr(at + open.size());
    if (tail != "" && tail != "[") continue;
    std::vector<uint32_t> empty, calls;
    for (uint32_t id = 0; id < l.session->table().vocabSize(); ++id) {
      if (!needle::maskAllows(d.mask.data(), id)) continue;
      const std::string text = tail + l.session->tokenizer().pieceBytes(id);
      (text.rfind("[]", 0) == 0 ? empty : calls).push_back(id);
    }
    if (empty.empty() || calls.empty()) continue;
    // The logits at this draw: the prompt and the reply's tokens before it, run again.
    needle::Reference ref(l.model, o);
    std::vector<float> logits;
    for (size_t k = 0; k < prompt.size(); ++k) logits = ref.step(prompt[k], k + 1 == prompt.size());
    for (size_t k = 0; k < i; ++k) logits = ref.step(env.replyIds[k], true);
    auto logSum = [&](const std::vector<uint32_t>& ids) {
      double s = 0;
      for (uint32_t id : ids) s += std::exp(static_cast<double>(needle::logprob(logits, id)));
      return std::log(s);
    };
    return logSum(empty) - logSum(calls);
  }
  return std::nullopt;
}

// The requests the no-call tests ask of micro.
const char* const kDecisionRequests[] = {"What's the weather in Paris?", "set a timer for 5 minutes", "hello there"};

// `r`'s reply with no bias (checked, the backend's draws recorded) and the margin worked out for it.
std::pair<tc::Envelope, double> plainReply(const Loaded& l, tc::Session& session, DrawRecordingBackend& backend,
                                           const tc::Request& r) {
  backend.clear();
  backend.draws.clear();
  const tc::Envelope plain = session.complete(backend, r);
  checkConstrainedReply(l, r, plain, backend.streamed);
  const std::optional<double> margin = emptyMinusCalls(l, r, plain, backend);
  REQUIRE(margin);
  return {plain, *margin};
}

}  // namespace

TEST_CASE("the no-call bias decides the list where it opens, at the log-odds worked out here", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  DrawRecordingBackend backend(l);
  size_t decided = 0;
  for (const char* text : kDecisionRequests) {
    tc::Request r = request(text);
    const auto [plain, margin] = plainReply(l, session, backend, r);
    // Just past the threshold either way: log P(empty) + bias against log P(calls).
    for (const double step : {-0.01, 0.01}) {
      r.noCallBias = static_cast<float>(-margin + step);
      backend.clear();
      const tc::Envelope env = session.complete(backend, r);
      checkConstrainedReply(l, r, env, backend.streamed);
      INFO(text << ": margin " << margin << ", bias " << r.noCallBias << ": " << env.text);
      REQUIRE(env.calls.empty() == (step > 0));
      ++decided;
    }
    // Far out: the decision is the bias's alone; a temperature does not change it.
    for (const float bias : {-100.0f, 100.0f}) {
      r.noCallBias = bias;
      r.sampling.temperature = 1;
      r.seed = 7;
      backend.clear();
      const tc::Envelope env = session.complete(backend, r);
      checkConstrainedReply(l, r, env, backend.streamed);
      REQUIRE(env.calls.empty() == (bias > 0));
      r.sampling.temperature = 0;
    }
    // Bias 0 is no bias at all: the same reply as a request without it.
    r.noCallBias = 0;
    backend.clear();
    REQUIRE(outcome(session.complete(backend, r)) == outcome(plain));
  }
  REQUIRE(decided == 6);
}

namespace {

// Minus the mean log-prob of the reply's drawn call tokens after the first (the one the no-call
// decision drew), worked out here with the Reference; nullopt when there are none.
std::optional<double> callDoubt(const Loaded& l, const tc::Request& r, const tc::Envelope& env,
                                const RecordingBackend& backend) {
  const std::vector<double> drawn = drawnCallLogprobs(l, r, env, backend.forced);
  if (drawn.size() < 2) return std::nullopt;
  return -std::accumulate(drawn.begin() + 1, drawn.end(), 0.0) / static_cast<double>(drawn.size() - 1);
}

// Calls as the envelope writes them.
std::string callsJson(const std::vector<tc::FunctionCall>& calls) {
  tc::Envelope e;
  e.calls = calls;
  return tc::envelopeJson(e);
}

}  // namespace

TEST_CASE("the no-call doubt withdraws a call past the threshold worked out here", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  DrawRecordingBackend backend(l);
  size_t weighed = 0;
  for (const char* text : kDecisionRequests) {
    tc::Request r = request(text);
    const auto [plain, margin] = plainReply(l, session, backend, r);
    // The margin is in the envelope with no bias too; no decision was made, so no doubt.
    REQUIRE(plain.noCallMargin);
    REQUIRE(std::fabs(*plain.noCallMargin - margin) <= 1e-4 * std::max(1.0, std::fabs(margin)));
    REQUIRE(!plain.callDoubt);
    // A bias that leaves the list to the calls by 0.5 nats: the call and its doubt.
    r.noCallBias = static_cast<float>(-margin - 0.5);
    backend.clear();
    const tc::Envelope called = session.complete(backend, r);
    checkConstrainedReply(l, r, called, backend.streamed);
    REQUIRE(!called.calls.empty());
    REQUIRE(called.withdrawnCalls.empty());
    const std::optional<double> doubt = callDoubt(l, r, called, backend);
    if (!doubt || *doubt < 0.01) continue;  // every call token after the decision forced: no doubt to weigh
    REQUIRE(called.callDoubt);
    REQUIRE(std::fabs(*called.callDoubt - *doubt) <= 1e-4 * std::max(1.0, *doubt));
    // Just past the threshold either way: margin + bias + weight x doubt against 0.
    const double bias = static_cast<double>(r.noCallBias);
    for (const double step : {-0.01, 0.01}) {
      r.noCallDoubt = static_cast<float>((-margin - bias + step) / *doubt);
      backend.clear();
      const tc::Envelope env = session.complete(backend, r);
      INFO(text << ": margin " << margin << ", doubt " << *doubt << ", weight " << r.noCallDoubt);
      REQUIRE(env.text == called.text);  // the reply is drawn alike; only the reading differs
      REQUIRE(env.calls.empty() == (step > 0));
      REQUIRE(callsJson(env.calls.empty() ? env.withdrawnCalls : env.calls) == callsJson(called.calls));
      REQUIRE(env.withdrawnCalls.empty() == (step < 0));
      REQUIRE(std::string(env.type()) == (step > 0 ? "respond" : "call"));
    }
    r.noCallDoubt = 0;
    ++weighed;
  }
  REQUIRE(weighed >= 1);
}

TEST_CASE("name words: letter runs of three or more, camelCase split, lower case, no final s; tool verbs name nothing", "[session]") {
  using W = std::vector<std::string>;
  CHECK(tc::nameWords("getStockPrice") == W{"get", "price", "stock"});
  CHECK(tc::nameWords("track_packages") == W{"package", "track"});
  CHECK(tc::nameWords("hotels.find") == W{"find", "hotel"});
  CHECK(tc::nameWords("HTTPServer v2") == W{"httpserver"});
  CHECK(tc::nameWords("a to be, OK?") == W{});
  CHECK(tc::nameWords("Bl\xC3\xB6ugpod's Bus") == W{"bu", "ugpod"});  // the bytes of ö are no letters
  CHECK(tc::nameWords("") == W{});
  CHECK(tc::namesTool("show the RUSF stock price", "get_stock_price"));
  CHECK(tc::namesTool("Find me HOTELS in Lyon", "hotel.search"));
  CHECK(!tc::namesTool("Where is my parcel?", "track_package"));
  CHECK(!tc::namesTool("set it", "set_timer"));  // "set" is a tool verb: it names no tool
  CHECK(tc::namesTool("Search the web", "searchWeb"));  // "web" is shared, "search" is a tool verb
  CHECK(!tc::namesTool("Play something", "music.play"));
}

TEST_CASE("the named credit keeps a named call the bias and doubt would withdraw, and only a named one", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  DrawRecordingBackend backend(l);
  const std::vector<tc::Tool> tools = request("").tools;
  size_t named = 0, unnamed = 0, unnameable = 0;
  for (const char* text : {"What's the weather in Paris?", "set a timer for 5 minutes", "hello there",
                           "Weather in Oslo or a timer", "Timer!", "weather?"}) {
    tc::Request r = request(text);
    const auto [plain, margin] = plainReply(l, session, backend, r);
    // The calls drawn with the list forced open: what every request below writes when it opens.
    r.noCallBias = -100;
    backend.clear();
    const tc::Envelope called = session.complete(backend, r);
    REQUIRE(!called.calls.empty());
    REQUIRE(called.callsNamed);
    const bool names = std::all_of(called.calls.begin(), called.calls.end(),
                                   [&](const tc::FunctionCall& c) { return tc::namesTool(text, c.name); });
    REQUIRE(*called.callsNamed == names);
    const bool nameable = std::any_of(tools.begin(), tools.end(),
                                      [&](const tc::Tool& t) { return tc::namesTool(text, t.name); });
    // A bias that closes the list by 0.3 nats at the draw; a credit of 0.3 + step opens it there
    // (margin + bias - credit <= 0) when the request names an offered tool, and then keeps the calls
    // only when the request names them.
    r.noCallBias = static_cast<float>(-margin + 0.3);
    for (const double step : {-0.01, 0.01}) {
      r.noCallNamed = static_cast<float>(0.3 + step);
      backend.clear();
      const tc::Envelope env = session.complete(backend, r);
      checkConstrainedReply(l, r, env, backend.streamed);
      INFO(text << ": margin " << margin << ", bias " << r.noCallBias << ", credit " << r.noCallNamed);
      if (step < 0 || !nameable) {  // no call could be kept: the list is closed where it opens
        REQUIRE(env.calls.empty());
        REQUIRE(env.withdrawnCalls.empty());
        REQUIRE(env.text != called.text);
        continue;
      }
      REQUIRE(env.text == called.text);
      REQUIRE(env.calls.empty() == !names);
      REQUIRE(callsJson(names ? env.calls : env.withdrawnCalls) == callsJson(called.calls));
    }
    ++(!nameable ? unnameable : names ? named : unnamed);
  }
  INFO("named " << named << ", unnamed " << unnamed << ", unnameable " << unnameable);
  REQUIRE(named >= 1);
  REQUIRE(unnamed >= 1);  // written with a named tool offered, then withdrawn
  REQUIRE(unnameable >= 1);
}

TEST_CASE("steer_named: the first call's name is the one tool the request names, and nothing else changes", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  auto firstCall = [](const tc::Envelope& e) {
    const auto& calls = e.calls.empty() ? e.withdrawnCalls : e.calls;
    return calls.empty() ? std::string() : calls[0].name;
  };
  size_t steered = 0, changed = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    // "weather" names get_weather alone: every first call is get_weather with the steer.
    tc::Request r = request("What's the weather in Paris?", seed, 1.0f);
    r.noCallBias = -100;  // a call every time
    backend.clear();
    const tc::Envelope free = session.complete(backend, r);
    r.steerNamed = true;
    backend.clear();
    const tc::Envelope env = session.complete(backend, r);
    checkConstrainedReply(l, r, env, backend.streamed);
    INFO("seed " << seed << ": " << env.text);
    REQUIRE(env.success);
    if (!firstCall(env).empty()) {  // (micro may think until the budget leaves only `[]`)
      REQUIRE(firstCall(env) == "get_weather");
      REQUIRE(env.callsNamed);
      ++steered;
      changed += firstCall(free) == "set_timer";
    }
    // A request that names both tools, or neither: the steer leaves the reply as it is.
    for (const char* text : {"weather and timer", "hello there"}) {
      tc::Request other = request(text, seed, 1.0f);
      other.noCallBias = -100;
      backend.clear();
      const tc::Envelope plain = session.complete(backend, other);
      other.steerNamed = true;
      backend.clear();
      REQUIRE(outcome(session.complete(backend, other)) == outcome(plain));
    }
  }
  REQUIRE(steered >= 5);
  REQUIRE(changed >= 1);  // without the steer micro's random weights choose set_timer too
}

TEST_CASE("span strings: every free string of a call is a span of the request", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  // micro's random weights write junk strings; with span_strings each one is a span of the request
  // (of the last user turn when the request comes as a history), and without it some are not.
  size_t strings = 0, outside = 0;
  for (const bool spans : {true, false}) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const std::string text = seed % 2 ? "What's the weather in Paris, France?" : "Is it raining in \xC3\x89vora today?";
      tc::Request r = request(text, seed, 1.0f);
      r.noCallBias = -100;  // a call every time
      r.spanStrings = spans;
      if (seed % 3 == 0) {  // the same user turn, as history
        tc::Turn t;
        t.text = text;
        r.history = {t};
        r.request.reset();
      }
      backend.clear();
      const tc::Envelope env = session.complete(backend, r);
      checkConstrainedReply(l, r, env, backend.streamed);
      const std::vector<std::string> allowed = tc::requestSpans(text);
      for (const tc::FunctionCall& call : env.calls) {
        if (call.name != "get_weather") continue;
        const needle::json::Value* location = call.arguments.find("location");
        REQUIRE(location);
        const bool span = std::find(allowed.begin(), allowed.end(), location->text) != allowed.end();
        INFO("seed " << seed << ": " << env.text);
        if (spans) {
          REQUIRE(span);
          ++strings;
        } else {
          outside += !span;
        }
      }
    }
  }
  REQUIRE(strings >= 4);
  REQUIRE(outside >= 1);
}

TEST_CASE("constrain off: plain sampling with the same draws as a loop over the Reference", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  for (uint64_t seed : {1ull, 2ull, 12345678901234567ull}) {
    tc::Request r = request("Set a timer", seed, 0.8f);
    r.constrain = false;
    r.maxTokens = 40;
    r.sampling.topK = 50;
    backend.clear();
    const tc::Envelope env = session.complete(backend, r);
    REQUIRE(env.forcedTokens == 0);
    REQUIRE(backend.streamed == env.text);

    needle::ReferenceOptions o;
    o.a8 = true;
    o.sink = env.pinnedTokens;
    needle::Reference ref(l.model, o);
    needle::Sampler sampler(l.model.geo.vocab, r.sampling, seed);
    std::vector<uint32_t> history = expectedPrompt(l, r, r.tools);
    std::vector<float> logits;
    for (size_t i = 0; i < history.size(); ++i) logits = ref.step(history[i], i + 1 == history.size());
    std::vector<uint32_t> reply;
    const uint32_t imEnd = l.session->table().markerId(tc::Marker::ImEnd);
    while (reply.size() < r.maxTokens) {
      const uint32_t id = sampler.sample(logits, history, nullptr);
      reply.push_back(id);
      if (id == imEnd || id == l.session->tokenizer().spec().eos_id || reply.size() == r.maxTokens) break;
      logits = ref.step(id, true);
      history.push_back(id);
    }
    REQUIRE(env.replyIds == reply);
    // Read back by the same parser: random text is not a call.
    REQUIRE(!env.success);
    REQUIRE(!env.error.empty());
  }
}

TEST_CASE("a conversation with a tool result: every turn in the prompt and text or a call allowed", "[session]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  const std::string history =
      R"([{"role":"user","content":"What's the weather in Paris?"},)"
      R"({"role":"assistant","content":" <tool_call>[{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}}]</tool_call><|im_end|>"},)"
      R"({"role":"tool","content":[{"name":"get_weather","result":{"temperature_c":18,"sky":"clear"}}]}])";
  const tc::Request r = tc::parseRequest(R"({"tools":)" + kTools + R"(,"history":)" + history + R"(,"temperature":1,"seed":4})");
  REQUIRE(!r.request);
  REQUIRE(r.history.size() == 3);
  REQUIRE(r.history[1].text == R"(<tool_call>[{"name":"get_weather","arguments":{"location":"Paris"}}]</tool_call>)");
  size_t texts = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    tc::Request rs = r;
    rs.seed = seed;
    backend.clear();
    const tc::Envelope env = session.complete(backend, rs);
    checkConstrainedReply(l, rs, env, backend.streamed);
    REQUIRE(env.promptTokens == expectedPrompt(l, rs, rs.tools).size());
    texts += env.text.find("<tool_call>") == std::string::npos;
  }
  REQUIRE(texts > 0);  // free text is allowed after a tool result, and the model takes it
}

TEST_CASE("the request JSON: every key and refusals that name the key", "[session]") {
  const tc::Request r = tc::parseRequest(
      R"({"tools":"[{\"name\":\"a\"}]","request":"hi","system":"date: today","max_tokens":12,"constrain":false,)"
      R"("temperature":0.7,"top_k":40,"top_p":0.9,"min_p":0.05,"repeat_penalty":1.1,"repeat_window":64,)"
      R"("seed":"18446744073709551615","use_heads":false,"no_call_bias":-1.5,"no_call_doubt":0.75,)"
      R"("no_call_named":6,"span_strings":true,"steer_named":true})");
  REQUIRE(r.tools.size() == 1);
  REQUIRE(r.tools[0].name == "a");
  REQUIRE(*r.request == "hi");
  REQUIRE(r.system == "date: today");
  REQUIRE(r.maxTokens == 12);
  REQUIRE(!r.constrain);
  REQUIRE(r.sampling.temperature == 0.7f);
  REQUIRE(r.sampling.topK == 40);
  REQUIRE(r.sampling.topP == 0.9f);
  REQUIRE(r.sampling.minP == 0.05f);
  REQUIRE(r.sampling.repetitionPenalty == 1.1f);
  REQUIRE(r.sampling.repetitionWindow == 64);
  REQUIRE(r.seed == 18446744073709551615ull);
  REQUIRE(!r.useHeads);
  REQUIRE(r.noCallBias == -1.5f);
  REQUIRE(r.noCallDoubt == 0.75f);
  REQUIRE(r.noCallNamed == 6.0f);
  REQUIRE(r.steerNamed);
  REQUIRE(r.spanStrings);
  REQUIRE(tc::parseRequest(R"({"tools":[],"request":""})").noCallBias == 0);
  REQUIRE(tc::parseRequest(R"({"tools":[],"request":""})").noCallDoubt == 0);
  REQUIRE(tc::parseRequest(R"({"tools":[],"request":""})").noCallNamed == 0);
  REQUIRE(!tc::parseRequest(R"({"tools":[],"request":""})").steerNamed);
  REQUIRE(!tc::parseRequest(R"({"tools":[],"request":""})").spanStrings);
  REQUIRE(tc::parseRequest(R"({"tools":[],"request":"","seed":12345678901234567890})").seed == 12345678901234567890ull);
  REQUIRE(tc::parseRequest(R"({"tools":[],"request":"","seed":1e3})").seed == 1000);

  auto error = [](const std::string& json) -> std::string {
    try {
      (void)tc::parseRequest(json);
    } catch (const needle::Error& e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK(error(R"({"tools":[],"request":"x","temprature":1})") == "request: unknown key \"temprature\"");
  CHECK(error(R"({"request":"x"})") == "request: \"tools\" is missing");
  CHECK(error(R"({"tools":[]})") == "request: give \"request\" or a \"history\" of turns");
  CHECK(error(R"({"tools":[],"request":"x","max_tokens":0})") ==
        "request: \"max_tokens\" must be an integer from 1 to 1048576");
  CHECK(error(R"({"tools":[],"request":"x","max_tokens":2.5})") ==
        "request: \"max_tokens\" must be an integer from 1 to 1048576");
  CHECK(error(R"({"tools":[],"request":"x","seed":18446744073709551616})") ==
        "request: \"seed\" must be an integer from 0 to 18446744073709551615");
  CHECK(error(R"({"tools":[],"request":"x","seed":-1})") ==
        "request: \"seed\" must be an integer from 0 to 18446744073709551615");
  CHECK(error(R"({"tools":[],"request":"x","temperature":"hot"})") == "request: \"temperature\" must be a number");
  CHECK(error(R"({"tools":[],"request":"x","constrain":1})") == "request: \"constrain\" must be true or false");
  CHECK(error(R"({"tools":[],"request":"x","no_call_bias":"more"})") == "request: \"no_call_bias\" must be a number");
  CHECK(error(R"({"tools":[],"request":"x","span_strings":"yes"})") == "request: \"span_strings\" must be true or false");
  CHECK(error(R"({"tools":[],"request":"x","steer_named":1})") == "request: \"steer_named\" must be true or false");
  CHECK(error(R"({"tools":[],"request":"x","no_call_bias":100.5})") ==
        "request: \"no_call_bias\" must be a number from -100 to 100");
  for (const char* doubt : {"-0.5", "100.5"})
    CHECK(error(R"({"tools":[],"request":"x","no_call_doubt":)" + std::string(doubt) + "}") ==
          "request: \"no_call_doubt\" must be a number from 0 to 100");
  CHECK(error(R"({"tools":[],"request":"x","no_call_doubt":null})") == "request: \"no_call_doubt\" must be a number");
  for (const char* named : {"-1", "101"})
    CHECK(error(R"({"tools":[],"request":"x","no_call_named":)" + std::string(named) + "}") ==
          "request: \"no_call_named\" must be a number from 0 to 100");
  CHECK(error(R"({"tools":{},"request":"x"})") ==
        "request: \"tools\" must be an array of tools or a string of tools JSON");
  CHECK(error(R"({"tools":"[{\"name\":\"a\",\n\"parameters\":{]","request":"x"})") ==
        "tools JSON at line 2, column 15: expected a member name in double quotes");
  CHECK(error(R"({"tools":[{"name":"t","parameters":{"type":"object","properties":{"p":{"type":"string","pattern":"x"}}}}],"request":"x"})") ==
        "tool \"t\" parameter \"p\": \"pattern\" is not supported");
  CHECK(error(R"({"tools":[],"history":[{"role":"bot","content":"x"}]})") ==
        "request: history turn 1: \"role\" must be \"user\", \"assistant\" or \"tool\", not \"bot\"");
  CHECK(error(R"({"tools":[],"history":[{"role":"user","content":3}]})") ==
        "request: history turn 1: the user's \"content\" must be a string, not a number");
  CHECK(error(R"({"tools":[],"history":[{"role":"user"}]})") == "request: history turn 1: \"content\" is missing");
  CHECK(error(R"({"tools":[],"request":"x",})") == "request JSON at line 1, column 27: expected a member name in double quotes");
}

TEST_CASE("the envelope JSON: keys in order and null where absent", "[session]") {
  tc::Envelope e;
  e.success = true;
  tc::FunctionCall c;
  c.name = "get_weather";
  c.arguments = needle::json::parse(R"({"location":"K\u00f6ln"})");
  e.calls.push_back(c);
  e.reasoning = "r";
  e.text = " <tool_call>[]";
  e.confidence = 0.25f;
  e.noCallMargin = -2.5f;
  e.callDoubt = 0.125f;
  e.callsNamed = false;
  e.withdrawnCalls.push_back(c);
  e.promptTokens = 100;
  e.pinnedTokens = 80;
  e.reusedPromptTokens = 80;
  e.generatedTokens = 3;
  e.forcedTokens = 1;
  e.replyIds = {7, 8, 9};
  e.toolsOffered = std::vector<std::string>{"a", "b"};
  e.timeToFirstTokenMs = 1.5;
  e.prefillTps = 1000.04;
  e.decodeTps = 99.96;
  e.constraintMs = 0.0004;
  e.peakMemoryBytes = 123456789;
  REQUIRE(tc::envelopeJson(e) ==
          R"({"type":"call","success":true,"error":null,"function_calls":[{"name":"get_weather","arguments":{"location":"K\u00f6ln"}}],)"
          R"("reasoning":"r","text":" <tool_call>[]","confidence":0.25,"no_call_margin":-2.5,"call_doubt":0.125,)"
          R"("calls_named":false,"withdrawn_calls":[{"name":"get_weather","arguments":{"location":"K\u00f6ln"}}],)"
          R"("prompt_tokens":100,"pinned_tokens":80,"reused_prompt_tokens":80,)"
          R"("generated_tokens":3,"forced_tokens":1,"reply_ids":[7,8,9],"tools_offered":["a","b"],)"
          R"("time_to_first_token_ms":1.500,"prefill_tps":1000.0,"decode_tps":100.0,"constraint_ms":0.000,)"
          R"("peak_memory_bytes":123456789})");
  REQUIRE(tc::envelopeJson(tc::errorEnvelope("tool \"t\": \"name\" is empty")) ==
          R"({"type":"respond","success":false,"error":"tool \"t\": \"name\" is empty","function_calls":[],)"
          R"("reasoning":"","text":"","confidence":null,"no_call_margin":null,"call_doubt":null,"calls_named":null,)"
          R"("withdrawn_calls":[],)"
          R"("prompt_tokens":0,"pinned_tokens":0,"reused_prompt_tokens":0,"generated_tokens":0,)"
          R"("forced_tokens":0,"reply_ids":[],"tools_offered":null,"time_to_first_token_ms":0.000,"prefill_tps":0.0,)"
          R"("decode_tps":0.0,"constraint_ms":0.000,"peak_memory_bytes":0})");
}
