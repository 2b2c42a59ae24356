// Tools and schemas: every supported keyword read, every refusal with its exact message, and the
// validator's verdicts and messages.
#include <catch2/catch.hpp>

#include <string>

#include "toolcall/schema.hpp"

namespace tc = needle::toolcall;
namespace json = needle::json;

namespace {

std::string refusal(const std::string& toolsJson) {
  try {
    tc::parseTools(toolsJson);
  } catch (const needle::Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// The message for one parameter "p" of tool "t" with this schema.
std::string paramRefusal(const std::string& schema) {
  return refusal(R"([{"name":"t","parameters":{"type":"object","properties":{"p":)" + schema + "}}}]");
}

std::string check(const std::string& schema, const std::string& value) {
  const std::vector<tc::Tool> tools =
      tc::parseTools(R"([{"name":"t","parameters":{"type":"object","properties":{"p":)" + schema + "}}}]");
  return tc::validate(json::parse("{\"p\":" + value + "}"), tools[0].parameters);
}

}  // namespace

TEST_CASE("every supported keyword is read", "[toolcall][schema]") {
  const std::vector<tc::Tool> tools = tc::parseTools(R"([
    {"name":"all","description":"every keyword","extra":{"kept":"for the prompt"},
     "parameters":{"type":"object","title":"t","description":"d","additionalProperties":false,
       "properties":{
         "s":{"type":"string","minLength":1,"maxLength":5,"description":"x","title":"y","default":"a","examples":["b"]},
         "e":{"type":"string","enum":["a","b"]},
         "c":{"type":"string","const":"k"},
         "i":{"type":"integer","minimum":-5,"maximum":5.0,"exclusiveMinimum":-6,"exclusiveMaximum":6,"enum":[1,2]},
         "n":{"type":"number","minimum":-0.5,"exclusiveMaximum":1e2},
         "b":{"type":"boolean","const":true},
         "z":{"type":"null"},
         "a":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3},
         "o":{"type":"object","properties":{"q":{"type":"boolean"}},"required":["q"]}},
       "required":["s","a"]}},
    {"name":"bare"}])");
  REQUIRE(tools.size() == 2);
  const tc::Tool& t = tools[0];
  CHECK(t.name == "all");
  CHECK(t.description == "every keyword");
  CHECK(t.source.find("extra") != nullptr);
  const tc::Schema& p = t.parameters;
  REQUIRE(p.properties.size() == 9);
  CHECK(p.properties[0].name == "s");
  CHECK(p.properties[0].required);
  CHECK_FALSE(p.properties[1].required);
  CHECK(p.properties[7].required);
  const tc::Schema& s = p.properties[0].schema;
  CHECK(s.type == tc::Type::String);
  CHECK(s.minLength == 1);
  CHECK(s.maxLength == 5u);
  CHECK(p.properties[1].schema.hasEnum);
  CHECK(p.properties[1].schema.enumValues.size() == 2);
  CHECK(p.properties[2].schema.constValue->text == "k");
  const tc::Schema& i = p.properties[3].schema;
  CHECK(i.type == tc::Type::Integer);
  CHECK(*i.minimum == "-5");
  CHECK(*i.maximum == "5.0");
  CHECK(*i.exclusiveMinimum == "-6");
  CHECK(*i.exclusiveMaximum == "6");
  CHECK(*p.properties[4].schema.exclusiveMaximum == "1e2");
  CHECK(p.properties[5].schema.constValue->boolean);
  CHECK(p.properties[6].schema.type == tc::Type::Null);
  const tc::Schema& a = p.properties[7].schema;
  CHECK(a.item().type == tc::Type::Integer);
  CHECK(a.minItems == 1);
  CHECK(a.maxItems == 3u);
  CHECK(p.properties[8].schema.properties[0].required);
  // A tool without parameters takes an empty object.
  CHECK(tools[1].parameters.type == tc::Type::Object);
  CHECK(tools[1].parameters.properties.empty());
}

TEST_CASE("unsupported keywords are refused by name, tool and parameter path", "[toolcall][schema]") {
  CHECK(paramRefusal(R"({"type":"string","pattern":"^a"})") == R"(tool "t" parameter "p": "pattern" is not supported)");
  CHECK(paramRefusal(R"({"type":"string","format":"date"})") == R"(tool "t" parameter "p": "format" is not supported)");
  for (const char* keyword : {"oneOf", "anyOf", "allOf", "not", "$ref", "multipleOf", "uniqueItems", "patternProperties",
                              "minProperties", "contains", "if", "$schema", "$defs", "nullable"})
    CHECK(paramRefusal(std::string(R"({"type":"integer",")") + keyword + "\":1}") ==
          std::string(R"(tool "t" parameter "p": ")") + keyword + "\" is not supported");
  CHECK(paramRefusal(R"({"type":["string","null"]})") == R"(tool "t" parameter "p": "type" lists are not supported)");
  CHECK(paramRefusal(R"({"anyOf":[{"type":"string"}]})") == R"(tool "t" parameter "p": "anyOf" is not supported)");
  // Nested paths: properties joined by dots, array items as [].
  CHECK(paramRefusal(R"({"type":"object","properties":{"q":{"type":"array","items":{"type":"string","pattern":"x"}}}})") ==
        R"(tool "t" parameter "p.q[]": "pattern" is not supported)");
  CHECK(refusal(R"([{"name":"t","parameters":{"type":"object","oneOf":[]}}])") ==
        R"(tool "t" parameters: "oneOf" is not supported)");
  // A keyword of another type.
  CHECK(paramRefusal(R"({"type":"integer","minLength":1})") == R"(tool "t" parameter "p": "minLength" does not apply to type integer)");
  CHECK(paramRefusal(R"({"type":"string","items":{}})") == R"(tool "t" parameter "p": "items" does not apply to type string)");
  CHECK(paramRefusal(R"({"type":"object","enum":[{}]})") == R"(tool "t" parameter "p": "enum" does not apply to type object)");
  CHECK(paramRefusal(R"({"type":"array","items":{"type":"null"},"const":[]})") ==
        R"(tool "t" parameter "p": "const" does not apply to type array)");
}

TEST_CASE("malformed tools and schemas get clear messages", "[toolcall][schema]") {
  CHECK(refusal(R"({"name":"t"})") == "tools: expected an array of tools, got an object");
  CHECK(refusal(R"(["t"])") == "tool 1: expected an object, got a string");
  CHECK(refusal(R"([{"description":"x"}])") == R"(tool 1: "name" is missing)");
  CHECK(refusal(R"([{"name":3}])") == R"(tool 1: "name" must be a string)");
  CHECK(refusal(R"([{"name":""}])") == R"(tool 1: "name" is empty)");
  CHECK(refusal(R"([{"name":"a"},{"name":"b"},{"name":"a"}])") == R"(tool 3: the name "a" is already used by tool 1)");
  CHECK(refusal(R"([{"name":"a","description":7}])") == R"(tool "a": "description" must be a string)");
  CHECK(refusal(R"([{"name":"a","parameters":[]}])") == R"(tool "a" parameters: expected a schema object, got an array)");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"string"}}])") == R"(tool "a" parameters: "type" must be "object")");
  CHECK(refusal(R"([{"name":"a","parameters":{"properties":{}}}])") == R"(tool "a" parameters: "type" is missing)");
  CHECK(refusal("[{\"name\":\"caf\\u00e9\",\"parameters\":{\"type\":\"date\"}}]") ==
        "tool \"caf\xC3\xA9\" parameters: type \"date\" is not supported");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"string"}},"required":["y"]}}])") ==
        R"(tool "a" parameters: "required" lists "y", which is not in "properties")");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"string"}},"required":["x","x"]}}])") ==
        R"(tool "a" parameters: "required" lists "x" twice)");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","required":"x"}}])") ==
        R"(tool "a" parameters: "required" must be an array of property names)");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","properties":[]}}])") ==
        R"(tool "a" parameters: "properties" must be an object)");
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","additionalProperties":true}}])") ==
        R"(tool "a" parameters: "additionalProperties" must be false (open objects are not supported))");
  CHECK(paramRefusal(R"("string")") == R"(tool "t" parameter "p": expected a schema object, got a string)");
  CHECK(paramRefusal(R"({"type":"string","minLength":5,"maxLength":3})") ==
        R"(tool "t" parameter "p": minLength 5 is greater than maxLength 3)");
  CHECK(paramRefusal(R"({"type":"string","minLength":-1})") == R"(tool "t" parameter "p": "minLength" must be a non-negative integer)");
  CHECK(paramRefusal(R"({"type":"string","maxLength":1.5})") == R"(tool "t" parameter "p": "maxLength" must be a non-negative integer)");
  CHECK(paramRefusal(R"({"type":"string","maxLength":1e9})") ==
        R"(tool "t" parameter "p": "maxLength" 1e9 is larger than the limit 1000000)");
  CHECK(paramRefusal(R"({"type":"integer","minimum":5,"maximum":3})") == R"(tool "t" parameter "p": minimum 5 is greater than maximum 3)");
  CHECK(paramRefusal(R"({"type":"integer","minimum":"1"})") == R"(tool "t" parameter "p": "minimum" must be a number)");
  CHECK(paramRefusal(R"({"type":"number","exclusiveMinimum":true,"minimum":0})") ==
        R"(tool "t" parameter "p": "exclusiveMinimum" must be a number (the boolean form of draft 4 is not supported))");
  CHECK(paramRefusal(R"({"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2})") ==
        R"(tool "t" parameter "p": no integer of at most 16 digits lies within the bounds)");
  CHECK(paramRefusal(R"({"type":"integer","minimum":1e16})") ==
        R"(tool "t" parameter "p": no integer of at most 16 digits lies within the bounds)");
  CHECK(paramRefusal(R"({"type":"number","exclusiveMinimum":0,"maximum":1e-9})") ==
        R"(tool "t" parameter "p": no number of at most 16 integer and 8 fraction digits lies within the bounds)");
  CHECK(paramRefusal(R"({"type":"array","minItems":3,"maxItems":2,"items":{"type":"null"}})") ==
        R"(tool "t" parameter "p": minItems 3 is greater than maxItems 2)");
  CHECK(paramRefusal(R"({"type":"array"})") == R"(tool "t" parameter "p": "items" is missing)");
  CHECK(paramRefusal(R"({"type":"array","items":[{"type":"null"}]})") ==
        R"(tool "t" parameter "p": "items" as an array (tuple form) is not supported)");
  CHECK(paramRefusal(R"({"type":"string","enum":"a"})") == R"(tool "t" parameter "p": "enum" must be an array)");
  CHECK(paramRefusal(R"({"type":"string","enum":[]})") == R"(tool "t" parameter "p": "enum" is empty)");
  CHECK(paramRefusal(R"({"type":"string","enum":["a",3]})") == R"(tool "t" parameter "p": enum value 3 is not a string)");
  CHECK(paramRefusal(R"({"type":"integer","enum":[1.5]})") == R"(tool "t" parameter "p": enum value 1.5 is not an integer)");
  CHECK(paramRefusal(R"({"type":"boolean","enum":[null]})") == R"(tool "t" parameter "p": enum value null is not a boolean)");
  CHECK(paramRefusal(R"({"type":"string","enum":["abc","a"],"minLength":2})") ==
        R"(tool "t" parameter "p": enum value "a" does not satisfy the schema: string has 1 character, fewer than minLength 2)");
  CHECK(paramRefusal(R"({"type":"integer","const":7,"maximum":5})") ==
        R"(tool "t" parameter "p": const value 7 does not satisfy the schema: 7 is greater than maximum 5)");
  CHECK(paramRefusal(R"({"type":"string","enum":["a","b"],"const":"c"})") ==
        R"(tool "t" parameter "p": "const" is not one of the "enum" values)");
  CHECK(paramRefusal(R"({"type":"null","const":false})") == R"(tool "t" parameter "p": const value false is not null)");
  CHECK(refusal("[{\"name\":\"a\",\"parameters\":") == "tools JSON at line 1, column 27: unexpected end of the text");
}

TEST_CASE("limits: properties per object and nesting", "[toolcall][schema]") {
  std::string properties;
  for (int i = 0; i < 65; ++i) properties += std::string(i ? "," : "") + "\"k" + std::to_string(i) + "\":{\"type\":\"null\"}";
  CHECK(refusal(R"([{"name":"a","parameters":{"type":"object","properties":{)" + properties + "}}}]") ==
        R"(tool "a" parameters: more than 64 properties)");
  // Ten levels of objects and arrays (the parameters object is the first) are fine; eleven are not.
  const auto nested = [](int levels) {
    std::string schema = R"({"type":"string"})";
    for (int i = 1; i < levels; ++i) schema = R"({"type":"array","items":)" + schema + "}";
    return R"([{"name":"a","parameters":{"type":"object","properties":{"p":)" + schema + "}}}]";
  };
  CHECK(refusal(nested(10)) == "(accepted)");
  CHECK(refusal(nested(11)) ==
        R"(tool "a" parameter "p[][][][][][][][][]": nested deeper than 10 levels of objects and arrays)");
}

TEST_CASE("the validator: verdicts and messages", "[toolcall][schema]") {
  CHECK(check(R"({"type":"string","minLength":2,"maxLength":3})", "\"\\u00e9\\ud83d\\ude00\"") == "");
  CHECK(check(R"({"type":"string","minLength":2})", "\"\xF0\x9F\x91\x8D\"") ==
        R"(parameter "p": string has 1 character, fewer than minLength 2)");
  CHECK(check(R"({"type":"string","maxLength":2})", "\"abc\"") == R"(parameter "p": string has 3 characters, more than maxLength 2)");
  CHECK(check(R"({"type":"string"})", "3") == R"(parameter "p": expected a string, got a number)");
  CHECK(check(R"({"type":"integer"})", "1.0") == "");  // integral
  CHECK(check(R"({"type":"integer"})", "1.5") == R"(parameter "p": 1.5 is not an integer)");
  CHECK(check(R"({"type":"integer"})", "true") == R"(parameter "p": expected an integer, got a boolean)");
  CHECK(check(R"({"type":"number","minimum":0.1})", "0.09999999999999999999") ==
        R"(parameter "p": 0.09999999999999999999 is less than minimum 0.1)");
  CHECK(check(R"({"type":"number","exclusiveMinimum":0})", "0") == R"(parameter "p": 0 is not greater than exclusiveMinimum 0)");
  CHECK(check(R"({"type":"number","maximum":10})", "1e1") == "");
  CHECK(check(R"({"type":"number","maximum":10})", "10.5") == R"(parameter "p": 10.5 is greater than maximum 10)");
  CHECK(check(R"({"type":"number","exclusiveMaximum":10})", "10.0") == R"(parameter "p": 10.0 is not less than exclusiveMaximum 10)");
  CHECK(check(R"({"type":"string","enum":["a","b"]})", "\"c\"") == R"(parameter "p": "c" is not one of the enum values)");
  CHECK(check(R"({"type":"number","enum":[1,2]})", "2.0") == "");  // by value
  CHECK(check(R"({"type":"boolean","const":true})", "false") == R"(parameter "p": false is not the const value true)");
  CHECK(check(R"({"type":"null"})", "null") == "");
  CHECK(check(R"({"type":"array","items":{"type":"integer"},"minItems":2})", "[1]") ==
        R"(parameter "p": array has 1 item, fewer than minItems 2)");
  CHECK(check(R"({"type":"array","items":{"type":"integer"},"maxItems":1})", "[1,2]") ==
        R"(parameter "p": array has 2 items, more than maxItems 1)");
  CHECK(check(R"({"type":"array","items":{"type":"integer"}})", "[1,\"x\"]") == R"(parameter "p[1]": expected an integer, got a string)");
  CHECK(check(R"({"type":"object","properties":{"q":{"type":"object","properties":{"r":{"type":"null"}},"required":["r"]}}})",
              R"({"q":{}})") == R"(parameter "p.q": missing required property "r")");
  CHECK(check(R"({"type":"object","properties":{}})", R"({"x":1})") == R"(parameter "p": unknown property "x")");
  const std::vector<tc::Tool> tools =
      tc::parseTools(R"([{"name":"t","parameters":{"type":"object","properties":{"a":{"type":"null"}},"required":["a"]}}])");
  CHECK(tc::validate(json::parse("{}"), tools[0].parameters) == R"(arguments: missing required property "a")");
  CHECK(tc::validate(json::parse("[]"), tools[0].parameters) == "arguments: expected an object, got an array");
  CHECK(tc::validate(json::parse(R"({"a":null,"b":1})"), tools[0].parameters) == R"(arguments: unknown property "b")");
  // Long values are cut in messages.
  CHECK(check(R"({"type":"string","enum":["a"]})", "\"" + std::string(100, 'x') + "\"") ==
        "parameter \"p\": \"" + std::string(56, 'x') + "... is not one of the enum values");
}
