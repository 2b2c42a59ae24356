// The call grammar on written replies: what it accepts and refuses (and where), numbers at their
// bounds, string lengths with escapes and non-ASCII, enums sharing prefixes, nesting, [], two calls,
// think, allowText; forced() and minCompletion() on the states along the way.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace toolcall_test;

namespace {

const char* kWeather = R"([{"name":"get_weather","description":"Weather for a city",
  "parameters":{"type":"object","properties":{
    "location":{"type":"string","description":"city"},
    "unit":{"type":"string","enum":["celsius","fahrenheit"]}},
  "required":["location"]}},
 {"name":"get_time","parameters":{"type":"object","properties":{}}}])";

// A reply around CALLS.
std::string call(const std::string& calls) { return " <tool_call>" + calls + "</tool_call><|im_end|>"; }

// Checks minCompletion and forced() on every state along an accepted reply.
void checkAlong(const tc::Grammar& g, const std::string& reply) {
  tc::Matcher m(g);
  for (tc::Symbol s : tc::symbolsOf(reply)) {
    checkMinCompletion(m);
    checkForced(m);
    REQUIRE(m.accept(s));
  }
  checkMinCompletion(m);
  CHECK(m.done());
}

}  // namespace

TEST_CASE("the reply frame: prefix space, think, tool call, end", "[toolcall][grammar]") {
  const tc::Grammar g(tools(kWeather));
  const std::string weather = R"([{"name":"get_weather","arguments":{"location":"Paris"}}])";
  CHECK(accepts(g, call(weather)));
  CHECK(accepts(g, "<tool_call>[]</tool_call><|im_end|>"));  // the prefix space is optional
  CHECK(accepts(g, " <think>Paris, so get_weather.</think>\n<tool_call>" + weather + "</tool_call><|im_end|>"));
  CHECK(accepts(g, "<think></think><tool_call>[]</tool_call><|im_end|>"));  // the newline is optional
  CHECK(accepts(g, call(R"([{"name":"get_weather","arguments":{"unit":"celsius","location":"Oslo"}},)"
                        R"({"name":"get_time","arguments":{}}])")));
  for (const std::string& reply : {call(weather), call("[]"), std::string(" <think>x\ny</think>\n<tool_call>[]</tool_call><|im_end|>")})
    checkAlong(g, reply);

  // Refused, at the first symbol that cannot be right.
  CHECK(firstRefused(g, "  <tool_call>") == 1);                   // one prefix space only
  CHECK(firstRefused(g, " <tool_call>[ ]") == 13);                // no whitespace in CALLS
  CHECK(firstRefused(g, " Hello") == 1);                           // no free text without allowText
  CHECK(firstRefused(g, call("[]") + " ") == static_cast<long>(call("[]").size()));  // nothing after the end
  CHECK(firstRefused(g, " <tool_call>[]<|im_end|>") == 14);
  CHECK(firstRefused(g, " <think>a<tool_call>") == 9);             // no marker inside THINK
  CHECK(firstRefused(g, " <think>a</think>\n\n") == 18);           // one newline only
  CHECK(firstRefused(g, call(R"([{"name":"get_weather","arguments":{}}])")) ==
        static_cast<long>(std::string(R"( <tool_call>[{"name":"get_weather","arguments":{)").size()));  // location is required
  CHECK(firstRefused(g, call(R"([{"name":"get_wind")")) ==
        static_cast<long>(std::string(R"( <tool_call>[{"name":"get_w)").size()));
  CHECK(firstRefused(g, call(R"([{"name":"get_time","arguments":{"location")")) ==
        static_cast<long>(std::string(R"( <tool_call>[{"name":"get_time","arguments":{)").size()));
  // A key at most once: refused at the first byte that no unused key starts with.
  CHECK(firstRefused(g, call(R"([{"name":"get_weather","arguments":{"location":"a","location")")) ==
        static_cast<long>(std::string(R"( <tool_call>[{"name":"get_weather","arguments":{"location":"a",")").size()));
  CHECK(firstRefused(g, call(R"([{"name":"get_weather","arguments":{"unit":"kelvin")")) ==
        static_cast<long>(std::string(R"( <tool_call>[{"name":"get_weather","arguments":{"unit":")").size()));
}

TEST_CASE("markers are atomic: their spelling in bytes is not a marker", "[toolcall][grammar]") {
  const tc::Grammar g(tools(kWeather));
  tc::Matcher m(g);
  REQUIRE(m.accept(' '));
  CHECK_FALSE(m.accept('<'));  // "<tool_call>" spelled by bytes does not start a call
  REQUIRE(m.accept(tc::markerSymbol(tc::Marker::Think)));
  // Inside THINK, byte-spelled markers are refused at their last byte (so that reply text reads back
  // unambiguously), and everything else is text.
  for (char c : std::string("a </think") ) REQUIRE(m.accept(static_cast<unsigned char>(c)));
  CHECK_FALSE(m.accept('>'));
  REQUIRE(m.accept('!'));
  for (char c : std::string("<|im_end|")) REQUIRE(m.accept(static_cast<unsigned char>(c)));
  CHECK_FALSE(m.accept('>'));
  // Invalid UTF-8 is refused inside THINK; valid UTF-8 of every length is taken.
  CHECK_FALSE(m.accept(0xC0));
  CHECK_FALSE(m.accept(0x80));
  for (unsigned char c : std::string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x91\x8D")) REQUIRE(m.accept(c));
  REQUIRE(m.accept(0xED));
  CHECK_FALSE(m.accept(0xA0));  // a surrogate
  REQUIRE(m.accept(0x9F));
  REQUIRE(m.accept(0xBF));
  REQUIRE(m.accept(0xE2));
  CHECK_FALSE(m.accept(tc::markerSymbol(tc::Marker::ThinkEnd)));  // not inside a character
  REQUIRE(m.accept(0x82));
  REQUIRE(m.accept(0xAC));
  CHECK(m.accept(tc::markerSymbol(tc::Marker::ThinkEnd)));
}

TEST_CASE("forced continuations", "[toolcall][grammar]") {
  const tc::Grammar g(tools(kWeather));
  tc::Matcher m(g);
  CHECK(m.forced() == "");  // a space, <think> or <tool_call>
  REQUIRE(m.acceptText(" <tool_call>[{"));
  CHECK(m.forced() == "\"name\":\"get_");
  REQUIRE(m.acceptText("\"name\":\"get_w"));
  CHECK(m.forced() == "eather\",\"arguments\":{\"");  // "location" is required: a key must come
  REQUIRE(m.acceptText("eather\",\"arguments\":{\"location\":\"P\""));
  CHECK(m.forced() == "");  // , or }
  REQUIRE(m.acceptText(",\"unit\":\"f"));
  CHECK(m.forced() == "ahrenheit\"}}");  // every key is used: the arguments end, then the call
  REQUIRE(m.acceptText("ahrenheit\""));
  CHECK(m.forced() == "}}");
  REQUIRE(m.acceptText("}}"));
  CHECK(m.forced() == "");  // , or ]
  REQUIRE(m.acceptText("]"));
  CHECK(m.forced() == "</tool_call><|im_end|>");
  CHECK(m.forcedSymbols() ==
        std::vector<tc::Symbol>{tc::markerSymbol(tc::Marker::ToolCallEnd), tc::markerSymbol(tc::Marker::ImEnd)});
  CHECK(m.minCompletion() == 2);
}

TEST_CASE("integers and numbers at their bounds", "[toolcall][grammar]") {
  const tc::Grammar g(tools(R"([{"name":"f","parameters":{"type":"object","properties":{
      "month":{"type":"integer","minimum":1,"maximum":12},
      "below":{"type":"integer","exclusiveMaximum":100,"exclusiveMinimum":-3},
      "unit":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
      "neg":{"type":"number","minimum":-2.5,"maximum":-0.25},
      "fractional":{"type":"integer","minimum":0.5,"maximum":2.5},
      "free":{"type":"number"},
      "zero":{"type":"integer","minimum":0,"maximum":0}}}}])"));
  const auto arg = [](const std::string& key, const std::string& value) {
    return call(R"([{"name":"f","arguments":{")" + key + "\":" + value + "}}]");
  };
  const auto refusedAt = [&](const std::string& key, const std::string& value) {
    const long at = firstRefused(g, arg(key, value));
    const long start = static_cast<long>(std::string(R"( <tool_call>[{"name":"f","arguments":{")").size() + key.size() + 2);
    return at < 0 ? -1 : at - start;  // the offset inside the value
  };
  for (const char* ok : {"1", "9", "10", "12"}) CHECK(accepts(g, arg("month", ok)));
  CHECK(refusedAt("month", "0") == 0);
  CHECK(refusedAt("month", "-1") == 0);
  CHECK(refusedAt("month", "13") == 1);
  CHECK(refusedAt("month", "100") == 2);
  CHECK(refusedAt("below", "01") == 1);    // no leading zeros
  CHECK(refusedAt("month", "1.0") == 1);  // integers have no fraction

  for (const char* ok : {"-2", "0", "-0", "99"}) CHECK(accepts(g, arg("below", ok)));
  CHECK(refusedAt("below", "-3") == 1);
  CHECK(refusedAt("below", "100") == 2);

  for (const char* ok : {"0.5", "0.00000001", "0.99999999", "0.1"}) CHECK(accepts(g, arg("unit", ok)));
  CHECK(refusedAt("unit", "0}") == 1);          // 0 itself is excluded: only "." may follow
  CHECK(refusedAt("unit", "0.00000000") == 9);  // the eighth zero leaves nothing above 0
  CHECK(refusedAt("unit", "0.123456789") == 10);  // at most 8 fraction digits
  CHECK(refusedAt("unit", "1") == 0);
  CHECK(refusedAt("unit", "-") == 0);

  for (const char* ok : {"-2.5", "-0.25", "-1", "-2.49999999", "-0.3"}) CHECK(accepts(g, arg("neg", ok)));
  CHECK(refusedAt("neg", "0") == 0);
  CHECK(refusedAt("neg", "-3") == 1);
  CHECK(refusedAt("neg", "-2.6") == 3);
  CHECK(refusedAt("neg", "-0.2}") == 4);   // -0.2 > -0.25, but -0.25 may follow
  CHECK(refusedAt("neg", "-0.1") == 3);
  CHECK(refusedAt("neg", "-2.50000001") == 10);

  for (const char* ok : {"1", "2"}) CHECK(accepts(g, arg("fractional", ok)));
  CHECK(refusedAt("fractional", "0") == 0);
  CHECK(refusedAt("fractional", "3") == 0);

  CHECK(accepts(g, arg("free", "-1234567890123456.12345678")));
  CHECK(refusedAt("free", "12345678901234567") == 16);  // at most 16 integer digits
  CHECK(refusedAt("free", "1e5") == 1);                  // no exponent

  CHECK(accepts(g, arg("zero", "0")));
  CHECK(accepts(g, arg("zero", "-0")));
  tc::Matcher m(g);
  REQUIRE(m.acceptText(R"( <tool_call>[{"name":"f","arguments":{"zero":)"));
  CHECK(m.minCompletion() == 1 + 3 + 2);  // 0 }}] </tool_call> <|im_end|>
  REQUIRE(m.acceptText("-"));
  CHECK(m.forced() == "0");

  for (const std::string& reply : {arg("unit", "0.5"), arg("neg", "-0.25"), arg("below", "-2"), arg("month", "12")})
    checkAlong(g, reply);
}

TEST_CASE("string lengths count code points, escapes included", "[toolcall][grammar]") {
  const tc::Grammar g(tools(R"([{"name":"s","parameters":{"type":"object","properties":{
      "code":{"type":"string","minLength":2,"maxLength":3},
      "any":{"type":"string"}},"required":["code"]}}])"));
  const auto arg = [](const std::string& value) { return call(R"([{"name":"s","arguments":{"code":)" + value + "}}]"); };
  for (const char* ok : {R"("ab")", R"("abc")", R"("a\n")", R"("\ud83d\ude00\u00e9")", "\"\xC3\xA9\xF0\x9F\x91\x8D\"",
                         R"("\"\\\/")", R"("\b\f\r")"})
    CHECK(accepts(g, arg(ok)));
  const long start = static_cast<long>(std::string(R"( <tool_call>[{"name":"s","arguments":{"code":)").size());
  const auto refusedAt = [&](const std::string& value) {
    const long at = firstRefused(g, arg(value));
    return at < 0 ? -1 : at - start;
  };
  CHECK(refusedAt(R"("a")") == 2);           // too short at the closing quote
  CHECK(refusedAt(R"("abcd")") == 4);        // too long at the fourth character
  CHECK(refusedAt(R"("ab\n")") == -1);
  CHECK(refusedAt(R"("abc\n")") == 4);
  CHECK(refusedAt("\"ab\xC3\xA9\xC3\xA9\"") == 5);  // a fourth character, 2 bytes each
  CHECK(refusedAt("\"a\nb\"") == 2);         // raw control characters are not allowed
  CHECK(refusedAt(R"("a\x")") == 3);         // unknown escape
  CHECK(refusedAt(R"("a\udc00")") == 5);     // a lone low surrogate
  CHECK(refusedAt(R"("a\ud83d"")") == 8);    // a high surrogate needs its low half
  CHECK(refusedAt(R"("a\ud83d\u0041")") == 10);
  CHECK(refusedAt("\"a\xC0\x80\"") == 2);    // an overlong form
  CHECK(refusedAt("\"a\xED\xA0\x80\"") == 3);  // a surrogate in UTF-8

  // A state inside an escape: minCompletion counts the escape, the low half, then the length.
  tc::Matcher m(g);
  REQUIRE(m.acceptText(R"( <tool_call>[{"name":"s","arguments":{"code":"\uD8)"));
  CHECK(m.minCompletion() == 2 + 6 + 1 + 1 + 3 + 2);  // 3D \uDC00, one more char, ", }}], 2 markers
  CHECK(m.forced() == "");
  REQUIRE(m.acceptText("3D"));
  CHECK(m.forced() == "\\u");
  REQUIRE(m.acceptText("\\u"));
  CHECK(m.forced() == "");  // D or d
  REQUIRE(m.acceptText("DE00"));
  for (const std::string& reply : {arg(R"("\ud83d\ude00\u00e9")"), arg("\"\xC3\xA9\xF0\x9F\x91\x8D\"")}) checkAlong(g, reply);
}

TEST_CASE("enums sharing prefixes, const, booleans and null", "[toolcall][grammar]") {
  const tc::Grammar g(tools(R"([{"name":"e","parameters":{"type":"object","properties":{
      "word":{"type":"string","enum":["a","ab","abc","caf\u00e9"]},
      "n":{"type":"integer","enum":[1,12,123]},
      "x":{"type":"number","enum":[1.5,-2]},
      "c":{"type":"string","const":"fixed"},
      "b":{"type":"boolean"},
      "z":{"type":"null"}}}}])"));
  const auto arg = [](const std::string& key, const std::string& value) {
    return call(R"([{"name":"e","arguments":{")" + key + "\":" + value + "}}]");
  };
  for (const char* ok : {R"("a")", R"("ab")", R"("abc")", R"("caf\u00e9")"}) CHECK(accepts(g, arg("word", ok)));
  CHECK_FALSE(accepts(g, arg("word", R"("abcd")")));
  CHECK_FALSE(accepts(g, arg("word", "\"caf\xC3\xA9\"")));  // enum values in their compact (ASCII) spelling only
  for (const char* ok : {"1", "12", "123"}) CHECK(accepts(g, arg("n", ok)));
  CHECK_FALSE(accepts(g, arg("n", "1234")));
  CHECK_FALSE(accepts(g, arg("n", "13")));
  CHECK(accepts(g, arg("x", "1.5")));
  CHECK(accepts(g, arg("x", "-2")));
  CHECK_FALSE(accepts(g, arg("x", "1.50")));
  CHECK(accepts(g, arg("c", R"("fixed")")));
  CHECK_FALSE(accepts(g, arg("c", R"("fixe")")));
  CHECK(accepts(g, arg("b", "true")));
  CHECK(accepts(g, arg("b", "false")));
  CHECK(accepts(g, arg("z", "null")));
  CHECK_FALSE(accepts(g, arg("z", "nul")));

  tc::Matcher m(g);
  REQUIRE(m.acceptText(R"( <tool_call>[{"name":"e","arguments":{"c":)"));
  CHECK(m.forced() == "\"fixed\"");
  REQUIRE(m.acceptText(R"("fixed","n":1)"));
  CHECK(m.forced() == "");  // 2, or the end of the number: , or }
  CHECK(m.minCompletion() == 1 + 2 + 2);
  for (const std::string& reply : {arg("n", "12"), arg("word", R"("caf\u00e9")"), arg("b", "false"), arg("x", "-2")})
    checkAlong(g, reply);
}

TEST_CASE("nested arrays and objects with item counts", "[toolcall][grammar]") {
  const tc::Grammar g(tools(R"([{"name":"plan","parameters":{"type":"object","properties":{
      "stops":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"object",
          "properties":{"city":{"type":"string","maxLength":4},"days":{"type":"integer","minimum":1,"maximum":9},
                        "tags":{"type":"array","items":{"type":"string","enum":["x","y"]},"maxItems":3}},
          "required":["city"]}},
      "matrix":{"type":"array","items":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}}},
    "required":["stops"]}}])"));
  const auto args = [](const std::string& a) { return call(R"([{"name":"plan","arguments":)" + a + "}]"); };
  const std::string good = R"({"stops":[{"city":"Rome","tags":["x","y","x"]},{"days":3,"city":"Oslo"}],"matrix":[[1,2.5],[-1,0]]})";
  CHECK(accepts(g, args(good)));
  CHECK(accepts(g, args(R"({"stops":[{"city":""}],"matrix":[]})")));
  CHECK_FALSE(accepts(g, args(R"({"stops":[]})")));                      // minItems 1
  CHECK_FALSE(accepts(g, args(R"({"stops":[{"city":"a"},{"city":"b"},{"city":"c"}]})")));  // maxItems 2
  CHECK_FALSE(accepts(g, args(R"({"stops":[{"city":"a","tags":["x","x","x","x"]}]})")));
  CHECK_FALSE(accepts(g, args(R"({"stops":[{"days":1}]})")));            // city is required
  CHECK_FALSE(accepts(g, args(R"({"stops":[{"city":"a"}],"matrix":[[1]]})")));
  checkAlong(g, args(good));

  tc::Matcher m(g);
  REQUIRE(m.acceptText(R"( <tool_call>[{"name":"plan","arguments":{)"));
  CHECK(m.forced() == "\"");  // stops or matrix, both start with a quote
  // The shortest finish: "stops":[{"city":""}]} then }] and the two markers.
  CHECK(m.minCompletion() == std::string(R"("stops":[{"city":""}]}}])").size() + 2);
}

TEST_CASE("two calls, [] and a call without tools", "[toolcall][grammar]") {
  const tc::Grammar none(std::vector<tc::Tool>{});
  CHECK(accepts(none, call("[]")));
  CHECK(firstRefused(none, call("[{")) == 13);
  tc::Matcher m(none);
  REQUIRE(m.acceptText(" <tool_call>"));
  CHECK(m.forced() == "[]</tool_call><|im_end|>");

  const tc::Grammar g(tools(kWeather));
  CHECK(accepts(g, call(R"([{"name":"get_time","arguments":{}},{"name":"get_time","arguments":{}}])")));
  CHECK_FALSE(accepts(g, call(R"([{"name":"get_time","arguments":{}},])")));
  CHECK_FALSE(accepts(g, call(R"([{"arguments":{},"name":"get_time"}])")));  // name first, as trained
}

TEST_CASE("allowText: free text instead of a tool call", "[toolcall][grammar]") {
  tc::GrammarOptions options;
  options.allowText = true;
  const tc::Grammar g(tools(kWeather), options);
  CHECK(accepts(g, " It is 21 degrees in Paris.<|im_end|>"));
  CHECK(accepts(g, "<|im_end|>"));
  CHECK(accepts(g, " <think>done</think>\nSunny.<|im_end|>"));
  CHECK(accepts(g, call("[]")));  // a call is still allowed
  CHECK(firstRefused(g, " a<tool_call>") == 2);  // no marker inside the text
  CHECK(firstRefused(g, " a <tool_call>") == 3);
  tc::Matcher spelled(g);
  REQUIRE(spelled.acceptText(" a"));
  for (char c : std::string("</tool_call")) REQUIRE(spelled.accept(static_cast<unsigned char>(c)));
  CHECK_FALSE(spelled.accept('>'));  // nor its spelling
  checkAlong(g, " <think>done</think>\nSunny, 21\xC2\xB0" "C.<|im_end|>");
  tc::Matcher m(g);
  CHECK(m.minCompletion() == 1);
  const tc::Grammar strict(tools(kWeather));
  CHECK(tc::Matcher(strict).minCompletion() == 5);
}

TEST_CASE("matchers compare and hash by state", "[toolcall][grammar]") {
  const tc::Grammar g(tools(kWeather)), h(tools(kWeather));
  tc::Matcher a(g), b(g), c(h);
  CHECK(a == b);
  CHECK(a.hash() == b.hash());
  CHECK(a != c);  // another grammar, even with the same tools
  REQUIRE(a.acceptText(" <tool_call>[{\"name\":\"get_weather\",\"arguments\":{\"location\":\"ab"));
  REQUIRE(b.acceptText(" <tool_call>[{\"name\":\"get_weather\",\"arguments\":{\"location\":"));
  CHECK(a != b);
  REQUIRE(b.acceptText("\"xyz"));
  CHECK(a == b);  // an unbounded string does not count its characters: one state all along
  CHECK(a.hash() == b.hash());
  // accept() leaves the state unchanged on a refusal.
  const tc::Matcher before = a;
  CHECK_FALSE(a.accept(tc::markerSymbol(tc::Marker::ImEnd)));
  CHECK(a == before);
  // The matcher is a fixed-size value; a copy is equal and hashes the same.
  CHECK(sizeof(tc::Matcher) <= 320);
  tc::Matcher copy = a;
  CHECK(copy == a);
  CHECK(copy.hash() == a.hash());
  copy = b;
  CHECK(copy == b);
}

TEST_CASE("span strings: the request's word-bounded spans", "[toolcall][grammar]") {
  const std::vector<std::string> spans = tc::requestSpans("Call \xE2\x80\x9C" "Ana-Mar\xC3\xAD" "a\xE2\x80\x9D at 5pm, ok?");
  const auto has = [&](const std::string& s) { return std::find(spans.begin(), spans.end(), s) != spans.end(); };
  for (const char* in : {"Call", "Ana", "Mar\xC3\xAD" "a", "Ana-Mar\xC3\xAD" "a", "-Mar\xC3\xAD" "a",
                         "\xE2\x80\x9C" "Ana-Mar\xC3\xAD" "a\xE2\x80\x9D", "at 5pm", "5pm,", "ok?", "?",
                         "Call \xE2\x80\x9C" "Ana-Mar\xC3\xAD" "a\xE2\x80\x9D at 5pm, ok?"})
    CHECK(has(in));
  // Cuts inside a word (between word characters, í included), spans that start or end with a space.
  for (const char* out : {"all", "Ana-Mar", "Mar\xC3\xAD", "5", "pm", " at", "at ", "", "\xE2\x80"})
    CHECK_FALSE(has(out));
  // Each span once, in order of first appearance; none longer than kMaxSpanBytes; no text, no spans.
  CHECK(tc::requestSpans("ab ab") == std::vector<std::string>{"ab", "ab ab"});
  // 100 distinct 3-byte words: a span of k words has 4k - 1 bytes, so at most 64 words (255 bytes).
  std::string longText;
  for (int i = 0; i < 100; ++i) longText += std::string(i ? " w" : "w") + char('a' + i / 10) + char('a' + i % 10);
  const std::vector<std::string> many = tc::requestSpans(longText);
  size_t longest = 0;
  for (const std::string& s : many) longest = std::max(longest, s.size());
  CHECK(longest == 255);
  CHECK(many.size() == 36 * 64 + 64 * 65 / 2);  // starts 0..35 take 64 ends each, start 36 + j takes 64 - j
  CHECK(tc::requestSpans("").empty());
  CHECK(tc::requestSpans("  ").empty());
}

TEST_CASE("span strings: free strings are spans, enums and unfit limits keep their own rule", "[toolcall][grammar]") {
  tc::GrammarOptions options;
  options.spanSource = "Call \xE2\x80\x9C" "Ana-Mar\xC3\xAD" "a\xE2\x80\x9D at 5pm, ok?";
  const tc::Grammar g(tools(R"([{"name":"s","parameters":{"type":"object","properties":{
      "to":{"type":"string"},
      "unit":{"type":"string","enum":["celsius","fahrenheit"]},
      "code":{"type":"string","maxLength":3},
      "essay":{"type":"string","minLength":60},
      "tags":{"type":"array","items":{"type":"string"}}}}}])"), options);
  const auto arg = [](const std::string& key, const std::string& value) {
    return call(R"([{"name":"s","arguments":{")" + key + "\":" + value + "}}]");
  };
  // A span spelled as json::quote writes it (ASCII, as our model writes it and as enum values are).
  for (const char* ok : {R"("Ana-Mar\u00eda")", R"("\u201cAna-Mar\u00eda\u201d")", R"("at 5pm")", R"("Call")"})
    CHECK(accepts(g, arg("to", ok)));
  for (const char* no : {R"("Ana-Mar")", R"("Bob")", R"("at 5")", R"("")", R"("Ana-Mar\u00ed")", R"("ana")",
                         "\"Ana-Mar\xC3\xAD" "a\""})
    CHECK_FALSE(accepts(g, arg("to", no)));
  // Every span of requestSpans, and nothing that is not one: each span and each span with one more
  // or one less byte (where that is still whole characters) against the list.
  const std::vector<std::string> spans = tc::requestSpans(*options.spanSource);
  for (const std::string& span : spans) {
    CHECK(accepts(g, arg("to", needle::json::quote(span))));
    for (const std::string& other : {span.substr(0, span.size() - 1), span + " ", span + "x"})
      if (!other.empty() && static_cast<unsigned char>(other.back()) < 0x80 &&
          std::find(spans.begin(), spans.end(), other) == spans.end())
        CHECK_FALSE(accepts(g, arg("to", needle::json::quote(other))));
  }
  CHECK(accepts(g, arg("unit", R"("celsius")")));             // an enum keeps its values
  CHECK_FALSE(accepts(g, arg("unit", R"("Call")")));
  CHECK(accepts(g, arg("code", R"("5pm")")));                 // the spans of at most 3 characters
  CHECK_FALSE(accepts(g, arg("code", R"("Call")")));
  CHECK_FALSE(accepts(g, arg("code", R"("Bob")")));
  CHECK(accepts(g, arg("essay", R"("no span of the request has sixty characters, so this string is free")")));
  CHECK(accepts(g, arg("tags", R"(["Ana","ok?"])")));         // strings inside arrays too
  CHECK_FALSE(accepts(g, arg("tags", R"(["Ana","Bo"])")));
  // Forced where one span goes on: after "Ana-M only "ar\u00eda".
  tc::Matcher m(g);
  REQUIRE(m.acceptText(R"( <tool_call>[{"name":"s","arguments":{"to":"Ana-M)"));
  CHECK(m.forced() == "ar\\u00eda");
  for (const std::string& reply : {arg("to", R"("Ana-Mar\u00eda")"), arg("code", R"("ok?")"), arg("tags", R"(["5pm,"])")})
    checkAlong(g, reply);
  // Without the option the same grammar takes any string.
  const tc::Grammar free(tools(R"([{"name":"s","parameters":{"type":"object","properties":{"to":{"type":"string"}}}}])"));
  CHECK(accepts(free, arg("to", R"("Bob")")));
}
