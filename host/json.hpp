// json.hpp: the project's one JSON reader and writer (RFC 8259), used for safetensors headers, tool
// schemas, tool calls and tool results (docs/toolcall.md, "JSON").
//
// The reader is strict and bounded: objects keep their members in the order written, a member name
// may appear only once, numbers are kept as the literal text written (nothing is rounded), strings
// must be valid UTF-8 with well-formed \u escapes, and nesting depth and text size have limits. Every
// failure is an Error that names the text and the place: a file offset for machine-written files, a
// line and column for text typed by a person.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.hpp"

namespace needle::json {

struct Member;

// One JSON value. Arrays and objects own their children.
struct Value {
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;              // String: the decoded UTF-8; Number: the literal as written
  std::vector<Value> items;      // Array
  std::vector<Member> members;   // Object, in the order written
  uint64_t offset = 0;           // where the value starts in the text (plus ParseOptions::base)

  static Value null();
  static Value fromBool(bool b);
  static Value number(std::string literal);  // the caller passes a valid JSON number literal
  static Value string(std::string utf8);
  static Value array(std::vector<Value> items = {});
  static Value object(std::vector<Member> members = {});

  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
  // The member named `name` of an object, or nullptr (also for a value that is not an object).
  const Value* find(std::string_view name) const;
};

struct Member {
  std::string name;
  Value value;
};

// "an object", "an array", "a string", "a number", "a boolean", "null": for messages.
const char* kindName(Value::Kind kind);

// How a parse reports where things are.
struct ParseOptions {
  std::string source = "JSON";  // names the text in messages: "tools JSON", "... : header JSON"
  enum class Where { LineColumn, FileOffset };
  Where where = Where::LineColumn;  // "at line 3, column 7" (columns count characters, from 1) or
                                    // "at file offset 1234" (base + byte offset)
  uint64_t base = 0;                // added to byte offsets: Value::offset and FileOffset messages
  int maxDepth = 64;                // arrays and objects nested deeper are refused
  size_t maxBytes = size_t{16} << 20;  // longer texts are refused before parsing
};

// The one value that makes up the whole text (whitespace around it allowed).
Value parse(std::string_view text, const ParseOptions& options = {});
// One value at the start of `text` (leading whitespace allowed); *end receives the offset just past
// it. Text after the value is left alone: this reads a value embedded in other text.
Value parsePrefix(std::string_view text, size_t* end, const ParseOptions& options = {});

// Compact form, byte for byte what Python's json.dumps(v, separators=(",", ":"), ensure_ascii=True)
// writes for the same value: strings escaped as quote() does, numbers as their literal text.
std::string compact(const Value& value);
// Readable form for the page, as Python's json.dumps(v, indent=2, ensure_ascii=False): two-space
// indentation, ", " never at a line end, ": " after a name, empty containers as [] and {},
// non-ASCII text kept as UTF-8 (only " \ and C0 controls are escaped).
std::string pretty(const Value& value);
// A JSON string literal, quotes included, ASCII only: \" \\ \n \r \t \b \f; other C0 controls and
// U+007F as \u00XX; every non-ASCII code point as \uXXXX (lowercase hex), above U+FFFF as a UTF-16
// surrogate pair. `utf8` must be valid UTF-8 (Error otherwise).
std::string quote(std::string_view utf8);
void appendQuoted(std::string& out, std::string_view utf8);
// A string literal as pretty() writes it (non-ASCII kept as UTF-8), for messages meant for people.
std::string quoteReadable(std::string_view utf8);

// Deep equality as JSON values: numbers by exact decimal value (1.0 == 1 == 1e0), objects by their
// members regardless of order, arrays and strings exactly.
bool equal(const Value& a, const Value& b);

// A number literal as sign x digits x 10^exponent, `digits` without leading or trailing zeros (zero
// has none, whatever its sign). The exponent saturates at +-2^40, far past any literal's digits.
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};
// Error if `literal` is not a JSON number literal.
Decimal decimal(std::string_view literal);

// Exact comparison of two JSON number literals by decimal value: -1, 0 or 1. Error if either is not
// a JSON number literal.
int compareNumbers(std::string_view a, std::string_view b);
// Whether a JSON number literal has an integral value (3, -0, 1.0, 2e3 yes; 1.5, 1e-1 no).
bool isIntegral(std::string_view literal);
// Whether `text` is exactly one JSON number literal.
bool isNumberLiteral(std::string_view text);

// Length of the well-formed UTF-8 sequence that starts at text[at] (no overlong forms, surrogates or
// values past U+10FFFF), or 0 when the bytes there are not one.
size_t utf8SequenceLength(std::string_view text, size_t at);
// The code point of the well-formed sequence at text[at] (utf8SequenceLength(text, at) > 0).
uint32_t codePointAt(std::string_view text, size_t at);
bool isValidUtf8(std::string_view text);
// Number of code points in valid UTF-8 text.
size_t codePointCount(std::string_view utf8);

}  // namespace needle::json
