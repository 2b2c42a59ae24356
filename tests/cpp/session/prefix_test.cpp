// Reusing the tools prefix (docs/toolcall.md, "Reusing the tools prefix"): a session that restores the
// backend's snapshot of BOS + system turn + tools gives, bit for bit, what a fresh session gives
// (reply ids, calls, confidence, the last logits); a change of tools, system turn, pooling or model
// prefills whole again; a conversation's later turns and a ranking with more than 5 tools keep it.
#include "fixture.hpp"

using namespace session_test;

namespace {

// Counts the positions fed and the snapshot calls.
struct CountingBackend : RecordingBackend {
  using RecordingBackend::RecordingBackend;
  void feed(std::span<const uint32_t> ids, bool wantLogits) override {
    fed += ids.size();
    RecordingBackend::feed(ids, wantLogits);
  }
  bool snapshotSave() override {
    ++saves;
    return RecordingBackend::snapshotSave();
  }
  bool snapshotRestore(std::span<const uint32_t> prefix) override {
    ++restores;
    return RecordingBackend::snapshotRestore(prefix);
  }
  size_t fed = 0, saves = 0, restores = 0;
};

tc::Request request(const std::string& json) { return tc::parseRequest(json); }

// The request run by a fresh session on a fresh backend: its envelope and its last kept logits.
std::pair<tc::Envelope, std::vector<float>> fresh(const Loaded& l, const tc::Request& r) {
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  tc::Envelope env = session.complete(backend, r);
  REQUIRE(env.reusedPromptTokens == 0);
  return {env, backend.logits()};
}

std::string withTools(const std::string& rest) { return R"({"tools":)" + kTools + "," + rest + "}"; }

}  // namespace

TEST_CASE("a restored prefix gives what a fresh session gives, bit for bit", "[session][prefix]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  const std::vector<std::string> requests = {
      withTools(R"("request":"What's the weather in Paris?","temperature":1,"seed":3)"),
      withTools(R"("request":"Set a timer for 5 minutes","temperature":1,"seed":77,"max_tokens":40)"),
      withTools(R"("request":"timer","temperature":0.7,"top_k":20,"seed":9,"repeat_penalty":1.3,"repeat_window":0)"),
      withTools(R"("request":"hello","constrain":false,"max_tokens":24,"temperature":1,"seed":1)"),
      withTools(R"("request":"What's the weather in Paris?","temperature":1,"seed":3)"),
  };
  size_t withConfidence = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    INFO(requests[i]);
    const tc::Request r = request(requests[i]);
    backend.fed = 0;
    const tc::Envelope env = session.complete(backend, r);
    const auto [want, wantLogits] = fresh(l, r);
    REQUIRE(outcome(env) == outcome(want));
    REQUIRE(backend.logits() == wantLogits);  // the logits after the reply's last fed token
    if (env.confidence) {
      REQUIRE(*env.confidence == *want.confidence);  // the pooling restored with the prefix
      ++withConfidence;
    }
    if (i == 0) {
      REQUIRE(env.reusedPromptTokens == 0);
      REQUIRE(backend.fed == env.promptTokens + env.generatedTokens - 1);
    } else {
      REQUIRE(env.reusedPromptTokens == env.pinnedTokens);
      REQUIRE(backend.fed == env.promptTokens - env.pinnedTokens + env.generatedTokens - 1);
    }
  }
  REQUIRE(withConfidence == requests.size());
  REQUIRE(backend.saves == 1);
  REQUIRE(backend.restores == requests.size() - 1);
}

TEST_CASE("the prefix is saved again when the tools, the system turn, the pooling or the model change", "[session][prefix]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  const std::string other =
      R"([{"name":"get_weather","description":"Current weather in a city","parameters":{"type":"object","properties":)"
      R"({"location":{"type":"string"}},"required":["location"]}}])";
  struct Step {
    std::string json;
    bool reused;
  };
  const std::vector<Step> steps = {
      {withTools(R"("request":"weather?","seed":1,"temperature":1)"), false},
      {withTools(R"("request":"a timer","seed":2,"temperature":1)"), true},
      {R"({"tools":)" + other + R"(,"request":"weather?","seed":1,"temperature":1})", false},  // tools
      {R"({"tools":)" + other + R"(,"request":"weather?","seed":5,"temperature":1})", true},
      {R"({"tools":)" + other + R"(,"system":"today is Monday","request":"weather?","seed":1})", false},  // system
      {R"({"tools":)" + other + R"(,"system":"today is Monday","request":"now?","seed":1})", true},
      {R"({"tools":)" + other + R"(,"system":"today is Tuesday","request":"now?","seed":1})", false},
      {R"({"tools":)" + other + R"(,"system":"today is Tuesday","request":"now?","use_heads":false})", false},  // pooling
      {R"({"tools":)" + other + R"(,"system":"today is Tuesday","request":"then?","use_heads":false})", true},
      {R"({"tools":)" + other + R"(,"system":"today is Tuesday","request":"then?"})", false},
  };
  for (const Step& s : steps) {
    INFO(s.json);
    const tc::Request r = request(s.json);
    const tc::Envelope env = session.complete(backend, r);
    REQUIRE(outcome(env) == outcome(fresh(l, r).first));
    REQUIRE(env.reusedPromptTokens == (s.reused ? env.pinnedTokens : 0));
  }
  // Another session (as for another model: the C API makes one per model handle) knows of no prefix,
  // though the backend still holds one: it prefills whole.
  tc::Session other2(*l.session);
  const tc::Request last = request(steps.back().json);
  REQUIRE(other2.complete(backend, last).reusedPromptTokens == 0);
  REQUIRE(other2.complete(backend, last).reusedPromptTokens > 0);
  // forgetPrefix: the next request saves anew.
  other2.forgetPrefix();
  REQUIRE(other2.complete(backend, last).reusedPromptTokens == 0);
}

TEST_CASE("the backend restores only a snapshot of exactly the prefix it is asked for", "[session][prefix]") {
  const Loaded& l = micro();
  tc::Session a(*l.session), b(*l.session);
  CountingBackend backend(l);
  const tc::Request first = request(withTools(R"("request":"weather?","seed":1,"temperature":1)"));
  const tc::Request second = request(R"({"tools":[{"name":"get_time"}],"request":"time?","seed":1,"temperature":1})");
  REQUIRE(a.complete(backend, first).reusedPromptTokens == 0);   // a saves first's prefix
  REQUIRE(b.complete(backend, second).reusedPromptTokens == 0);  // b saves second's: a's is gone
  // a still expects first's prefix; the backend holds second's, refuses, and a prefills whole.
  const size_t restores = backend.restores;
  const tc::Envelope env = a.complete(backend, first);
  REQUIRE(backend.restores == restores + 1);
  REQUIRE(env.reusedPromptTokens == 0);
  REQUIRE(outcome(env) == outcome(fresh(l, first).first));
  REQUIRE(a.complete(backend, first).reusedPromptTokens == env.pinnedTokens);
}

TEST_CASE("a conversation's later turns reuse the tools prefix of its first request", "[session][prefix]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend backend(l);
  const tc::Envelope first =
      session.complete(backend, request(withTools(R"("request":"What's the weather in Paris?","seed":4,"temperature":1)")));
  REQUIRE(first.reusedPromptTokens == 0);
  const std::string history =
      R"([{"role":"user","content":"What's the weather in Paris?"},)"
      R"({"role":"assistant","content":" <tool_call>[{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}}]</tool_call><|im_end|>"},)"
      R"({"role":"tool","content":[{"name":"get_weather","result":{"temperature_c":18}}]}])";
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const tc::Request r = request(withTools(R"("history":)" + history + R"(,"temperature":1,"seed":)" + std::to_string(seed)));
    backend.clear();
    const tc::Envelope env = session.complete(backend, r);
    checkConstrainedReply(l, r, env, backend.streamed);
    REQUIRE(env.reusedPromptTokens == first.pinnedTokens);
    REQUIRE(outcome(env) == outcome(fresh(l, r).first));
  }
}

TEST_CASE("with more than 5 tools the ranking sessions leave the snapshot as it is", "[session][prefix]") {
  const Loaded& l = micro();
  tc::Session session(*l.session);
  CountingBackend backend(l);
  Rng rng{99};
  const std::string text = eightNamedToolsJson(rng);
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const tc::Request r =
        request(R"({"tools":)" + text + R"(,"request":"Play some jazz in the kitchen","temperature":1,"seed":)" +
                std::to_string(seed) + "}");
    const tc::Envelope env = session.complete(backend, r);
    REQUIRE(env.toolsOffered);
    REQUIRE(env.reusedPromptTokens == (seed == 0 ? 0 : env.pinnedTokens));
    REQUIRE(outcome(env) == outcome(fresh(l, r).first));
  }
  REQUIRE(backend.saves == 1);
}
