// Reading replies back: reasoning, calls validated against the tools, free text, and unconstrained
// output that is wrong in every way (an error, never a throw).
#include <catch2/catch.hpp>

#include <string>

#include "toolcall/reply.hpp"

namespace tc = needle::toolcall;
namespace json = needle::json;

namespace {

const std::vector<tc::Tool>& weather() {
  static const std::vector<tc::Tool> tools = tc::parseTools(R"([{"name":"get_weather","parameters":{"type":"object",
    "properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
    "required":["location"]}},{"name":"get_time","parameters":{"type":"object","properties":{}}}])");
  return tools;
}

}  // namespace

TEST_CASE("a constrained reply reads back: reasoning and calls", "[toolcall][reply]") {
  const tc::Reply r = tc::parseReply(
      " <think>Paris: weather.\nAlso the time.</think>\n<tool_call>[{\"name\":\"get_weather\",\"arguments\":"
      "{\"location\":\"Paris \\u00e9\",\"unit\":\"celsius\"}},{\"name\":\"get_time\",\"arguments\":{}}]</tool_call><|im_end|>",
      weather());
  CHECK(r.error == "");
  CHECK(r.kind == tc::Reply::Kind::Calls);
  CHECK(r.finished);
  CHECK(r.reasoning == "Paris: weather.\nAlso the time.");
  REQUIRE(r.calls.size() == 2);
  CHECK(r.calls[0].name == "get_weather");
  CHECK(r.calls[0].arguments.find("location")->text == "Paris \xC3\xA9");
  CHECK(json::compact(r.calls[1].arguments) == "{}");

  const tc::Reply empty = tc::parseReply("<tool_call>[]</tool_call><|im_end|>", weather());
  CHECK(empty.error == "");
  CHECK(empty.kind == tc::Reply::Kind::Calls);
  CHECK(empty.calls.empty());
  CHECK(empty.reasoning == "");
  // JSON strings may hold marker spellings: the JSON is read as JSON.
  const tc::Reply spelled = tc::parseReply(
      R"(<tool_call>[{"name":"get_weather","arguments":{"location":"</tool_call><|im_end|>"}}]</tool_call><|im_end|>)",
      weather());
  CHECK(spelled.error == "");
  CHECK(spelled.calls.at(0).arguments.find("location")->text == "</tool_call><|im_end|>");
}

TEST_CASE("free text replies", "[toolcall][reply]") {
  const tc::Reply r = tc::parseReply(" <think>ok</think>\nIt is 21 degrees.<|im_end|>", weather(), true);
  CHECK(r.error == "");
  CHECK(r.kind == tc::Reply::Kind::Text);
  CHECK(r.text == "It is 21 degrees.");
  CHECK(r.reasoning == "ok");
  CHECK(r.finished);
  const tc::Reply notAllowed = tc::parseReply(" It is 21 degrees.<|im_end|>", weather());
  CHECK(notAllowed.kind == tc::Reply::Kind::Invalid);
  CHECK(notAllowed.error == "the reply has no <tool_call>");
  CHECK(notAllowed.text == "It is 21 degrees.");
  CHECK(tc::parseReply("Hi", weather(), true).error == "the reply did not finish with <|im_end|>");
  CHECK(tc::parseReply("Hi<think><|im_end|>", weather(), true).error == "the text spells the chat marker <think>");
}

TEST_CASE("wrong replies are reported, never thrown", "[toolcall][reply]") {
  const auto error = [](const std::string& text) { return tc::parseReply(text, weather()).error; };
  CHECK(error(R"(<tool_call>[{"name":"get_weather","arguments":{}}]</tool_call><|im_end|>)") ==
        R"(call 1 ("get_weather"): arguments: missing required property "location")");
  CHECK(error(R"(<tool_call>[{"name":"get_weather","arguments":{"location":"a","unit":"kelvin"}}]</tool_call><|im_end|>)") ==
        R"(call 1 ("get_weather"): parameter "unit": "kelvin" is not one of the enum values)");
  CHECK(error(R"(<tool_call>[{"name":"get_wind","arguments":{}}]</tool_call><|im_end|>)") == R"(call 1: unknown tool "get_wind")");
  CHECK(error(R"(<tool_call>[{"name":"get_time","arguments":{}},{"arguments":{}}]</tool_call><|im_end|>)") ==
        R"(call 2: "name" is missing or not a string)");
  CHECK(error(R"(<tool_call>[{"name":"get_time"}]</tool_call><|im_end|>)") ==
        R"(call 1 ("get_time"): "arguments" is missing or not an object)");
  CHECK(error(R"(<tool_call>[{"name":"get_time","arguments":{},"id":1}]</tool_call><|im_end|>)") ==
        R"(call 1 ("get_time"): unexpected key "id")");
  CHECK(error(R"(<tool_call>[3]</tool_call><|im_end|>)") == "call 1: expected an object, got a number");
  CHECK(error(R"(<tool_call>{"name":"get_time"}</tool_call><|im_end|>)") == "the tool call is an object, not an array of calls");
  CHECK(error(R"(<tool_call>[{"name":"get_time","arguments":{}}])") == "the tool call is not closed by </tool_call>");
  CHECK(error(R"(<tool_call>[{"name":"get_time","arguments":{}}]</tool_call>)") == "the reply did not finish with <|im_end|>");
  CHECK(error(R"(<tool_call>[]</tool_call>x)") == "expected <|im_end|> at byte 25");
  CHECK(error(R"(<tool_call>[]</tool_call><|im_end|>more)") == "unexpected text after <|im_end|>");
  CHECK(error(R"(<tool_call>[{"name":)") == "the tool call JSON at line 1, column 10: unexpected end of the text");
  CHECK(error(R"(<tool_call>[{"name" "x"}]</tool_call><|im_end|>)") ==
        "the tool call JSON at line 1, column 10: expected ':' after a member name");
  CHECK(error(" <think>never closed") == "<think> is not closed by </think>");
  CHECK(error("") == "the reply has no <tool_call>");
  // Whitespace that the grammar would not write is still read (unconstrained output).
  const tc::Reply spaced = tc::parseReply("<tool_call> [ {\"name\": \"get_time\", \"arguments\": {}} ] </tool_call><|im_end|>", weather());
  CHECK(spaced.error == "");
  CHECK(spaced.calls.size() == 1);
  // The first problem is reported; what could be read is kept.
  const tc::Reply partial = tc::parseReply(
      R"(<tool_call>[{"name":"get_wind","arguments":{}},{"name":"get_time","arguments":{}}]</tool_call><|im_end|>)", weather());
  CHECK(partial.error == R"(call 1: unknown tool "get_wind")");
  CHECK(partial.calls.size() == 2);
  CHECK(partial.finished);
  // Random bytes never throw.
  uint64_t state = 7;
  const std::string alphabet = "<>{}[]\":,tool_call|im_end think/ \\\x80\xC3\xA9";
  for (int i = 0; i < 2000; ++i) {
    std::string text = i % 2 ? "<tool_call>" : "";
    const int length = static_cast<int>(i % 40);
    for (int k = 0; k < length; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      text += alphabet[(state >> 33) % alphabet.size()];
    }
    CHECK_NOTHROW(tc::parseReply(text, weather(), i % 3 == 0));
  }
}
