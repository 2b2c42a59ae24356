// Shared helpers of the toolcall tests: matchers fed text byte by byte, the exact set of symbols a
// matcher accepts, and the brute-force checks of minCompletion and forced().
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "toolcall/grammar.hpp"
#include "toolcall/schema.hpp"

namespace tc = needle::toolcall;

namespace toolcall_test {

// The tools of a JSON text.
inline std::vector<tc::Tool> tools(const std::string& json) { return tc::parseTools(json); }

// Whether the whole reply (markers spelled out) is accepted and completes it.
inline bool accepts(const tc::Grammar& g, const std::string& reply) {
  tc::Matcher m(g);
  return m.acceptText(reply) && m.done();
}

// The byte offset of the first symbol of `reply` the grammar refuses (markers count their spelling),
// or -1 when all are taken.
inline long firstRefused(const tc::Grammar& g, const std::string& reply) {
  tc::Matcher m(g);
  long at = 0;
  for (tc::Symbol s : tc::symbolsOf(reply)) {
    if (!m.accept(s)) return at;
    at += static_cast<long>(tc::symbolText(s).size());
  }
  return -1;
}

// Every symbol m accepts, by trying each one on a copy.
inline std::vector<tc::Symbol> acceptedSymbols(const tc::Matcher& m) {
  std::vector<tc::Symbol> out;
  for (tc::Symbol s = 0; s < tc::kSymbolCount; ++s) {
    tc::Matcher copy = m;
    if (copy.accept(s)) out.push_back(s);
  }
  return out;
}

// minCompletion is the exact distance to done: 0 exactly when done, else one more than the best
// accepted symbol's. And no state needs more than the grammar's bound.
inline void checkMinCompletion(const tc::Matcher& m) {
  const uint32_t here = m.minCompletion();
  CHECK(here <= m.completionBound());
  if (m.done()) {
    CHECK(here == 0);
    CHECK(acceptedSymbols(m).empty());
    return;
  }
  uint32_t best = UINT32_MAX;
  for (tc::Symbol s : acceptedSymbols(m)) {
    tc::Matcher next = m;
    next.accept(s);
    best = std::min(best, next.minCompletion());
  }
  REQUIRE(best != UINT32_MAX);  // a state that is not done always has a way on
  CHECK(here == best + 1);
}

// forced() is the only way on, symbol by symbol, and stops where there is a choice (or at the end).
inline void checkForced(const tc::Matcher& m) {
  const std::vector<tc::Symbol> forced = m.forcedSymbols();
  CHECK(m.forced() == tc::textOf(forced));
  tc::Matcher at = m;
  for (tc::Symbol s : forced) {
    const std::vector<tc::Symbol> only = acceptedSymbols(at);
    REQUIRE(only.size() == 1);
    CHECK(only[0] == s);
    at.accept(s);
  }
  CHECK((at.done() || acceptedSymbols(at).size() >= 2));
}

}  // namespace toolcall_test
