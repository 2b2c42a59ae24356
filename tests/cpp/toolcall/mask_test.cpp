// Token masks against brute force, and replies that always finish within their budget.
//
// A 600-piece tokenizer is trained here (in about a second) on the fixture corpus with script and
// number splitting off, so that many pieces cross grammar symbols ("\":\"", "},{", "\"}]", ...). Then,
// for 1,200 random tool sets and one random walk each (a token drawn from the budget mask at every
// step): the trie mask equals feeding every token id's symbols to a copy of the matcher; the budget
// mask equals the same filtered by minCompletion; minCompletion is the exact distance to the end;
// forced() is the only continuation; and the finished reply reads back with no error, its calls
// valid against their schemas, within its token budget.
#include <catch2/catch.hpp>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../rng.hpp"
#include "helpers.hpp"
#include "tokenizer.hpp"
#include "toolcall/reply.hpp"
#include "toolcall/tokens.hpp"

using namespace toolcall_test;

namespace {

const std::string kModelsDir = NEEDLE_MODELS_DIR;

// The small tokenizer: trained once per run on the first 400 KB of the fixture corpus. The coverage
// keeps a few hundred characters (é, ü, CJK) out of 600 pieces; the rest fall back to bytes.
const needle::Tokenizer& smallTokenizer() {
  static const needle::Tokenizer tok = [] {
    const std::string prefix = kModelsDir + "/toolcall-small-" + std::to_string(getpid());
    const std::string input = prefix + ".txt";
    {
      std::ifstream corpus(kModelsDir + "/corpus.txt", std::ios::binary);
      if (!corpus) throw std::runtime_error(kModelsDir + "/corpus.txt: cannot open (run the models.make fixture)");
      std::string text(400000, '\0');
      corpus.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(corpus.gcount()));
      std::ofstream(input, std::ios::binary) << text;
    }
    std::string markers;
    for (const char* m : needle::kChatMarkers) markers += std::string(markers.empty() ? "" : ",") + m;
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + prefix +
        " --model_type=bpe --vocab_size=600 --byte_fallback=true --pad_id=0 --eos_id=1 --bos_id=2 --unk_id=3"
        " --user_defined_symbols=" + markers +
        " --normalization_rule_name=identity --remove_extra_whitespaces=false --split_by_unicode_script=false"
        " --split_by_number=false --character_coverage=0.995 --num_threads=1 --minloglevel=2");
    std::remove(input.c_str());
    std::remove((prefix + ".vocab").c_str());
    if (!status.ok()) throw std::runtime_error("training the small tokenizer: " + status.ToString());
    needle::Tokenizer t(needle::tokenizerSpecFromSpm(prefix + ".model"));
    std::remove((prefix + ".model").c_str());
    return t;
  }();
  return tok;
}

// ---------------------------------------------------------------------------------------------
// Random tool sets
// ---------------------------------------------------------------------------------------------

std::string randomSchema(Rng& r, int depth);

std::string randomBounds(Rng& r) {
  static const std::vector<std::string> literals = {"-10", "-2.5", "-0.25", "0", "0.5", "1", "3", "12", "100", "1e2",
                                                    "-1e1", "0.001", "7.75"};
  std::string out;
  for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
    if (r.chance(30)) out += std::string(",\"") + keyword + "\":" + r.pick(literals);
  return out;
}

std::string randomObject(Rng& r, int depth, bool isParameters) {
  static const std::vector<std::string> names = {"a", "ab", "abc", "b", "name", "x\\u00e9", "q\\\"", "arguments"};
  std::vector<std::string> chosen;
  const uint32_t count = r.below(isParameters ? 5 : 4);
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
         (required.empty() && r.chance(50) ? "" : ",\"required\":[" + required + "]") + "}";
}

std::string randomSchema(Rng& r, int depth) {
  const uint32_t kind = r.below(depth >= 3 ? 6 : 9);
  switch (kind) {
    case 0: {
      std::string s = "{\"type\":\"string\"";
      const uint32_t lo = r.below(3);
      if (r.chance(40)) s += ",\"minLength\":" + std::to_string(lo);
      if (r.chance(40)) s += ",\"maxLength\":" + std::to_string(lo + r.below(4));
      return s + "}";
    }
    case 1: {
      static const std::vector<std::string> pool = {"\"a\"", "\"ab\"", "\"abc\"", "\"b\"", "\"caf\\u00e9\"",
                                                    "\"x y\"", "\"\\\"q\\\"\"", "\"\\ud83d\\udc4d\""};
      std::string e;
      const uint32_t n = 1 + r.below(4);
      for (uint32_t i = 0; i < n; ++i) e += std::string(i ? "," : "") + r.pick(pool);
      return r.chance(20) ? "{\"type\":\"string\",\"const\":" + r.pick(pool) + "}" : "{\"type\":\"string\",\"enum\":[" + e + "]}";
    }
    case 2: return "{\"type\":\"integer\"" + randomBounds(r) + "}";
    case 3: return "{\"type\":\"number\"" + randomBounds(r) + "}";
    case 4: {
      static const std::vector<std::string> pool = {"1", "12", "123", "-1", "0", "0.5", "-2.25"};
      std::string e;
      const uint32_t n = 1 + r.below(4);
      for (uint32_t i = 0; i < n; ++i) e += std::string(i ? "," : "") + r.pick(pool);
      return "{\"type\":\"number\",\"enum\":[" + e + "]}";
    }
    case 5: return r.chance(70) ? "{\"type\":\"boolean\"}" : "{\"type\":\"null\"}";
    case 6:
    case 7: {
      const uint32_t lo = r.below(3);
      std::string s = "{\"type\":\"array\",\"items\":" + randomSchema(r, depth + 1);
      if (r.chance(50)) s += ",\"minItems\":" + std::to_string(lo);
      if (r.chance(50)) s += ",\"maxItems\":" + std::to_string(lo + r.below(3));
      return s + "}";
    }
    default: return randomObject(r, depth, false);
  }
}

// A tool set that parseTools accepts (drawn again when the random bounds admit no value).
std::vector<tc::Tool> randomTools(Rng& r, std::string* text) {
  static const std::vector<std::string> names = {"get", "get_a", "set", "f\\u00e9", "x"};
  for (;;) {
    std::vector<std::string> chosen;
    const uint32_t count = 1 + r.below(3);
    for (uint32_t i = 0; i < count; ++i) {
      const std::string& n = r.pick(names);
      if (std::find(chosen.begin(), chosen.end(), n) == chosen.end()) chosen.push_back(n);
    }
    *text = "[";
    for (size_t i = 0; i < chosen.size(); ++i)
      *text += std::string(i ? "," : "") + "{\"name\":\"" + chosen[i] + "\",\"parameters\":" + randomObject(r, 0, true) + "}";
    *text += "]";
    try {
      return tc::parseTools(*text);
    } catch (const needle::Error&) {
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Oracles
// ---------------------------------------------------------------------------------------------

bool bit(const std::vector<uint32_t>& bits, uint32_t id) { return (bits[id >> 5] >> (id & 31)) & 1; }

// The mask by brute force: every id's symbols fed to a copy of the matcher with accept().
std::vector<uint32_t> bruteMask(const tc::TokenTable& table, const tc::Matcher& m, uint32_t remaining, bool budget) {
  std::vector<uint32_t> bits(table.maskWords(), 0);
  for (uint32_t id = 0; id < table.vocabSize(); ++id) {
    const std::vector<tc::Symbol>& symbols = table.symbols(id);
    if (symbols.empty()) continue;
    tc::Matcher copy = m;
    bool ok = true;
    for (tc::Symbol s : symbols) ok = ok && copy.accept(s);
    if (ok && budget) ok = remaining > 0 && copy.minCompletion() <= remaining - 1;
    if (ok) bits[id >> 5] |= uint32_t{1} << (id & 31);
  }
  return bits;
}

}  // namespace

TEST_CASE("the token table: markers, bytes, never control or unknown", "[toolcall][mask]") {
  const needle::Tokenizer& tok = smallTokenizer();
  const tc::TokenTable table(tok);
  CHECK(table.vocabSize() == 600);
  for (uint32_t m = 0; m < tc::kMarkerCount; ++m) {
    const uint32_t id = table.markerId(static_cast<tc::Marker>(m));
    CHECK(id == 4 + m);
    CHECK(table.symbols(id) == std::vector<tc::Symbol>{static_cast<tc::Symbol>(tc::kFirstMarker + m)});
  }
  for (uint32_t id : {0u, 1u, 2u, 3u}) CHECK(table.symbols(id).empty());  // pad, eos, bos, unk
  for (uint32_t b = 0; b < 256; ++b) CHECK(table.symbols(14 + b) == std::vector<tc::Symbol>{static_cast<tc::Symbol>(b)});
  size_t crossing = 0;  // pieces that span JSON punctuation and text, such as "\":\""
  for (uint32_t id = 270; id < 600; ++id) {
    CHECK(tc::textOf(table.symbols(id)) == tok.pieceBytes(id));
    const std::string text = tok.pieceBytes(id);
    crossing += text.size() > 1 && text.find_first_of("\"{}[],:") != std::string::npos;
  }
  CHECK(crossing >= 10);

  // A tokenizer without the markers or byte fallback is refused.
  needle::TokenizerSpec spec = tok.spec();
  spec.pieces[9].type = needle::PieceType::Normal;
  spec.pieces[9].surface = "</tools";
  CHECK_THROWS_WITH(tc::TokenTable(needle::Tokenizer(spec)), "token table: the tokenizer has no chat marker piece </tools>");
}

TEST_CASE("trie masks equal brute force on random schemas and walks; replies finish within budget",
          "[toolcall][mask]") {
  const needle::Tokenizer& tok = smallTokenizer();
  const tc::TokenTable table(tok);
  tc::Masker masker(table);
  Rng r{20260301};
  const int kWalks = 1200;
  size_t steps = 0, budgeted = 0, calls = 0, texts = 0, thinks = 0;
  for (int walk = 0; walk < kWalks; ++walk) {
    std::string toolsText;
    const std::vector<tc::Tool> tools = randomTools(r, &toolsText);
    tc::GrammarOptions options;
    options.allowText = r.chance(15);
    const tc::Grammar grammar(tools, options);
    tc::Matcher m(grammar);
    // Budgets from the least that can finish up to generous slack.
    const uint32_t budget = m.minCompletion() + r.below(r.chance(30) ? 10 : 300);
    CAPTURE(walk, toolsText, budget);
    std::vector<uint32_t> ids;
    std::vector<uint32_t> bits(table.maskWords());
    while (!m.done()) {
      REQUIRE(ids.size() < budget);
      const uint32_t remaining = budget - static_cast<uint32_t>(ids.size());
      CAPTURE(tc::textOf([&] {
        std::vector<tc::Symbol> s;
        for (uint32_t id : ids) for (tc::Symbol x : table.symbols(id)) s.push_back(x);
        return s;
      }()));
      masker.mask(m, bits.data());
      REQUIRE(bits == bruteMask(table, m, 0, false));
      masker.budgetMask(m, remaining, bits.data());
      const std::vector<uint32_t> brute = bruteMask(table, m, remaining, true);
      REQUIRE(bits == brute);
      budgeted += remaining <= m.completionBound();
      if (walk % 4 == 0) {  // the symbol-level checks are slower; a quarter of the walks suffice
        checkMinCompletion(m);
        checkForced(m);
      }
      // Draw a token: mostly any allowed one, but more and more often one that brings the end closer
      // as the budget runs out (else free strings would take up every budget).
      std::vector<uint32_t> allowed, closer;
      for (uint32_t id = 0; id < table.vocabSize(); ++id) {
        if (!bit(bits, id)) continue;
        allowed.push_back(id);
        tc::Matcher next = m;
        table.accept(next, id);
        if (next.minCompletion() < m.minCompletion()) closer.push_back(id);
      }
      REQUIRE(!allowed.empty());
      REQUIRE(!closer.empty());  // a token that lowers minCompletion is always allowed
      const uint32_t slack = remaining - m.minCompletion();
      const uint32_t id = r.chance(slack < 8 ? 90 : 15) ? r.pick(closer) : r.pick(allowed);
      REQUIRE(table.accept(m, id));
      ids.push_back(id);
      ++steps;
    }
    CHECK(ids.size() <= budget);
    masker.mask(m, bits.data());  // done: nothing more
    CHECK(bits == std::vector<uint32_t>(table.maskWords(), 0));

    // The reply reads back, valid. Both ways of turning ids into text work.
    std::string text;
    for (uint32_t id : ids) text += tok.pieceBytes(id);
    const tc::Reply reply = tc::parseReply(text, tools, options.allowText);
    CAPTURE(text);
    REQUIRE(reply.error == "");
    CHECK(reply.finished);
    CHECK(tc::parseReply(tok.decode(ids), tools, options.allowText).error == "");
    for (const tc::FunctionCall& c : reply.calls) {
      const tc::Tool* tool = nullptr;
      for (const tc::Tool& t : tools)
        if (t.name == c.name) tool = &t;
      REQUIRE(tool != nullptr);
      CHECK(tc::validate(c.arguments, tool->parameters) == "");
    }
    calls += reply.calls.size();
    texts += reply.kind == tc::Reply::Kind::Text;
    thinks += text.find("<think>") != std::string::npos;
  }
  // The walks went everywhere that matters.
  CHECK(calls > 600);
  CHECK(texts > 20);
  CHECK(thinks > 50);
  CHECK(budgeted > 1000);
  CHECK(masker.stats().memoHits > 100);
  WARN(steps << " steps, " << calls << " calls, " << texts << " text replies, " << thinks << " with think, " << budgeted
             << " budget-limited masks, " << masker.stats().memoHits << " memo hits");
}
