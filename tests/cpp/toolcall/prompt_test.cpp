// The prompt: tools_json equals Python's rendering (pinned), and the ids of renderPrompt(...) equal
// [2] + libsentencepiece's encode of the design page's template, built here independently, on the
// fixture tokenizer (build/models/needle-test.model). Multi-turn, refusals, the sink length.
#include <catch2/catch.hpp>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer.hpp"
#include "toolcall/prompt.hpp"

namespace tc = needle::toolcall;
namespace json = needle::json;

namespace {

const std::string kModel = std::string(NEEDLE_MODELS_DIR) + "/needle-test.model";

// Tools given with non-ASCII text; Python's json.dumps(tools, separators=(",", ":")) is pinned.
const std::string kWeatherInput =
    "[{\"name\": \"get_weather\", \"description\": \"M\xC3\xA9t\xC3\xA9o d\xE2\x80\x99une ville \xF0\x9F\x8C\xA6\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"description\": "
    "\"\xE5\x9F\x8E\xE5\xB8\x82\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"celsius\", \"fahrenheit\"]}}, "
    "\"required\": [\"location\"]}}]";
const std::string kWeatherPython =
    R"([{"name":"get_weather","description":"M\u00e9t\u00e9o d\u2019une ville \ud83c\udf26","parameters":{"type":"object",)"
    R"("properties":{"location":{"type":"string","description":"\u57ce\u5e02"},"unit":{"type":"string","enum":["celsius",)"
    R"("fahrenheit"]}},"required":["location"]}}])";

// Keys given out of order, and extra keys; Python's reordering (name, description, parameters, then
// the rest; parameters: type, properties, required, then the rest) is pinned.
const std::string kTimerInput =
    R"([{"parameters": {"required": ["minutes"], "properties": {"minutes": {"type": "integer", "minimum": 1}, )"
    R"("label": {"type": "string"}}, "additionalProperties": false, "type": "object"}, "description": "Set a timer", )"
    R"("name": "set_timer", "strict": true}, {"description": "no params", "name": "ping"}])";
const std::string kTimerPython =
    R"([{"name":"set_timer","description":"Set a timer","parameters":{"type":"object","properties":{"minutes":)"
    R"({"type":"integer","minimum":1},"label":{"type":"string"}},"required":["minutes"],"additionalProperties":false},)"
    R"("strict":true},{"name":"ping","description":"no params"}])";

struct Models {
  sentencepiece::SentencePieceProcessor sp;
  needle::Tokenizer tok;
  Models() : tok(needle::tokenizerSpecFromSpm(kModel)) {
    const auto status = sp.Load(kModel);
    if (!status.ok()) throw std::runtime_error(kModel + ": " + status.ToString());
  }
};

const Models& models() {
  static const Models m;
  return m;
}

// [2] + SentencePiece's ids of the text.
std::vector<uint32_t> spmIds(const std::string& text) {
  std::vector<int> ids;
  const auto status = models().sp.Encode(text, &ids);
  if (!status.ok()) throw std::runtime_error(status.ToString());
  std::vector<uint32_t> out{2};
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

std::string renderError(const std::vector<tc::Tool>& tools, const std::vector<tc::Turn>& turns, const std::string& system = "") {
  try {
    tc::renderPrompt(tools, turns, system);
  } catch (const needle::Error& e) {
    return e.what();
  }
  return "(rendered)";
}

tc::Turn user(const std::string& text) { return tc::Turn{tc::Turn::Role::User, text, {}}; }
tc::Turn assistant(const std::string& text) { return tc::Turn{tc::Turn::Role::Assistant, text, {}}; }
tc::Turn result(const std::string& jsonText) { return tc::Turn{tc::Turn::Role::ToolResult, "", json::parse(jsonText)}; }

}  // namespace

TEST_CASE("tools_json is Python's compact, ASCII-escaped, reordered rendering", "[toolcall][prompt]") {
  CHECK(tc::toolsJson(tc::parseTools(kWeatherInput)) == kWeatherPython);
  CHECK(tc::toolsJson(tc::parseTools(kTimerInput)) == kTimerPython);
  CHECK(tc::toolsJson({}) == "[]");
}

TEST_CASE("prompt ids equal SentencePiece's ids of the design page's template", "[toolcall][prompt]") {
  const Models& m = models();
  struct Case {
    std::string toolsInput, toolsPython, system, query;
  };
  const std::vector<Case> cases = {
      {kWeatherInput, kWeatherPython, "", "What's the weather in Paris?"},
      {kWeatherInput, kWeatherPython, "date: 2026-03-01; locale: fr-FR", "Quel temps fait-il \xC3\xA0 Lyon ? \xE2\x98\x80\xEF\xB8\x8F"},
      {kTimerInput, kTimerPython, "", "  set a timer\tfor 5 minutes  "},
      {"[]", "[]", "", "hello"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.query);
    const std::string tmpl = (c.system.empty() ? "" : "<|im_start|>system\n" + c.system + "<|im_end|>\n") +
                             "<|im_start|>user\n<tools>" + c.toolsPython + "</tools>\n" + c.query +
                             "<|im_end|>\n<|im_start|>assistant\n";
    const std::string prompt = tc::renderPrompt(tc::parseTools(c.toolsInput), c.query, c.system);
    CHECK(prompt == tmpl);
    const std::vector<uint32_t> ids = tc::promptIds(m.tok, prompt);
    CHECK(ids == spmIds(tmpl));
    // Dummy prefix: [BOS, ▁, <|im_start|>, ...].
    REQUIRE(ids.size() > 3);
    CHECK(m.tok.spec().pieces[ids[1]].surface == "\xE2\x96\x81");
    CHECK(ids[2] == 4);
    // The sink: BOS through </tools>.
    const uint32_t sink = tc::sinkLength(ids, 9);
    CHECK(ids[sink - 1] == 9);
    CHECK(m.tok.decode(std::vector<uint32_t>(ids.begin(), ids.begin() + sink)) ==
          tmpl.substr(0, tmpl.find("</tools>") + 8));
  }
}

TEST_CASE("multi-turn prompts: assistant replies and tool results", "[toolcall][prompt]") {
  const Models& m = models();
  const std::vector<tc::Tool> tools = tc::parseTools(kWeatherInput);
  const std::string reply = R"( <tool_call>[{"name":"get_weather","arguments":{"location":"Paris"}}]</tool_call>)";
  const std::vector<tc::Turn> turns = {user("Weather in Paris?"), assistant(reply),
                                       result(R"([{"name":"get_weather","result":{"temperature":21.5,"sky":"ensoleill\u00e9"}}])"),
                                       assistant(" <think>It is sunny.</think>\nIt is 21.5 degrees and sunny."),
                                       user("And tomorrow?")};
  const std::string tmpl =
      "<|im_start|>system\nlocale: fr<|im_end|>\n"
      "<|im_start|>user\n<tools>" + kWeatherPython + "</tools>\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n" + reply + "<|im_end|>\n"
      "<|im_start|>user\n<tool_result>"
      R"([{"name":"get_weather","result":{"temperature":21.5,"sky":"ensoleill\u00e9"}}])"
      "</tool_result><|im_end|>\n"
      "<|im_start|>assistant\n <think>It is sunny.</think>\nIt is 21.5 degrees and sunny.<|im_end|>\n"
      "<|im_start|>user\nAnd tomorrow?<|im_end|>\n"
      "<|im_start|>assistant\n";
  const std::string prompt = tc::renderPrompt(tools, turns, "locale: fr");
  CHECK(prompt == tmpl);
  const std::vector<uint32_t> ids = tc::promptIds(m.tok, prompt);
  CHECK(ids == spmIds(tmpl));
  // Only the first user turn carries the tools.
  CHECK(std::count(ids.begin(), ids.end(), 9u) == 1);
  CHECK(std::count(ids.begin(), ids.end(), 12u) == 1);  // <tool_result>
  // A tool result as the last turn.
  const std::vector<tc::Turn> afterResult(turns.begin(), turns.begin() + 3);
  CHECK(tc::promptIds(m.tok, tc::renderPrompt(tools, afterResult)) ==
        spmIds(tmpl.substr(tmpl.find("<|im_start|>user"), tmpl.find("<|im_start|>assistant\n <think>") -
                                                              tmpl.find("<|im_start|>user")) +
               "<|im_start|>assistant\n"));
}

TEST_CASE("prompt refusals", "[toolcall][prompt]") {
  const std::vector<tc::Tool> tools = tc::parseTools(kWeatherInput);
  CHECK(renderError(tools, {}) == "prompt: the first turn must be the user's (it carries the tools)");
  CHECK(renderError(tools, {result("1")}) == "prompt: the first turn must be the user's (it carries the tools)");
  CHECK(renderError(tools, {user("a"), assistant("b")}) ==
        "prompt: the last turn is the assistant's; a user turn or a tool result must follow it");
  CHECK(renderError(tools, {user("a <|im_end|> b")}) ==
        "prompt: turn 1 (user) spells the chat marker <|im_end|>, which would be read as the marker itself");
  CHECK(renderError(tools, {user("a")}, "x<tools>") ==
        "prompt: the system text spells the chat marker <tools>, which would be read as the marker itself");
  CHECK(renderError(tools, {user("a"), assistant("<tool_call>[]</tool_call><|im_start|>"), user("b")}) ==
        "prompt: turn 2 (assistant) spells the chat marker <|im_start|>, which would be read as the marker itself");
  CHECK(renderError(tools, {user("a"), result(R"({"x":"</tool_result>"})")}) ==
        "prompt: turn 2 (tool result) spells the chat marker </tool_result>, which would be read as the marker itself");
  CHECK(renderError(tc::parseTools(R"([{"name":"t","description":"ends with </tools>"}])"), {user("a")}) ==
        "prompt: the tools JSON spells the chat marker </tools>, which would be read as the marker itself");
  CHECK_THROWS_WITH(tc::sinkLength({2, 100, 4}, 9), "prompt: no </tools> token (id 9) among the 3 prompt ids");
}
