// needle-run: the envelope of the C++ session with the engine's numerics, --history, --batch (one
// envelope per line, the archive loaded once), and bad tools JSON or an unsupported keyword refused
// with a clear message and exit status 1.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "fixture.hpp"
#include "json.hpp"

using namespace session_test;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/needle-session-cli-XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (!p) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
};

struct Result {
  int status;
  std::string out, err;
};

std::string readAll(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs needle-run with `args` (already shell-quoted), capturing stdout and stderr.
Result run(const TempDir& dir, const std::string& args) {
  const std::string out = dir.path + "/stdout", err = dir.path + "/stderr";
  const int raw = std::system((kBinDir + "/needle-run " + args + " >" + out + " 2>" + err).c_str());
  return Result{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, readAll(out), readAll(err)};
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The deterministic part of an envelope: calls, reply ids, confidence (what must agree across engines).
std::string essence(const std::string& envelope) {
  const needle::json::Value v = needle::json::parse(envelope);
  return needle::json::compact(*v.find("function_calls")) + " " + needle::json::compact(*v.find("reply_ids")) + " " +
         needle::json::compact(*v.find("confidence")) + " " + needle::json::compact(*v.find("text"));
}

}  // namespace

TEST_CASE("needle-run prints the session's envelope with the engine's numerics", "[session][cli]") {
  TempDir dir;
  const std::string tools = dir.write("tools.json", kTools);
  const std::string archive = kModelsDir + "/micro.cact";
  const Result r = run(dir, "--archive " + archive + " --tools " + tools + " --temperature 1 --seed 42 " +
                                quote("What's the weather in Paris?"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.out.back() == '\n');
  REQUIRE(r.out.find('\n') == r.out.size() - 1);  // one line

  const Loaded& l = micro();
  tc::Session session(*l.session);
  RecordingBackend native(l);  // A8 and int8 KV, as the engine
  tc::Request request;
  request.tools = tc::parseTools(std::string_view(kTools));
  request.request = "What's the weather in Paris?";
  request.sampling.temperature = 1;
  request.seed = 42;
  REQUIRE(essence(r.out) == essence(tc::envelopeJson(session.complete(native, request))));
  const needle::json::Value v = needle::json::parse(r.out);
  for (const char* key : {"type", "success", "error", "function_calls", "reasoning", "text", "confidence",
                          "no_call_margin", "call_doubt", "calls_named", "withdrawn_calls", "prompt_tokens", "pinned_tokens",
                          "reused_prompt_tokens", "generated_tokens",
                          "forced_tokens", "reply_ids",
                          "tools_offered", "time_to_first_token_ms", "prefill_tps", "decode_tps", "constraint_ms",
                          "peak_memory_bytes"})
    REQUIRE(v.find(key) != nullptr);
  REQUIRE(v.members.size() == 23);
  REQUIRE(v.find("reused_prompt_tokens")->text == "0");  // one request: nothing to reuse
  REQUIRE(std::stod(v.find("peak_memory_bytes")->text) > 1e6);

  // f32 activations give other logits: the option reaches the Reference.
  const Result f32 = run(dir, "--archive " + archive + " --tools " + tools + " --act f32 --kv f32 --temperature 1 --seed 42 " +
                                  quote("What's the weather in Paris?"));
  REQUIRE(f32.status == 0);
  REQUIRE(needle::json::compact(*needle::json::parse(f32.out).find("confidence")) !=
          needle::json::compact(*v.find("confidence")));

  // --no-call-bias reaches the session: the session's envelope for the same bias, and at 100 no call
  // (at -100 micro's random weights think until the budget leaves only `[]`).
  for (const float bias : {100.0f, -100.0f}) {
    const Result b = run(dir, "--archive " + archive + " --tools " + tools + " --temperature 1 --seed 42 --no-call-bias " +
                                  std::to_string(bias) + " " + quote("What's the weather in Paris?"));
    REQUIRE(b.status == 0);
    request.noCallBias = bias;
    REQUIRE(essence(b.out) == essence(tc::envelopeJson(session.complete(native, request))));
    if (bias > 0) REQUIRE(needle::json::compact(*needle::json::parse(b.out).find("function_calls")) == "[]");
  }
  request.noCallBias = 0;
  // --span-strings reaches the session: the session's envelope with span strings.
  const Result spans = run(dir, "--archive " + archive + " --tools " + tools + " --temperature 1 --seed 42 --span-strings " +
                                    quote("What's the weather in Paris?"));
  REQUIRE(spans.status == 0);
  request.spanStrings = true;
  REQUIRE(essence(spans.out) == essence(tc::envelopeJson(session.complete(native, request))));
  request.spanStrings = false;
  const Result far = run(dir, "--archive " + archive + " --tools " + tools + " --no-call-bias 101 hi");
  REQUIRE(far.status == 2);
  REQUIRE(far.err.find("--no-call-bias must be from -100 to 100") != std::string::npos);
  // --no-call-doubt, --no-call-named and --steer-named reach the session: its envelope for the same
  // settings; a weight or credit out of range is refused with the range.
  auto sameAsSession = [&](const std::string& flags, const tc::Request& r) {
    const Result out = run(dir, "--archive " + archive + " --tools " + tools + " --temperature 1 --seed 42 " + flags +
                                    " " + quote("What's the weather in Paris?"));
    REQUIRE(out.status == 0);
    REQUIRE(essence(out.out) == essence(tc::envelopeJson(session.complete(native, r))));
  };
  request.noCallBias = -1;
  request.noCallDoubt = 0.5f;
  sameAsSession("--no-call-bias -1 --no-call-doubt 0.5", request);
  request.noCallBias = 1;
  request.noCallNamed = 3;
  sameAsSession("--no-call-bias 1 --no-call-doubt 0.5 --no-call-named 3", request);
  request.steerNamed = true;
  sameAsSession("--no-call-bias 1 --no-call-doubt 0.5 --no-call-named 3 --steer-named", request);
  for (const auto& [flag, range] : {std::pair{"--no-call-doubt -1", "--no-call-doubt must be from 0 to 100"},
                                    std::pair{"--no-call-named 100.5", "--no-call-named must be from 0 to 100"}}) {
    const Result refused = run(dir, "--archive " + archive + " --tools " + tools + " " + flag + " hi");
    REQUIRE(refused.status == 2);
    REQUIRE(refused.err.find(range) != std::string::npos);
  }
}

TEST_CASE("needle-run --history and --batch", "[session][cli]") {
  TempDir dir;
  const std::string tools = dir.write("tools.json", kTools);
  const std::string archive = kModelsDir + "/micro.cact";
  const std::string history = dir.write("history.json",
      R"([{"role":"user","content":"weather in Paris?"},)"
      R"({"role":"assistant","content":"<tool_call>[{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\"}}]</tool_call>"},)"
      R"({"role":"tool","content":{"temperature_c":18}}])");
  const Result h = run(dir, "--archive " + archive + " --tools " + tools + " --history " + history + " --seed 3 --temperature 1");
  INFO(h.err);
  REQUIRE(h.status == 0);
  REQUIRE(needle::json::parse(h.out).find("success")->boolean);

  // Three requests in one run: the same envelopes as three runs; a refused line gives its error
  // envelope, the run goes on, and the exit status says so.
  std::vector<std::string> singles;
  for (int seed : {1, 2}) {
    const Result one = run(dir, "--archive " + archive + " --tools " + tools + " --temperature 1 --seed " +
                                    std::to_string(seed) + " --max-tokens 64 timer");
    REQUIRE(one.status == 0);
    singles.push_back(essence(one.out));
  }
  const std::string batch = dir.write("batch.jsonl",
      R"({"tools":)" + kTools + R"(,"request":"timer","temperature":1,"seed":1,"max_tokens":64})" "\n"
      R"({"tools":[{"name":"t","parameters":{"type":"object","properties":{"p":{"type":"string","pattern":"a"}}}}],"request":"x"})" "\n"
      "\n"
      R"({"tools":)" + kTools + R"(,"request":"timer","temperature":1,"seed":2,"max_tokens":64})" "\n");
  const Result b = run(dir, "--archive " + archive + " --batch " + batch);
  REQUIRE(b.status == 1);
  REQUIRE(b.err == "needle-run: " + batch + " line 2: tool \"t\" parameter \"p\": \"pattern\" is not supported\n");
  std::vector<std::string> lines;
  std::istringstream in(b.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 3);
  REQUIRE(essence(lines[0]) == singles[0]);
  REQUIRE(needle::json::parse(lines[1]).find("error")->text == "tool \"t\" parameter \"p\": \"pattern\" is not supported");
  REQUIRE(essence(lines[2]) == singles[1]);
  // The batch keeps the tools prefix across its requests: the third line restored it.
  REQUIRE(needle::json::parse(lines[0]).find("reused_prompt_tokens")->text == "0");
  REQUIRE(needle::json::parse(lines[2]).find("reused_prompt_tokens")->text ==
          needle::json::parse(lines[2]).find("pinned_tokens")->text);
}

TEST_CASE("needle-run refuses bad tools and an over-long prompt with a message and exit status 1", "[session][cli]") {
  TempDir dir;
  const std::string archive = kModelsDir + "/micro.cact";
  const std::string malformed = dir.write("malformed.json", "[{\"name\": \"a\",\n  \"parameters\": {\"type\": \"object\",}}]");
  Result r = run(dir, "--archive " + archive + " --tools " + malformed + " hi");
  REQUIRE(r.status == 1);
  REQUIRE(r.out.empty());
  REQUIRE(r.err == "needle-run: " + malformed + ": tools JSON at line 2, column 35: expected a member name in double quotes\n");

  const std::string unsupported = dir.write("unsupported.json",
      R"([{"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer","multipleOf":5}}}}])");
  r = run(dir, "--archive " + archive + " --tools " + unsupported + " hi");
  REQUIRE(r.status == 1);
  REQUIRE(r.err == "needle-run: " + unsupported + ": tool \"set_timer\" parameter \"minutes\": \"multipleOf\" is not supported\n");

  const std::string tools = dir.write("tools.json", kTools);
  std::string longRequest = "weather";
  for (int i = 0; i < 2500; ++i) longRequest += " in Paris";
  r = run(dir, "--archive " + archive + " --tools " + tools + " " + quote(longRequest));
  REQUIRE(r.status == 1);
  REQUIRE(r.err.find("needle-run: the prompt is ") == 0);
  REQUIRE(r.err.find(" tokens; this model's context holds 2048\n") != std::string::npos);

  r = run(dir, "--archive " + archive + " --tools " + tools);
  REQUIRE(r.status == 2);  // usage: no request
  r = run(dir, "--help");
  REQUIRE(r.status == 0);
}
