// json.cpp: the strict JSON reader, the Python-identical compact writer, the pretty printer, and
// exact comparison of number literals (docs/toolcall.md, "JSON").
#include "json.hpp"

#include <algorithm>
#include <cstring>

#include "utf8.hpp"

namespace needle::json {

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

Value Value::null() { return Value{}; }

Value Value::fromBool(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.boolean = b;
  return v;
}

Value Value::number(std::string literal) {
  Value v;
  v.kind = Kind::Number;
  v.text = std::move(literal);
  return v;
}

Value Value::string(std::string utf8) {
  Value v;
  v.kind = Kind::String;
  v.text = std::move(utf8);
  return v;
}

Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind = Kind::Array;
  v.items = std::move(items);
  return v;
}

Value Value::object(std::vector<Member> members) {
  Value v;
  v.kind = Kind::Object;
  v.members = std::move(members);
  return v;
}

const Value* Value::find(std::string_view name) const {
  if (kind != Kind::Object) return nullptr;
  for (const Member& m : members)
    if (m.name == name) return &m.value;
  return nullptr;
}

const char* kindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "a boolean";
    case Value::Kind::Number: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Object: return "an object";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// UTF-8
// ---------------------------------------------------------------------------------------------

size_t utf8SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  if (at >= text.size()) return 0;
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 == 0xE0) n = 3, lo = 0xA0;       // no overlong three-byte forms
  else if (b0 == 0xED) n = 3, hi = 0x9F;       // no surrogates
  else if (b0 >= 0xE1 && b0 <= 0xEF) n = 3;
  else if (b0 == 0xF0) n = 4, lo = 0x90;       // no overlong four-byte forms
  else if (b0 == 0xF4) n = 4, hi = 0x8F;       // nothing past U+10FFFF
  else if (b0 >= 0xF1 && b0 <= 0xF3) n = 4;
  else return 0;
  if (text.size() - at < n) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

uint32_t codePointAt(std::string_view text, size_t at) {
  const size_t n = utf8SequenceLength(text, at);
  const unsigned char b0 = static_cast<unsigned char>(text[at]);
  if (n <= 1) return b0;
  uint32_t cp = b0 & (0xFF >> (n + 1));
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3F);
  return cp;
}

bool isValidUtf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8SequenceLength(text, at);
    if (n == 0) return false;
    at += n;
  }
  return true;
}

size_t codePointCount(std::string_view utf8) {
  size_t count = 0;
  for (unsigned char c : utf8) count += (c & 0xC0) != 0x80;
  return count;
}

// ---------------------------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : text_(text), options_(options) {
    if (text.size() > options.maxBytes)
      throw Error(options.source + ": " + std::to_string(text.size()) + " bytes, more than the limit of " +
                  std::to_string(options.maxBytes));
  }

  Value parseValueAt(size_t* end) {
    skipSpace();
    Value value = parseValue(0);
    *end = pos_;
    return value;
  }

  Value parseDocument() {
    size_t end = 0;
    Value value = parseValueAt(&end);
    skipSpace();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  // "SOURCE at line L, column C: WHY" or "SOURCE at file offset N: WHY".
  [[noreturn]] void fail(const std::string& why) const {
    if (options_.where == ParseOptions::Where::FileOffset)
      throw Error(options_.source + " at file offset " + std::to_string(options_.base + pos_) + ": " + why);
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {  // a column is a character, not a byte
        ++column;
      }
    }
    throw Error(options_.source + " at line " + std::to_string(line) + ", column " + std::to_string(column) +
                ": " + why);
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void expect(char c, const char* what) {
    if (atEnd() || text_[pos_] != c) fail(std::string("expected ") + what);
    ++pos_;
  }
  void skipSpace() {
    while (!atEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (text_.size() - pos_ < n || text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Value parseValue(int depth) {
    if (atEnd()) fail("unexpected end of the text");
    const char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= options_.maxDepth) fail("nesting deeper than " + std::to_string(options_.maxDepth));
      return c == '{' ? parseObject(depth) : parseArray(depth);
    }
    Value v;
    v.offset = options_.base + pos_;
    if (c == '"') {
      v.kind = Value::Kind::String;
      v.text = parseString();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Kind::Number;
      v.text = parseNumber();
    } else if (literal("true")) {
      v.kind = Value::Kind::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Value::Kind::Bool;
    } else if (!literal("null")) {
      fail(std::string("unexpected character '") +
           (c >= 0x20 && c < 0x7F ? std::string(1, c) : std::string("?")) + "'");
    }
    return v;
  }

  Value parseObject(int depth) {
    Value v;
    v.kind = Value::Kind::Object;
    v.offset = options_.base + pos_;
    ++pos_;  // '{'
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      skipSpace();
      if (peek() != '"') fail("expected a member name in double quotes");
      const size_t nameAt = pos_;
      std::string name = parseString();
      for (const Member& member : v.members) {
        if (member.name == name) {
          pos_ = nameAt;
          fail("member \"" + name + "\" appears twice");
        }
      }
      skipSpace();
      expect(':', "':' after a member name");
      skipSpace();
      Value value = parseValue(depth + 1);
      v.members.push_back(Member{std::move(name), std::move(value)});
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "',' or '}' after an object member");
      return v;
    }
  }

  Value parseArray(int depth) {
    Value v;
    v.kind = Value::Kind::Array;
    v.offset = options_.base + pos_;
    ++pos_;  // '['
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      skipSpace();
      v.items.push_back(parseValue(depth + 1));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']', "',' or ']' after an array item");
      return v;
    }
  }

  // The literal text of a number, its grammar checked: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string parseNumber() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (!atEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("malformed number");
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_];
      value <<= 4;
      if (h >= '0' && h <= '9') value |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') value |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') value |= static_cast<uint32_t>(h - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
      ++pos_;
    }
    return value;
  }

  std::string parseString() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (atEnd()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character inside a string (write it as an escape)");
      if (c == '\\') {
        ++pos_;
        if (atEnd()) fail("unterminated escape");
        const char e = text_[pos_];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            ++pos_;
            uint32_t cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
              if (!literal("\\u")) fail("unpaired surrogate in a \\u escape");
              const uint32_t low = hex4();
              if (low < 0xDC00 || low > 0xDFFF) fail("unpaired surrogate in a \\u escape");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail("unpaired surrogate in a \\u escape");
            }
            appendUtf8(out, cp);
            continue;
          }
          default: fail("unknown escape in a string");
        }
        ++pos_;
        continue;
      }
      const size_t n = utf8SequenceLength(text_, pos_);
      if (n == 0) fail("invalid UTF-8 inside a string");
      out.append(text_.substr(pos_, n));
      pos_ += n;
    }
  }

  std::string_view text_;
  const ParseOptions& options_;
  size_t pos_ = 0;
};

}  // namespace

Value parse(std::string_view text, const ParseOptions& options) { return Parser(text, options).parseDocument(); }

Value parsePrefix(std::string_view text, size_t* end, const ParseOptions& options) {
  return Parser(text, options).parseValueAt(end);
}

// ---------------------------------------------------------------------------------------------
// The writers
// ---------------------------------------------------------------------------------------------

namespace {

constexpr char kHex[] = "0123456789abcdef";

void appendU16Escape(std::string& out, uint32_t unit) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
}

// The escape of an ASCII byte as Python writes it, or nullptr for a byte written as itself.
const char* shortEscape(unsigned char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: return nullptr;
  }
}

// A string literal; `asciiOnly` escapes U+007F and everything past ASCII (ensure_ascii=True).
void appendString(std::string& out, std::string_view utf8, bool asciiOnly) {
  out += '"';
  for (size_t at = 0; at < utf8.size();) {
    const unsigned char c = static_cast<unsigned char>(utf8[at]);
    if (c < 0x80) {
      if (const char* e = shortEscape(c)) out += e;
      else if (c < 0x20 || (asciiOnly && c == 0x7F)) appendU16Escape(out, c);
      else out += static_cast<char>(c);
      ++at;
      continue;
    }
    const size_t n = utf8SequenceLength(utf8, at);
    if (n == 0) throw Error("JSON writer: invalid UTF-8 at byte " + std::to_string(at) + " of a string");
    if (!asciiOnly) {
      out.append(utf8.substr(at, n));
    } else {
      uint32_t cp = codePointAt(utf8, at);
      if (cp < 0x10000) {
        appendU16Escape(out, cp);
      } else {  // a UTF-16 surrogate pair, as Python writes it
        cp -= 0x10000;
        appendU16Escape(out, 0xD800 + (cp >> 10));
        appendU16Escape(out, 0xDC00 + (cp & 0x3FF));
      }
    }
    at += n;
  }
  out += '"';
}

void appendCompact(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::Null: out += "null"; return;
    case Value::Kind::Bool: out += v.boolean ? "true" : "false"; return;
    case Value::Kind::Number: out += v.text; return;
    case Value::Kind::String: appendString(out, v.text, true); return;
    case Value::Kind::Array:
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ',';
        appendCompact(out, v.items[i]);
      }
      out += ']';
      return;
    case Value::Kind::Object:
      out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out += ',';
        appendString(out, v.members[i].name, true);
        out += ':';
        appendCompact(out, v.members[i].value);
      }
      out += '}';
      return;
  }
}

void appendPretty(std::string& out, const Value& v, size_t indent) {
  const auto newline = [&](size_t level) {
    out += '\n';
    out.append(2 * level, ' ');
  };
  switch (v.kind) {
    case Value::Kind::String: appendString(out, v.text, false); return;
    case Value::Kind::Array:
      if (v.items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ',';
        newline(indent + 1);
        appendPretty(out, v.items[i], indent + 1);
      }
      newline(indent);
      out += ']';
      return;
    case Value::Kind::Object:
      if (v.members.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out += ',';
        newline(indent + 1);
        appendString(out, v.members[i].name, false);
        out += ": ";
        appendPretty(out, v.members[i].value, indent + 1);
      }
      newline(indent);
      out += '}';
      return;
    default: appendCompact(out, v); return;
  }
}

}  // namespace

std::string compact(const Value& value) {
  std::string out;
  appendCompact(out, value);
  return out;
}

std::string pretty(const Value& value) {
  std::string out;
  appendPretty(out, value, 0);
  return out;
}

void appendQuoted(std::string& out, std::string_view utf8) { appendString(out, utf8, true); }

std::string quoteReadable(std::string_view utf8) {
  std::string out;
  appendString(out, utf8, false);
  return out;
}

std::string quote(std::string_view utf8) {
  std::string out;
  appendString(out, utf8, true);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Numbers by exact decimal value
// ---------------------------------------------------------------------------------------------

namespace {

bool readDecimal(std::string_view s, Decimal* out) {
  Decimal d;
  size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    d.negative = true;
    ++i;
  }
  const auto isDigit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  if (!isDigit(i)) return false;
  std::string all;  // integer and fraction digits together
  if (s[i] == '0') {
    all += '0';
    ++i;
  } else {
    while (isDigit(i)) all += s[i++];
  }
  int64_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!isDigit(i)) return false;
    while (isDigit(i)) {
      all += s[i++];
      ++fraction;
    }
  }
  int64_t exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negativeExponent = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negativeExponent = s[i++] == '-';
    if (!isDigit(i)) return false;
    while (isDigit(i)) {
      exponent = std::min<int64_t>(exponent * 10 + (s[i++] - '0'), int64_t{1} << 40);
    }
    if (negativeExponent) exponent = -exponent;
  }
  if (i != s.size()) return false;
  const size_t first = all.find_first_not_of('0');
  if (first == std::string::npos) {  // zero, whatever its sign
    *out = Decimal{};
    return true;
  }
  const size_t last = all.find_last_not_of('0');
  d.digits = all.substr(first, last + 1 - first);
  d.exponent = exponent - fraction + static_cast<int64_t>(all.size() - 1 - last);
  *out = d;
  return true;
}

// Compares magnitudes: the position of the leading digit first, then the digits.
int compareMagnitude(const Decimal& a, const Decimal& b) {
  if (a.digits.empty() || b.digits.empty()) return a.digits.empty() ? (b.digits.empty() ? 0 : -1) : 1;
  const int64_t orderA = a.exponent + static_cast<int64_t>(a.digits.size());
  const int64_t orderB = b.exponent + static_cast<int64_t>(b.digits.size());
  if (orderA != orderB) return orderA < orderB ? -1 : 1;
  const int c = a.digits.compare(b.digits);  // same leading position: digit by digit, shorter = zeros
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

Decimal decimal(std::string_view literal) {
  Decimal d;
  if (!readDecimal(literal, &d)) throw Error("\"" + std::string(literal) + "\" is not a JSON number");
  return d;
}

bool isNumberLiteral(std::string_view text) {
  Decimal d;
  return readDecimal(text, &d);
}

int compareNumbers(std::string_view a, std::string_view b) {
  const Decimal x = decimal(a), y = decimal(b);
  const bool xNegative = x.negative && !x.digits.empty(), yNegative = y.negative && !y.digits.empty();
  if (xNegative != yNegative) return xNegative ? -1 : 1;
  const int magnitude = compareMagnitude(x, y);
  return xNegative ? -magnitude : magnitude;
}

bool isIntegral(std::string_view literal) {
  const Decimal d = decimal(literal);
  return d.digits.empty() || d.exponent >= 0;
}

bool equal(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Null: return true;
    case Value::Kind::Bool: return a.boolean == b.boolean;
    case Value::Kind::Number: return compareNumbers(a.text, b.text) == 0;
    case Value::Kind::String: return a.text == b.text;
    case Value::Kind::Array:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!equal(a.items[i], b.items[i])) return false;
      return true;
    case Value::Kind::Object:
      if (a.members.size() != b.members.size()) return false;
      for (const Member& m : a.members) {
        const Value* other = b.find(m.name);
        if (!other || !equal(m.value, *other)) return false;
      }
      return true;
  }
  return false;
}

}  // namespace needle::json
