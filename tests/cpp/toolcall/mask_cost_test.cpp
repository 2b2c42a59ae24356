// Mask cost on the 8192-piece fixture tokenizer, by state kind. A hidden case ([.][cost]): it prints
// figures for docs/toolcall.md and asserts only that the masks are what they must be, never a time.
//   build/bin/needle_toolcall_tests "[cost]"
#include <catch2/catch.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "tokenizer.hpp"
#include "toolcall/tokens.hpp"

namespace tc = needle::toolcall;

namespace {

double secondsNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t allowedCount(const std::vector<uint32_t>& bits) {
  size_t n = 0;
  for (uint32_t w : bits) n += static_cast<size_t>(__builtin_popcount(w));
  return n;
}

}  // namespace

TEST_CASE("mask cost per call on the 8192-piece tokenizer", "[.][cost][toolcall]") {
  const needle::Tokenizer tok(needle::tokenizerSpecFromSpm(std::string(NEEDLE_MODELS_DIR) + "/needle-test.model"));
  double start = secondsNow();
  const tc::TokenTable table(tok);
  const double buildMs = (secondsNow() - start) * 1e3;
  const tc::Grammar grammar(tc::parseTools(R"([{"name":"get_weather","description":"Weather for a city",
    "parameters":{"type":"object","properties":{"location":{"type":"string"},"note":{"type":"string","maxLength":400},
      "unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":14}},
    "required":["location"]}},{"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"number"}}}}])"));
  struct Case {
    const char* what;
    std::string prefix;
  };
  const std::vector<Case> cases = {
      {"start of the reply", ""},
      {"structural: after {", R"( <tool_call>[{)"},
      {"structural: a key", R"( <tool_call>[{"name":"get_weather","arguments":{)"},
      {"structural: after a value", R"( <tool_call>[{"name":"get_weather","arguments":{"location":"Paris")"},
      {"number", R"( <tool_call>[{"name":"get_weather","arguments":{"days":1)"},
      {"free string", R"( <tool_call>[{"name":"get_weather","arguments":{"location":"Par)"},
      {"string with maxLength", R"( <tool_call>[{"name":"get_weather","arguments":{"note":"Par)"},
      {"think text", " <think>The user wants"},
  };
  tc::Masker masker(table);
  std::vector<uint32_t> bits(table.maskWords());
  std::cout << "TokenTable build: " << buildMs << " ms; trie nodes " << table.trie().size() << "\n";
  for (const Case& c : cases) {
    tc::Matcher m(grammar);
    REQUIRE(m.acceptText(c.prefix));
    const int reps = 200;
    // Without the memo: the walk itself.
    start = secondsNow();
    for (int i = 0; i < reps; ++i) {
      masker.clearMemo();
      masker.mask(m, bits.data());
    }
    const double walkUs = (secondsNow() - start) / reps * 1e6;
    const size_t allowed = allowedCount(bits);
    // A memo hit.
    start = secondsNow();
    for (int i = 0; i < reps; ++i) masker.mask(m, bits.data());
    const double hitUs = (secondsNow() - start) / reps * 1e6;
    // The budget walk (every allowed token's minCompletion checked), with 10 tokens left.
    start = secondsNow();
    for (int i = 0; i < reps; ++i) masker.budgetMask(m, m.minCompletion() + 10, bits.data());
    const double budgetUs = (secondsNow() - start) / reps * 1e6;
    std::cout << c.what << ": " << allowed << " tokens allowed; walk " << walkUs << " us, memo hit " << hitUs
              << " us, budget walk " << budgetUs << " us\n";
    CHECK(allowed > 0);
  }
}
