// host/json: round trips, Python-identical escaping (outputs pinned from /usr/bin/python3's json.dumps),
// the pretty printer, errors with line and column or file offset, limits, exact number comparison.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "json.hpp"

using needle::json::Value;
namespace json = needle::json;

namespace {

std::string parseError(const std::string& text, const json::ParseOptions& options = {}) {
  try {
    json::parse(text, options);
  } catch (const needle::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("compact strings are escaped exactly as Python's json.dumps with ensure_ascii", "[toolcall][json]") {
  // Each pair: the UTF-8 text, and what json.dumps(text, separators=(",", ":")) printed.
  const std::vector<std::pair<std::string, std::string>> pinned = {
      {"", "\"\""},
      {"plain", "\"plain\""},
      {"quote\" back\\ slash/", "\"quote\\\" back\\\\ slash/\""},
      {"\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""},
      {std::string("\x00\x01\x1f\x7f", 4), "\"\\u0000\\u0001\\u001f\\u007f\""},
      {"caf\xC3\xA9 \xC3\xBC\xC3\x9F", "\"caf\\u00e9 \\u00fc\\u00df\""},
      {"\xE2\x82\xAC\xE2\x80\xA8\xE2\x80\xA9\xEF\xBB\xBF\xEF\xBF\xBF", "\"\\u20ac\\u2028\\u2029\\ufeff\\uffff\""},
      {"\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF4\x8F\xBF\xBF \xF0\x90\x80\x80",
       "\"\\ud83d\\udc4d\\ud83c\\udffd \\udbff\\udfff \\ud800\\udc00\""},
      {"\xE0\xA0\x80\xDF\xBF", "\"\\u0800\\u07ff\""},
      {"<tool_call>", "\"<tool_call>\""},
  };
  for (const auto& [text, python] : pinned) {
    CAPTURE(text);
    CHECK(json::quote(text) == python);
    CHECK(json::compact(Value::string(text)) == python);
    // And it reads back to the same text.
    CHECK(json::parse(python).text == text);
  }
  CHECK_THROWS_WITH(json::quote("a\xC3"), Catch::Contains("invalid UTF-8 at byte 1"));
}

TEST_CASE("compact and pretty forms of a document match Python's", "[toolcall][json]") {
  const std::string source =
      "{\"a\": [1, -0.5, 1e5, {\"b\": null, \"c\": true, \"d\": false}], \"e\": {}, \"f\": [ ],"
      " \"g\": \"\\u00e9\\n\\ud83d\\udc4d\", \"h\": \"\\u007f\"}";
  const Value v = json::parse(source);
  // Python prints 100000.0 for 1e5 (it reads a float); we keep every literal as written.
  CHECK(json::compact(v) ==
        "{\"a\":[1,-0.5,1e5,{\"b\":null,\"c\":true,\"d\":false}],\"e\":{},\"f\":[],"
        "\"g\":\"\\u00e9\\n\\ud83d\\udc4d\",\"h\":\"\\u007f\"}");
  CHECK(json::pretty(v) ==
        "{\n  \"a\": [\n    1,\n    -0.5,\n    1e5,\n    {\n      \"b\": null,\n      \"c\": true,\n"
        "      \"d\": false\n    }\n  ],\n  \"e\": {},\n  \"f\": [],\n  \"g\": \"\xC3\xA9\\n\xF0\x9F\x91\x8D\",\n"
        "  \"h\": \"\x7F\"\n}");
  // Round trips: compact and pretty both read back to a value with the same compact form.
  CHECK(json::compact(json::parse(json::compact(v))) == json::compact(v));
  CHECK(json::compact(json::parse(json::pretty(v))) == json::compact(v));
}

TEST_CASE("the reader keeps member order, literals, offsets; parsePrefix stops after the value",
          "[toolcall][json]") {
  const Value v = json::parse(" {\"z\":1,\"a\":-0.0e+00,\"m\":[true,null]} ");
  REQUIRE(v.isObject());
  REQUIRE(v.members.size() == 3);
  CHECK(v.members[0].name == "z");
  CHECK(v.members[1].name == "a");
  CHECK(v.members[1].value.text == "-0.0e+00");
  CHECK(v.offset == 1);
  CHECK(v.members[2].value.offset == 25);
  CHECK(v.find("m")->items[1].isNull());
  CHECK(v.find("q") == nullptr);

  size_t end = 0;
  const Value first = json::parsePrefix("  [1,{\"a\":\"]\"}]</tool_call>", &end);
  CHECK(json::compact(first) == "[1,{\"a\":\"]\"}]");
  CHECK(end == 15);
}

TEST_CASE("reader errors give line and column, or a file offset", "[toolcall][json]") {
  json::ParseOptions typed;
  typed.source = "tools JSON";
  CHECK(parseError("[\n  {\"name\": \"x\",}\n]", typed) ==
        "tools JSON at line 2, column 16: expected a member name in double quotes");
  CHECK(parseError("{\"a\":1,\n\"a\":2}", typed) == "tools JSON at line 2, column 1: member \"a\" appears twice");
  // Columns count characters: "é" is two bytes, one column.
  CHECK(parseError("[\"\xC3\xA9\", tru]", typed) == "tools JSON at line 1, column 7: unexpected character 't'");
  CHECK(parseError("[1 2]", typed) == "tools JSON at line 1, column 4: expected ',' or ']' after an array item");
  CHECK(parseError("{\"a\" 1}", typed) == "tools JSON at line 1, column 6: expected ':' after a member name");
  CHECK(parseError("[01]", typed) == "tools JSON at line 1, column 3: expected ',' or ']' after an array item");
  CHECK(parseError("[1.]", typed) == "tools JSON at line 1, column 4: malformed number");
  CHECK(parseError("\"a\nb\"", typed) ==
        "tools JSON at line 1, column 3: control character inside a string (write it as an escape)");
  CHECK(parseError("\"\\x\"", typed) == "tools JSON at line 1, column 3: unknown escape in a string");
  CHECK(parseError("\"\\ud800\"", typed) == "tools JSON at line 1, column 8: unpaired surrogate in a \\u escape");
  CHECK(parseError("\"\\udc00\"", typed) == "tools JSON at line 1, column 8: unpaired surrogate in a \\u escape");
  CHECK(parseError("\"\\u12G4\"", typed) == "tools JSON at line 1, column 6: bad hex digit in a \\u escape");
  CHECK(parseError("\"\xC0\x80\"", typed) == "tools JSON at line 1, column 2: invalid UTF-8 inside a string");
  CHECK(parseError("\"abc", typed) == "tools JSON at line 1, column 5: unterminated string");
  CHECK(parseError("[1] x", typed) == "tools JSON at line 1, column 5: unexpected text after the JSON value");
  CHECK(parseError("", typed) == "tools JSON at line 1, column 1: unexpected end of the text");

  json::ParseOptions file;
  file.source = "f.safetensors: header JSON";
  file.where = json::ParseOptions::Where::FileOffset;
  file.base = 8;
  CHECK(parseError("{\"a\":}", file) == "f.safetensors: header JSON at file offset 13: unexpected character '}'");
}

TEST_CASE("depth and size limits", "[toolcall][json]") {
  json::ParseOptions options;
  options.maxDepth = 3;
  CHECK_NOTHROW(json::parse("[[[1]]]", options));
  CHECK(parseError("[[[[1]]]]", options) == "JSON at line 1, column 4: nesting deeper than 3");
  // Deep input is refused without exhausting the stack.
  CHECK(parseError(std::string(1000000, '[')) == "JSON at line 1, column 65: nesting deeper than 64");
  options.maxBytes = 10;
  CHECK(parseError("[1,2,3,4,5,6]", options) == "JSON: 13 bytes, more than the limit of 10");
}

TEST_CASE("numbers compare by exact decimal value", "[toolcall][json]") {
  CHECK(json::compareNumbers("1", "1.0") == 0);
  CHECK(json::compareNumbers("-0", "0") == 0);
  CHECK(json::compareNumbers("0.0e5", "-0.000") == 0);
  CHECK(json::compareNumbers("100", "1e2") == 0);
  CHECK(json::compareNumbers("12", "123") == -1);
  CHECK(json::compareNumbers("0.12", "0.123") == -1);
  CHECK(json::compareNumbers("-0.12", "-0.123") == 1);
  CHECK(json::compareNumbers("1.4999999999999999999", "1.5") == -1);
  CHECK(json::compareNumbers("9007199254740993", "9007199254740992") == 1);  // past double precision
  CHECK(json::compareNumbers("1e-400", "0") == 1);
  CHECK(json::compareNumbers("-1e400", "-1e399") == -1);
  CHECK(json::compareNumbers("1e99999999999999999999", "1e400") == 1);  // exponent saturates
  CHECK(json::isIntegral("3"));
  CHECK(json::isIntegral("-0"));
  CHECK(json::isIntegral("1.0"));
  CHECK(json::isIntegral("2.5e1"));
  CHECK_FALSE(json::isIntegral("1.5"));
  CHECK_FALSE(json::isIntegral("1e-1"));
  CHECK(json::isNumberLiteral("-12.5E+3"));
  CHECK_FALSE(json::isNumberLiteral("+1"));
  CHECK_FALSE(json::isNumberLiteral("01"));
  CHECK_FALSE(json::isNumberLiteral("1."));
  CHECK_THROWS_WITH(json::compareNumbers("x", "1"), "\"x\" is not a JSON number");

  CHECK(json::equal(json::parse("{\"a\":[1,{\"b\":2.0}],\"c\":\"x\"}"), json::parse("{\"c\":\"x\",\"a\":[1e0,{\"b\":2}]}")));
  CHECK_FALSE(json::equal(json::parse("[1,2]"), json::parse("[2,1]")));
  CHECK_FALSE(json::equal(json::parse("{\"a\":1}"), json::parse("{\"a\":1,\"b\":1}")));
  CHECK_FALSE(json::equal(json::parse("\"1\""), json::parse("1")));
}

TEST_CASE("UTF-8 helpers", "[toolcall][json]") {
  CHECK(json::isValidUtf8("caf\xC3\xA9 \xF0\x9F\x91\x8D"));
  CHECK_FALSE(json::isValidUtf8("\xED\xA0\x80"));  // a surrogate
  CHECK_FALSE(json::isValidUtf8("\xE0\x80\x80"));  // overlong
  CHECK_FALSE(json::isValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(json::isValidUtf8("\xC3"));
  CHECK(json::codePointCount("caf\xC3\xA9 \xF0\x9F\x91\x8D") == 6);
}
