// The session tests' shared fixture (fixture.hpp).
#include "fixture.hpp"

#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

#include "toolcall/grammar.hpp"
#include "toolcall/reply.hpp"

namespace session_test {

const Loaded& load(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  std::unique_ptr<Loaded>& slot = cache[name];
  if (!slot) {
    auto l = std::make_unique<Loaded>();
    std::ifstream in(kModelsDir + "/" + name, std::ios::binary);
    if (!in) throw std::runtime_error(kModelsDir + "/" + name + ": cannot open (run the models.make fixture)");
    l->bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    l->model = needle::readArchive(needle::ByteView(l->bytes.data(), l->bytes.size()));
    l->session = tc::sessionModelOf(l->model);
    slot = std::move(l);
  }
  return *slot;
}

namespace {

std::string randomSchema(Rng& r, int depth);

std::string numberBounds(Rng& r, bool integer) {
  static const std::vector<std::string> ints = {"-50", "-1", "0", "1", "7", "24", "100", "1e3"};
  static const std::vector<std::string> reals = {"-12.5", "-0.5", "0", "0.25", "1", "3.75", "99.9", "1e2"};
  std::string out;
  for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
    if (r.chance(25)) out += std::string(",\"") + keyword + "\":" + r.pick(integer ? ints : reals);
  return out;
}

std::string description(Rng& r) {
  static const std::vector<std::string> pool = {"the city", "how many minutes", "a short note", "the recipient",
                                                "whether to repeat", "caf\\u00e9 name", "tags to add", "when"};
  return r.chance(60) ? ",\"description\":\"" + r.pick(pool) + "\"" : "";
}

std::string objectSchema(Rng& r, int depth, uint32_t maxProperties) {
  static const std::vector<std::string> names = {"location", "unit", "minutes", "message", "to", "repeat", "tags",
                                                 "priority", "when", "count", "lat", "lon", "options", "na\\u00efve"};
  std::vector<std::string> chosen;
  const uint32_t count = r.below(maxProperties + 1);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string& n = r.pick(names);
    if (std::find(chosen.begin(), chosen.end(), n) == chosen.end()) chosen.push_back(n);
  }
  std::string properties, required;
  for (const std::string& n : chosen) {
    properties += std::string(properties.empty() ? "" : ",") + "\"" + n + "\":" + randomSchema(r, depth + 1);
    if (r.chance(50)) required += std::string(required.empty() ? "" : ",") + "\"" + n + "\"";
  }
  return "{\"type\":\"object\",\"properties\":{" + properties + "}" +
         (required.empty() ? "" : ",\"required\":[" + required + "]") + "}";
}

std::string randomSchema(Rng& r, int depth) {
  switch (r.below(depth >= 2 ? 7 : 9)) {
    case 0: {
      std::string s = "{\"type\":\"string\"" + description(r);
      const uint32_t lo = r.below(4);
      if (r.chance(30)) s += ",\"minLength\":" + std::to_string(lo);
      if (r.chance(30)) s += ",\"maxLength\":" + std::to_string(lo + r.below(12));
      return s + "}";
    }
    case 1: {
      static const std::vector<std::string> pool = {"\"celsius\"", "\"fahrenheit\"", "\"kelvin\"", "\"low\"",
                                                    "\"high\"", "\"caf\\u00e9\"", "\"\\ud83d\\udc4d\""};
      std::string e;
      const uint32_t n = 1 + r.below(4);
      for (uint32_t i = 0; i < n; ++i) e += std::string(i ? "," : "") + r.pick(pool);
      return "{\"type\":\"string\",\"enum\":[" + e + "]" + description(r) + "}";
    }
    case 2: return "{\"type\":\"integer\"" + numberBounds(r, true) + description(r) + "}";
    case 3: return "{\"type\":\"number\"" + numberBounds(r, false) + "}";
    case 4: return r.chance(80) ? "{\"type\":\"boolean\"}" : "{\"type\":\"null\"}";
    case 5: return r.chance(50) ? "{\"type\":\"integer\",\"enum\":[1,2,3,10]}" : "{\"type\":\"string\",\"const\":\"ok\"}";
    case 6: {
      std::string s = "{\"type\":\"array\",\"items\":" + randomSchema(r, depth + 1);
      const uint32_t lo = r.below(3);
      if (r.chance(40)) s += ",\"minItems\":" + std::to_string(lo);
      if (r.chance(40)) s += ",\"maxItems\":" + std::to_string(lo + r.below(4));
      return s + "}";
    }
    default: return objectSchema(r, depth, 3);
  }
}

}  // namespace

std::string randomToolsJson(Rng& r, uint32_t minTools, uint32_t maxTools) {
  static const std::vector<std::string> names = {"get_weather", "set_timer", "send_message", "create_event",
                                                 "search", "play_music", "get_time", "add_todo", "call"};
  for (;;) {
    std::vector<std::string> chosen;
    const uint32_t count = minTools + r.below(maxTools - minTools + 1);
    while (chosen.size() < count) {
      const std::string& n = r.pick(names);
      if (std::find(chosen.begin(), chosen.end(), n) == chosen.end()) chosen.push_back(n);
    }
    std::string text = "[";
    for (size_t i = 0; i < chosen.size(); ++i)
      text += std::string(i ? "," : "") + "{\"name\":\"" + chosen[i] + "\",\"description\":\"" + chosen[i] +
              " tool\",\"parameters\":" + objectSchema(r, 0, 4) + "}";
    text += "]";
    try {
      (void)tc::parseTools(std::string_view(text));
      return text;
    } catch (const needle::Error&) {  // bounds that admit no value: draw again
    }
  }
}

std::string eightNamedToolsJson(Rng& r) {
  const std::vector<std::string> names = {"get_weather", "set_timer", "send_message", "create_event",
                                          "search_web", "play_music", "get_time", "add_todo"};
  std::string text = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string one = randomToolsJson(r, 1, 1);  // [{"name":"...",...}]: rename it
    const size_t nameEnd = one.find("\",\"description\"");
    if (i) text += ",";
    text += "{\"name\":\"";
    text += names[i];
    text += one.substr(nameEnd, one.size() - nameEnd - 1);
  }
  return text + "]";
}

std::string randomRequest(Rng& r) {
  static const std::vector<std::string> pool = {
      "What's the weather in Paris?", "Set a timer for 10 minutes", "Send a message to Anna saying hi",
      "Play something calm", "Remind me to buy milk", "caf\xc3\xa9 near me?", "", "What time is it in Tokyo?"};
  return r.pick(pool);
}

std::vector<tc::Tool> offeredTools(const tc::Request& request, const tc::Envelope& env) {
  if (!env.toolsOffered) return request.tools;
  std::vector<tc::Tool> out;
  for (const std::string& name : *env.toolsOffered)
    for (const tc::Tool& t : request.tools)
      if (t.name == name) out.push_back(t);
  return out;
}

size_t checkConstrainedReply(const Loaded& l, const tc::Request& request, const tc::Envelope& env,
                             const std::string& streamed) {
  INFO("reply: " << env.text);
  REQUIRE(env.error == "");
  REQUIRE(env.success);
  REQUIRE(env.generatedTokens == env.replyIds.size());
  REQUIRE(env.generatedTokens <= request.maxTokens);
  REQUIRE(env.forcedTokens <= env.generatedTokens);
  REQUIRE(env.text.size() >= 10);
  REQUIRE(env.text.substr(env.text.size() - 10) == "<|im_end|>");
  REQUIRE(streamed == env.text);
  // The tokenizer's own reading of the ids: the same text, without the leading dummy-prefix space.
  const std::string decoded = l.session->tokenizer().decode(env.replyIds);
  REQUIRE((env.text[0] == ' ' ? env.text.substr(1) : env.text) == decoded);

  // A fresh matcher of the offered tools takes every id and is done at the end.
  const std::vector<tc::Tool> tools = offeredTools(request, env);
  bool allowText = !request.request && !request.history.empty() &&
                   request.history.back().role == tc::Turn::Role::ToolResult;
  tc::GrammarOptions options;
  options.allowText = allowText;
  tc::Grammar grammar(tools, options);
  tc::Matcher m(grammar);
  for (uint32_t id : env.replyIds) REQUIRE(l.session->table().accept(m, id));
  REQUIRE(m.done());

  // Every call names an offered tool and its arguments satisfy that tool's schema.
  for (const tc::FunctionCall& call : env.calls) {
    const auto tool = std::find_if(tools.begin(), tools.end(), [&](const tc::Tool& t) { return t.name == call.name; });
    REQUIRE(tool != tools.end());
    REQUIRE(call.arguments.isObject());
    REQUIRE(tc::validate(call.arguments, tool->parameters) == "");
  }
  REQUIRE(std::string(env.type()) == (env.calls.empty() ? "respond" : "call"));
  if (env.confidence) {
    REQUIRE(*env.confidence >= 0.0f);
    REQUIRE(*env.confidence <= 1.0f);
  }
  return env.calls.size();
}

std::string outcome(const tc::Envelope& e) {
  tc::Envelope copy = e;
  copy.timeToFirstTokenMs = copy.prefillTps = copy.decodeTps = copy.constraintMs = 0;
  copy.peakMemoryBytes = 0;
  copy.reusedPromptTokens = 0;
  return tc::envelopeJson(copy);
}

}  // namespace session_test
