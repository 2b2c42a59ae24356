// The native sampler (host/sampler.cpp): splitmix64, greedy ties, the softmax, top-k / top-p / min-p,
// the repetition penalty, the token mask in every mode, the empty-mask error, and the log-probability.
// The "shared draws" cases pin ids and bits that tests/node/engine-sampler.test.mjs asserts for
// engine.wat too: the two samplers agree on them only if they compute the same thing.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "bytes.hpp"
#include "sampler.hpp"

using namespace needle;

namespace {

constexpr uint32_t kVocab = 512;

// -30 everywhere except the given (id, logit) pairs.
std::vector<float> logitsWith(std::initializer_list<std::pair<uint32_t, float>> pairs, uint32_t vocab = kVocab) {
  std::vector<float> l(vocab, -30.0f);
  for (auto [id, v] : pairs) l[id] = v;
  return l;
}

// A mask allowing exactly `ids`.
std::vector<uint32_t> maskOf(std::initializer_list<uint32_t> ids, uint32_t vocab = kVocab) {
  std::vector<uint32_t> m(maskWords(vocab), 0);
  for (uint32_t id : ids) maskAllow(m.data(), id);
  return m;
}

// Logits shared with the Node test: l_i = ((i * 7919) mod 1009) / 128 - 4, exact in f32.
std::vector<float> sharedLogits(uint32_t vocab) {
  std::vector<float> l(vocab);
  for (uint32_t i = 0; i < vocab; ++i) l[i] = static_cast<float>((i * 7919u) % 1009u) / 128.0f - 4.0f;
  return l;
}

std::vector<uint32_t> draws(Sampler& s, const std::vector<float>& logits, const std::vector<uint32_t>& history,
                            const uint32_t* mask, int n) {
  std::vector<uint32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(logits, history, mask));
  return out;
}

uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace

TEST_CASE("splitmix64 gives the published sequence and 53-bit uniforms", "[sampler]") {
  SplitMix64 g(0);
  CHECK(g.next() == 0xE220A8397B1DCDAFull);
  CHECK(g.next() == 0x6E789E6AA1B965F4ull);
  CHECK(g.next() == 0x06C45D188009454Full);
  SplitMix64 u(0);
  CHECK(u.uniform() == static_cast<double>(0xE220A8397B1DCDAFull >> 11) * 0x1p-53);
}

TEST_CASE("greedy takes the highest logit, the lowest id on ties, and draws nothing", "[sampler]") {
  Sampler s(kVocab);
  CHECK(s.sample(logitsWith({{7, 3}, {9, 5}, {11, 5}}), {}, nullptr) == 9);
  CHECK(s.sample(logitsWith({{kVocab - 1, 1}}), {}, nullptr) == kVocab - 1);
  // every logit -inf: the lowest id (the lowest allowed id with a mask)
  std::vector<float> dead(kVocab, -INFINITY);
  CHECK(s.sample(dead, {}, nullptr) == 0);
  const auto m = maskOf({40, 41});
  CHECK(s.sample(dead, {}, m.data()) == 40);
}

TEST_CASE("the mask excludes tokens in greedy mode, ties included", "[sampler][mask]") {
  Sampler s(kVocab);
  const auto l = logitsWith({{7, 3}, {9, 5}, {11, 5}, {300, 4}});
  const auto no9 = maskOf({7, 11, 300});
  CHECK(s.sample(l, {}, no9.data()) == 11);
  const auto low = maskOf({7, 300});
  CHECK(s.sample(l, {}, low.data()) == 300);
  const auto only = maskOf({2});  // a -30 logit, alone allowed
  CHECK(s.sample(l, {}, only.data()) == 2);
}

TEST_CASE("an empty mask is an error, in every mode, and leaves the sampler usable", "[sampler][mask]") {
  const auto l = logitsWith({{1, 1}});
  std::vector<uint32_t> none(maskWords(kVocab), 0);
  for (float t : {0.0f, 1.0f}) {
    SamplerOptions o;
    o.temperature = t;
    Sampler s(kVocab, o, 3);
    CHECK_THROWS_WITH(s.sample(l, {}, none.data()), "sampler: the token mask allows none of the 512 ids");
    CHECK(s.sample(l, {}, nullptr) == 1);
  }
  // bits past the vocabulary do not count
  const uint32_t vocab = 500;
  std::vector<uint32_t> past(maskWords(vocab), 0);
  maskAllow(past.data(), 505);
  Sampler s(vocab);
  CHECK_THROWS_AS(s.sample(std::vector<float>(vocab, 0.0f), {}, past.data()), Error);
}

TEST_CASE("bad logits or history sizes are errors", "[sampler]") {
  Sampler s(kVocab);
  CHECK_THROWS_WITH(s.sample(std::vector<float>(10), {}, nullptr), "sampler: 10 logits for a vocabulary of 512");
  const std::vector<uint32_t> history{2, 600};
  CHECK_THROWS_WITH(s.sample(logitsWith({}), history, nullptr),
                    "sampler: session token 1 is 600, past the vocabulary (512 ids)");
}

TEST_CASE("temperature sampling follows the softmax, the masked one the renormalised softmax", "[sampler][mask]") {
  // allowed: 10, 20, 30 with p 0.5, 0.3, 0.2; 40 is the most likely token but masked out
  const auto l = logitsWith({{10, std::log(0.5f)}, {20, std::log(0.3f)}, {30, std::log(0.2f)}, {40, 3.0f}});
  const auto m = maskOf({10, 20, 30});
  SamplerOptions o;
  o.temperature = 1;
  Sampler s(kVocab, o, 1);
  std::map<uint32_t, int> count;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++count[s.sample(l, {}, m.data())];
  CHECK(count.size() == 3);
  CHECK(std::fabs(count[10] / double(n) - 0.5) < 0.015);
  CHECK(std::fabs(count[20] / double(n) - 0.3) < 0.015);
  CHECK(std::fabs(count[30] / double(n) - 0.2) < 0.015);
  // the same seed gives the same draws; another seed others
  Sampler a(kVocab, o, 9), b(kVocab, o, 9), c(kVocab, o, 10);
  const auto da = draws(a, l, {}, m.data(), 200);
  CHECK(da == draws(b, l, {}, m.data(), 200));
  CHECK(da != draws(c, l, {}, m.data(), 200));
}

TEST_CASE("a mask that allows every id gives exactly the unmasked draws", "[sampler][mask]") {
  const auto l = sharedLogits(kVocab);
  std::vector<uint32_t> all(maskWords(kVocab), 0xFFFFFFFFu);
  SamplerOptions o;
  o.temperature = 0.9f;
  o.topK = 30;
  o.topP = 0.8f;
  o.minP = 0.05f;
  o.repetitionPenalty = 1.2f;
  const std::vector<uint32_t> history{2, 5, 9, 5, 400};
  Sampler a(kVocab, o, 42), b(kVocab, o, 42);
  CHECK(draws(a, l, history, nullptr, 300) == draws(b, l, history, all.data(), 300));
}

TEST_CASE("top-k, top-p and min-p cut the candidates, among allowed tokens only", "[sampler][mask]") {
  const auto l = logitsWith({{1, 2.0f}, {2, 1.9f}, {3, 1.8f}, {4, 1.7f}, {5, 1.6f}});
  auto set = [](const std::vector<uint32_t>& v) { return std::set<uint32_t>(v.begin(), v.end()); };
  SamplerOptions o;
  o.temperature = 1;
  o.topK = 2;
  Sampler k2(kVocab, o, 4);
  CHECK(set(draws(k2, l, {}, nullptr, 500)) == std::set<uint32_t>{1, 2});
  const auto no1 = maskOf({2, 3, 4, 5});
  CHECK(set(draws(k2, l, {}, no1.data(), 500)) == std::set<uint32_t>{2, 3});
  // weights e^0, e^-0.1, e^-0.2, e^-0.3, e^-0.4 of the allowed 2..5 after masking 1: top-p 0.4 keeps 2, 3
  o = {};
  o.temperature = 1;
  o.topP = 0.4f;
  Sampler p(kVocab, o, 5);
  CHECK(set(draws(p, l, {}, no1.data(), 500)) == std::set<uint32_t>{2, 3});
  // min-p 0.85 relative to the best ALLOWED token (2): keeps 2 and 3 (e^-0.1), not 4 (e^-0.2)
  o = {};
  o.temperature = 1;
  o.minP = 0.85f;
  Sampler mp(kVocab, o, 6);
  CHECK(set(draws(mp, l, {}, no1.data(), 500)) == std::set<uint32_t>{2, 3});
  // min-p above 1 keeps only the best token instead of nothing
  o.minP = 2.0f;
  Sampler high(kVocab, o, 6);
  CHECK(set(draws(high, l, {}, no1.data(), 50)) == std::set<uint32_t>{2});
}

TEST_CASE("the repetition penalty lowers the session's tokens, the mask still applies", "[sampler][mask]") {
  const std::vector<uint32_t> history{2, 7, 7, 8};
  const auto l = logitsWith({{7, 2.0f}, {9, 1.5f}, {8, -1.0f}, {10, -1.2f}});
  SamplerOptions o;
  Sampler plain(kVocab, o);
  CHECK(plain.sample(l, history, nullptr) == 7);
  o.repetitionPenalty = 2;
  Sampler pen(kVocab, o);
  CHECK(pen.sample(l, history, nullptr) == 9);  // 2.0 / 2 = 1.0 < 1.5
  const auto m = maskOf({7, 8, 10});
  CHECK(pen.sample(l, history, m.data()) == 7);  // 9 masked: 7 (1.0) still beats 10 (-1.2) and 8 (-2)
  const auto m2 = maskOf({8, 10});
  CHECK(pen.sample(l, history, m2.data()) == 10);  // -1.0 x 2 = -2 ranks below -1.2
  o.repetitionWindow = 1;                          // only the last token (8) is penalised
  Sampler win(kVocab, o);
  CHECK(win.sample(l, history, nullptr) == 7);
}

TEST_CASE("the log-probability is log-softmax at temperature 1, without mask or penalty", "[sampler][logprob]") {
  const auto l = sharedLogits(kVocab);
  double mx = -INFINITY, sum = 0;
  for (float v : l) mx = std::max(mx, double(v));
  for (float v : l) sum += std::exp(double(v) - mx);
  double total = 0;
  for (uint32_t t = 0; t < kVocab; ++t) {
    const double exact = double(l[t]) - mx - std::log(sum);
    CHECK(std::fabs(logprob(l, t) - exact) < 2e-6);
    total += std::exp(double(logprob(l, t)));
  }
  CHECK(std::fabs(total - 1.0) < 1e-5);
  CHECK_THROWS_WITH(logprob(l, kVocab), "logprob: token 512 is past the logits (512 values)");
}

// The same cases, with the same pinned results, are in tests/node/engine-sampler.test.mjs (engine.wat).
// The vocabulary is tiny.cact's (8192), which the Node test loads.
TEST_CASE("shared draws: the ids and bits that engine.wat gives too", "[sampler][shared]") {
  const uint32_t vocab = 8192;
  const auto l = sharedLogits(vocab);
  auto everyThird = std::vector<uint32_t>(maskWords(vocab), 0);
  for (uint32_t i = 1; i < vocab; i += 3) maskAllow(everyThird.data(), i);
  auto span = std::vector<uint32_t>(maskWords(vocab), 0);
  for (uint32_t i = 100; i < 300; ++i) maskAllow(span.data(), i);
  auto even = std::vector<uint32_t>(maskWords(vocab), 0);
  for (uint32_t i = 0; i < vocab; i += 2) maskAllow(even.data(), i);

  SamplerOptions a;
  a.temperature = 0.8f;
  a.topK = 40;
  a.topP = 0.9f;
  a.minP = 0.02f;
  Sampler sa(vocab, a, 7);
  CHECK(draws(sa, l, {}, nullptr, 12) == std::vector<uint32_t>{5566, 765, 8105, 4313, 277, 521, 277, 3548, 4801, 6575, 3792, 1807});
  Sampler sb(vocab, a, 7);
  CHECK(draws(sb, l, {}, everyThird.data(), 12) == std::vector<uint32_t>{7861, 1774, 7162, 4102, 5599, 1042, 310, 1807, 5566, 2572, 2539, 4900});
  SamplerOptions c;
  c.temperature = 1.5f;
  c.minP = 0.05f;
  Sampler sc(vocab, c, 123456789012345ull);
  CHECK(draws(sc, l, {}, span.data(), 12) == std::vector<uint32_t>{272, 251, 119, 113, 225, 119, 293, 259, 278, 166, 185, 264});
  Sampler greedy(vocab);
  CHECK(greedy.sample(l, {}, span.data()) == 277u);
  SamplerOptions e;
  e.temperature = 0.9f;
  e.repetitionPenalty = 1.3f;
  const std::vector<uint32_t> history{2, 5, 9, 5, 4, 6};
  Sampler se(vocab, e, 99);
  CHECK(draws(se, l, history, even.data(), 12) == std::vector<uint32_t>{2144, 264, 6852, 852, 1394, 1906, 5502, 5942, 4294, 4538, 4394, 6120});
  CHECK(bitsOf(logprob(l, 0)) == 0xC16D34E0u);
  CHECK(bitsOf(logprob(l, 17)) == 0xC137F4E0u);
  CHECK(bitsOf(logprob(l, 511)) == 0xC12C54E0u);
}
