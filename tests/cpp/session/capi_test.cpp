// The C API (host/toolcall/capi.h): callbacks over the Reference give the envelope the C++ session
// gives (sampling by the backend, or here on the backend's logits; the caller's tokenizer or the
// handle's), refusals and callback failures come back as statuses with their messages, and
// libneedle_toolcall.so (what Python loads with ctypes) exports exactly this interface and works.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "fixture.hpp"
#include "json.hpp"
#include "toolcall/capi.h"

using namespace session_test;

namespace {

// The session tools with a bound on the location (maxLength 20), which the C API tests exercise.
const std::string kBoundedTools =
    R"([{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":)"
    R"({"location":{"type":"string","maxLength":20},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}},)"
    R"({"name":"set_timer","description":"Start a timer","parameters":{"type":"object","properties":)"
    R"({"minutes":{"type":"integer","minimum":1,"maximum":120}},"required":["minutes"]}}])";

// The C side's state: the Reference behind the callbacks, and what the test wants to observe.
struct Host {
  explicit Host(const Loaded& l) : native(l) {}
  RecordingBackend native;
  std::string streamed;
  int resets = 0;
  int failFeed = 0;  // nonzero: feed returns -failFeed
};

Host& host(void* user) { return *static_cast<Host*>(user); }

// Each callback catches everything: nothing may unwind through the C interface.
int32_t cbEncode(void* user, const char* utf8, uint32_t bytes, int32_t withPrefix, uint32_t* out, uint32_t cap) {
  try {
    const std::vector<uint32_t> ids = host(user).native.encode(std::string_view(utf8, bytes), withPrefix == 0);
    for (size_t i = 0; i < ids.size() && i < cap; ++i) out[i] = ids[i];
    return static_cast<int32_t>(ids.size());
  } catch (...) {
    return -24;
  }
}
int32_t cbReset(void* user, uint32_t sink) {
  ++host(user).resets;
  host(user).native.reset(sink);
  return 0;
}
int32_t cbFeed(void* user, const uint32_t* ids, uint32_t n, int32_t wantLogits) {
  if (host(user).failFeed) return -host(user).failFeed;
  try {
    host(user).native.feed(std::span<const uint32_t>(ids, n), wantLogits != 0);
    return 0;
  } catch (...) {
    return -23;
  }
}
int32_t cbSetSampler(void* user, const needle_tc_sampling* s) {
  needle::SamplerOptions o;
  o.temperature = s->temperature;
  o.topK = s->top_k;
  o.topP = s->top_p;
  o.minP = s->min_p;
  o.repetitionPenalty = s->repetition_penalty;
  o.repetitionWindow = s->repetition_window;
  host(user).native.setSampler(o, (static_cast<uint64_t>(s->seed_hi) << 32) | s->seed_lo);
  return 0;
}
int32_t cbSample(void* user, const uint32_t* mask) {
  try {
    return static_cast<int32_t>(host(user).native.sample(mask));
  } catch (...) {
    return -28;
  }
}
float cbLogprob(void* user, uint32_t token) { return host(user).native.logprob(token); }
const float* cbLogits(void* user) { return host(user).native.logits().data(); }
int32_t cbHeadsBegin(void* user) {
  host(user).native.headsBegin();
  return 0;
}
int32_t cbHeadOutput(void* user, int32_t code, float* out, uint32_t cap) {
  try {
    const std::vector<float> v = host(user).native.headOutput(static_cast<tc::HeadCode>(code));
    for (size_t i = 0; i < v.size() && i < cap; ++i) out[i] = v[i];
    return static_cast<int32_t>(v.size());
  } catch (...) {
    return -29;
  }
}
int32_t cbSave(void* user) { return host(user).native.snapshotSave() ? 0 : -31; }
int32_t cbRestore(void* user, const uint32_t* prefix, uint32_t n) {
  return host(user).native.snapshotRestore(std::span<const uint32_t>(prefix, n)) ? static_cast<int32_t>(n) : -32;
}
void cbOnText(void* user, const char* utf8, uint32_t bytes, uint32_t, int32_t) {
  host(user).streamed.append(utf8, bytes);
}

needle_tc_backend callbacks(Host& h) {
  needle_tc_backend b{};
  b.user = &h;
  b.encode = cbEncode;
  b.reset = cbReset;
  b.feed = cbFeed;
  b.set_sampler = cbSetSampler;
  b.sample = cbSample;
  b.logprob = cbLogprob;
  b.heads_begin = cbHeadsBegin;
  b.head_output = cbHeadOutput;
  b.on_text = cbOnText;
  return b;
}

// An envelope's deterministic part: the JSON without the timings and the memory (and without
// reused_prompt_tokens unless asked: a C++ session reuses its backend's prefix, needle_tc_complete none).
std::string outcome(const std::string& envelope, bool keepReused = false) {
  needle::json::Value v = needle::json::parse(envelope);
  std::vector<needle::json::Member> kept;
  for (const needle::json::Member& m : v.members)
    if (m.name != "time_to_first_token_ms" && m.name != "prefill_tps" && m.name != "decode_tps" &&
        m.name != "constraint_ms" && m.name != "peak_memory_bytes" && (keepReused || m.name != "reused_prompt_tokens"))
      kept.push_back(m);
  v.members = kept;
  return needle::json::compact(v);
}

// Takes ownership of a char* from the C API.
std::string take(char* text) {
  REQUIRE(text != nullptr);
  std::string out(text);
  needle_tc_free(text);
  return out;
}

// The C API's pointers, from the static library or from the shared one.
struct Api {
  decltype(&needle_tc_model_new) modelNew = needle_tc_model_new;
  decltype(&needle_tc_model_free) modelFree = needle_tc_model_free;
  decltype(&needle_tc_complete) complete = needle_tc_complete;
  decltype(&needle_tc_check_tools) checkTools = needle_tc_check_tools;
  decltype(&needle_tc_free) free = needle_tc_free;
};

needle_tc_model* modelOf(const Api& api, const Loaded& l) {
  char* error = nullptr;
  needle_tc_model* m = api.modelNew(l.model.tokenizer.data(), static_cast<uint32_t>(l.model.tokenizer.size()),
                                    l.model.geo.vocab, l.model.geo.max_seq_len,
                                    NEEDLE_TC_HEAD_CONTRASTIVE | NEEDLE_TC_HEAD_CONFIDENCE, &error);
  if (error) FAIL(error);
  REQUIRE(m != nullptr);
  return m;
}

// needle_tc_complete of `json`; its status goes to *status.
std::string complete(const Api& api, needle_tc_model* m, const std::string& json, const needle_tc_backend& b,
                     int32_t* status) {
  char* envelope = nullptr;
  *status = api.complete(m, json.c_str(), &b, &envelope);
  REQUIRE(envelope != nullptr);
  std::string out(envelope);
  api.free(envelope);
  return out;
}

const std::vector<std::string>& requests() {
  static const std::vector<std::string> r = {
      R"({"tools":)" + kBoundedTools + R"(,"request":"What's the weather in Paris?","temperature":1,"seed":3})",
      R"({"tools":)" + kBoundedTools + R"(,"request":"Set a timer for 5 minutes","temperature":1,"seed":"77","max_tokens":40})",
      R"({"tools":)" + kBoundedTools + R"(,"request":"timer","system":"date: 2026-11-30","temperature":0.7,"top_k":20,"seed":9,"repeat_penalty":1.3})",
      R"({"tools":)" + kBoundedTools + R"(,"request":"hello","constrain":false,"max_tokens":24,"temperature":1,"seed":1})",
  };
  return r;
}

}  // namespace

TEST_CASE("C API: the envelope equals the C++ session's whoever samples and tokenizes", "[session][capi]") {
  const Loaded& l = micro();
  const Api api;
  needle_tc_model* m = modelOf(api, l);
  tc::Session session(*l.session);
  RecordingBackend native(l);
  size_t variantsChecked = 0;
  for (const std::string& json : requests()) {
    INFO(json);
    native.clear();
    const std::string expected = outcome(tc::envelopeJson(session.complete(native, tc::parseRequest(json))));
    for (int variant = 0; variant < 3; ++variant) {
      Host h(l);
      needle_tc_backend b = callbacks(h);
      if (variant == 1) b.encode = nullptr;  // the handle's own tokenizer
      if (variant == 2) {                    // sampling here, on the backend's logits
        b.set_sampler = nullptr;
        b.sample = nullptr;
        b.logprob = nullptr;
        b.logits = cbLogits;
      }
      int32_t status = -1;
      const std::string envelope = complete(api, m, json, b, &status);
      REQUIRE(status == NEEDLE_TC_OK);
      REQUIRE(outcome(envelope) == expected);
      REQUIRE(h.streamed == native.streamed);
      ++variantsChecked;
    }
  }
  REQUIRE(variantsChecked == 12);
  api.modelFree(m);
}

TEST_CASE("C API: with snapshots the prefix is reused as in the C++ session, with the same envelopes", "[session][capi]") {
  const Loaded& l = micro();
  const Api api;
  // The backend samples, or the session samples on the backend's logits (its repetition history then
  // starts from the restored prefix: the last request has a repetition penalty over the whole session).
  for (int variant = 0; variant < 2; ++variant) {
    needle_tc_model* m = modelOf(api, l);
    tc::Session session(*l.session);
    RecordingBackend native(l);
    Host h(l);
    needle_tc_backend b = callbacks(h);
    if (variant == 1) {
      b.set_sampler = nullptr;
      b.sample = nullptr;
      b.logprob = nullptr;
      b.logits = cbLogits;
    }
    const needle_tc_snapshots snapshots{cbSave, cbRestore};
    // requests()[0] and [1] share the prefix, [2] has a system turn, [3] is [0]'s prefix again; then
    // all four once more: saved, reused, saved, saved, reused, reused, saved, saved; then one more with
    // [0]'s prefix: reused.
    std::vector<std::string> sequence;
    for (int round = 0; round < 2; ++round) sequence.insert(sequence.end(), requests().begin(), requests().end());
    sequence.push_back(R"({"tools":)" + kBoundedTools + R"(,"request":"a timer","temperature":0.9,"seed":5,"repeat_penalty":1.5})");
    std::vector<uint32_t> reused;
    for (const std::string& json : sequence) {
      INFO(json);
      native.clear();
      const tc::Envelope want = session.complete(native, tc::parseRequest(json));
      reused.push_back(want.reusedPromptTokens);
      char* out = nullptr;
      const int32_t status = needle_tc_complete_reusing(m, json.c_str(), &b, &snapshots, &out);
      REQUIRE(status == NEEDLE_TC_OK);
      REQUIRE(outcome(take(out), true) == outcome(tc::envelopeJson(want), true));
    }
    REQUIRE(reused.size() == 9);
    CHECK(reused[0] == 0);
    CHECK(reused[1] > 0);   // same tools, no system turn
    CHECK(reused[2] == 0);  // a system turn: another prefix
    CHECK(reused[3] == 0);  // back to the first prefix, which the snapshot no longer holds
    CHECK(reused[4] == reused[1]);
    CHECK(reused[5] == reused[1]);
    CHECK(reused[6] == 0);
    CHECK(reused[7] == 0);
    CHECK(reused[8] == reused[1]);
    api.modelFree(m);
  }
}

TEST_CASE("C API: refusals and failures come back as statuses and messages", "[session][capi]") {
  const Loaded& l = micro();
  const Api api;
  needle_tc_model* m = modelOf(api, l);
  Host h(l);
  needle_tc_backend b = callbacks(h);
  int32_t status = -1;
  auto errorOf = [](const std::string& envelope) {
    const needle::json::Value v = needle::json::parse(envelope);
    REQUIRE(v.find("success")->boolean == false);
    REQUIRE(v.find("function_calls")->items.empty());
    return v.find("error")->isString() ? v.find("error")->text : std::string("(null)");
  };

  CHECK(errorOf(complete(api, m, "{\"tools\": [", b, &status)) == "request JSON at line 1, column 12: unexpected end of the text");
  CHECK(status == NEEDLE_TC_REFUSED);
  CHECK(errorOf(complete(api, m, R"({"tools":"[{\"name\":\"t\",\"parameters\":{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"string\",\"format\":\"date\"}}}}]","request":"x"})", b, &status)) ==
        "tool \"t\" parameter \"p\": \"format\" is not supported");
  CHECK(status == NEEDLE_TC_REFUSED);
  std::string longRequest = "weather";
  for (int i = 0; i < 2500; ++i) longRequest += " in Paris";
  const std::string tooLong = errorOf(complete(api, m, R"({"tools":)" + kBoundedTools + R"(,"request":")" + longRequest + "\"}", b, &status));
  CHECK(status == NEEDLE_TC_REFUSED);
  CHECK(tooLong.find("tokens; this model's context holds 2048") != std::string::npos);
  CHECK(h.resets == 0);  // nothing reached the model

  h.failFeed = 23;
  CHECK(errorOf(complete(api, m, requests()[0], b, &status)) == "backend: feed failed with code 23");
  CHECK(status == NEEDLE_TC_FAILED);
  h.failFeed = 0;

  needle_tc_backend noReset = b;
  noReset.reset = nullptr;
  CHECK(errorOf(complete(api, m, requests()[0], noReset, &status)) == "backend: \"reset\" is required");
  CHECK(status == NEEDLE_TC_FAILED);
  needle_tc_backend noSampler = b;
  noSampler.sample = nullptr;
  CHECK(errorOf(complete(api, m, requests()[0], noSampler, &status)) ==
        "backend: give either \"set_sampler\", \"sample\" and \"logprob\", or \"logits\"");

  // And the handle still works.
  h.streamed.clear();
  REQUIRE(needle::json::parse(complete(api, m, requests()[0], b, &status)).find("success")->boolean);
  REQUIRE(status == NEEDLE_TC_OK);
  char* none = nullptr;
  REQUIRE(api.complete(m, nullptr, &b, &none) == NEEDLE_TC_REFUSED);
  api.free(none);
  api.modelFree(m);
}

TEST_CASE("C API: model handles and check_tools and alloc and free", "[session][capi]") {
  const Loaded& l = micro();
  char* error = nullptr;
  REQUIRE(needle_tc_model_new(l.model.tokenizer.data(), static_cast<uint32_t>(l.model.tokenizer.size()), 100,
                              2048, 0, &error) == nullptr);
  REQUIRE(take(error) == "session: vocab 100 is smaller than the tokenizer's 8192 pieces");
  REQUIRE(needle_tc_model_new(l.model.tokenizer.data(), 10, 8192, 2048, 0, &error) == nullptr);
  REQUIRE(!take(error).empty());
  REQUIRE(needle_tc_model_new(l.model.tokenizer.data(), static_cast<uint32_t>(l.model.tokenizer.size()), 8192,
                              2048, 4, &error) == nullptr);
  REQUIRE(take(error) == "model: heads 4 has bits other than 1 (contrastive) and 2 (confidence)");
  REQUIRE(needle_tc_model_new(nullptr, 0, 8192, 2048, 0, nullptr) == nullptr);  // no error wanted

  REQUIRE(take(needle_tc_check_tools(kBoundedTools.c_str())) == "");
  REQUIRE(take(needle_tc_check_tools("[]")) == "");
  REQUIRE(take(needle_tc_check_tools("[{\"name\":\"a\"},\n {\"name\" \"b\"}]")) ==
          "tools JSON at line 2, column 10: expected ':' after a member name");
  REQUIRE(take(needle_tc_check_tools(R"([{"name":"t","parameters":{"type":"object","properties":{"p":{"type":"string","pattern":"x"}}}}])")) ==
          "tool \"t\" parameter \"p\": \"pattern\" is not supported");
  REQUIRE(take(needle_tc_check_tools(R"([{"name":"a"},{"name":"a"}])")) == "tool 2: the name \"a\" is already used by tool 1");
  REQUIRE(take(needle_tc_check_tools(nullptr)) == "tools: no text");

  void* p = needle_tc_alloc(0);
  REQUIRE(p != nullptr);
  needle_tc_free(p);
  needle_tc_free(nullptr);
}

TEST_CASE("libneedle_toolcall.so exports the C API alone and runs a request", "[session][capi]") {
  const std::string path = kBinDir + "/../lib/libneedle_toolcall.so";
  void* so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so) FAIL(std::string("dlopen: ") + dlerror());
  Api api;
  api.modelNew = reinterpret_cast<decltype(api.modelNew)>(dlsym(so, "needle_tc_model_new"));
  api.modelFree = reinterpret_cast<decltype(api.modelFree)>(dlsym(so, "needle_tc_model_free"));
  api.complete = reinterpret_cast<decltype(api.complete)>(dlsym(so, "needle_tc_complete"));
  api.checkTools = reinterpret_cast<decltype(api.checkTools)>(dlsym(so, "needle_tc_check_tools"));
  api.free = reinterpret_cast<decltype(api.free)>(dlsym(so, "needle_tc_free"));
  REQUIRE(api.modelNew);
  REQUIRE(api.modelFree);
  REQUIRE(api.complete);
  REQUIRE(api.checkTools);
  REQUIRE(api.free);
  REQUIRE(dlsym(so, "needle_tc_alloc") != nullptr);
  // Nothing of the C++ library is visible (hidden visibility): the only functions the library defines
  // for others are the seven of capi.h.
  FILE* nm = popen(("nm -D --defined-only " + path + " 2>&1").c_str(), "r");
  REQUIRE(nm != nullptr);
  std::vector<std::string> functions;
  char line[512];
  while (std::fgets(line, sizeof line, nm)) {
    std::string text(line);
    const size_t t = text.find(" T ");
    if (t != std::string::npos) functions.push_back(text.substr(t + 3, text.find_last_not_of("\n") - t - 2));
  }
  REQUIRE(pclose(nm) == 0);
  std::sort(functions.begin(), functions.end());
  REQUIRE(functions == std::vector<std::string>{"needle_tc_alloc", "needle_tc_check_tools", "needle_tc_complete",
                                                "needle_tc_complete_reusing", "needle_tc_free",
                                                "needle_tc_model_free", "needle_tc_model_new"});

  char* message = api.checkTools("[{\"name\":1}]");
  REQUIRE(std::string(message) == "tool 1: \"name\" must be a string");
  api.free(message);

  const Loaded& l = micro();
  needle_tc_model* m = modelOf(api, l);
  Host h(l);
  needle_tc_backend b = callbacks(h);
  b.set_sampler = nullptr;  // as Python would: logits only
  b.sample = nullptr;
  b.logprob = nullptr;
  b.logits = cbLogits;
  int32_t status = -1;
  const std::string envelope = complete(api, m, requests()[1], b, &status);
  REQUIRE(status == NEEDLE_TC_OK);
  tc::Session session(*l.session);
  RecordingBackend native(l);
  REQUIRE(outcome(envelope) == outcome(tc::envelopeJson(session.complete(native, tc::parseRequest(requests()[1])))));
  api.modelFree(m);
  dlclose(so);
}
