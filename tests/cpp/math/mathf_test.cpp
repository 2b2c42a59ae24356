// The transcendentals of docs/numerics.md (host/mathf.cpp): accuracy against the C library in double
// precision, special values, and pinned output bits. The same pinned bits are asserted for engine.wat
// and for the JavaScript form of the definition in tests/node/engine-math.test.mjs, which ties the
// C++ reference and the wasm engine to the same numbers.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include "mathf.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// One ulp of the f32 nearest to v (the gap above |v|; the smallest subnormal at 0).
double ulpAt(double v) {
  const float f = std::fabs(static_cast<float>(v));
  if (f == kInf) return std::numeric_limits<double>::infinity();
  return static_cast<double>(std::nextafter(f, kInf)) - static_cast<double>(f);
}

// Error of an f32 result in ulps of the exact value, with the C library's double result as exact.
double ulpError(float got, double exact) {
  return std::fabs(static_cast<double>(got) - exact) / ulpAt(exact);
}

uint32_t bitsOf(float x) { return std::bit_cast<uint32_t>(x); }
uint64_t bitsOf(double x) { return std::bit_cast<uint64_t>(x); }

}  // namespace

TEST_CASE("expf32 is within 0.501 ulp of e^x over the f32 range and almost always correctly rounded") {
  double worst = 0.0;
  uint32_t tested = 0, notRounded = 0;
  // every 1009th f32 bit pattern with |x| <= 104 (both signs), about 2 million inputs
  for (uint64_t b = 0; b < 0x100000000ull; b += 1009) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (!(std::fabs(x) <= 104.0f)) continue;
    const double exact = std::exp(static_cast<double>(x));
    const float got = needle::expf32(x);
    ++tested;
    if (got != static_cast<float>(exact)) ++notRounded;
    if (std::isinf(got)) {
      REQUIRE(exact > static_cast<double>(std::numeric_limits<float>::max()));
      continue;
    }
    worst = std::max(worst, ulpError(got, exact));
  }
  INFO("tested " << tested << ", worst " << worst << " ulp, " << notRounded << " not correctly rounded");
  CHECK(tested > 1500000);
  CHECK(worst <= 0.501);
  CHECK(notRounded * 100000ull <= tested);  // exhaustively: 593 of 2.2e9 inputs
}

TEST_CASE("logf32 is within 0.501 ulp of ln x over the positive f32 numbers") {
  double worst = 0.0;
  uint32_t tested = 0, notRounded = 0;
  for (uint32_t b = 1; b < 0x7f800000u; b += 509) {  // subnormals included
    const float x = std::bit_cast<float>(b);
    const double exact = std::log(static_cast<double>(x));
    const float got = needle::logf32(x);
    ++tested;
    if (got != static_cast<float>(exact)) ++notRounded;
    worst = std::max(worst, ulpError(got, exact));
  }
  INFO("tested " << tested << ", worst " << worst << " ulp, " << notRounded << " not correctly rounded");
  CHECK(tested > 4000000);
  CHECK(worst <= 0.501);
  CHECK(notRounded * 100000ull <= tested);
}

TEST_CASE("expf32 and logf32 special values") {
  CHECK(needle::expf32(0.0f) == 1.0f);
  CHECK(needle::expf32(-0.0f) == 1.0f);
  CHECK(needle::expf32(kInf) == kInf);
  CHECK(bitsOf(needle::expf32(-kInf)) == 0u);  // +0
  CHECK(std::isnan(needle::expf32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(needle::expf32(88.8f) == kInf);          // past ln(FLT_MAX) = 88.7228
  CHECK(needle::expf32(88.72f) < kInf);
  CHECK(needle::expf32(104.5f) == kInf);
  CHECK(bitsOf(needle::expf32(-104.5f)) == 0u);
  CHECK(bitsOf(needle::expf32(-103.0f)) == 0x1u);  // e^-103 = 1.9e-45: the smallest subnormal
  CHECK(needle::logf32(1.0f) == 0.0f);
  CHECK(needle::logf32(0.0f) == -kInf);
  CHECK(needle::logf32(-0.0f) == -kInf);
  CHECK(needle::logf32(kInf) == kInf);
  CHECK(std::isnan(needle::logf32(-1.0f)));
  CHECK(std::isnan(needle::logf32(-kInf)));
  CHECK(std::isnan(needle::logf32(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("pinned bits: the same numbers engine-math.test.mjs asserts for the wasm engine") {
  CHECK(bitsOf(needle::expf32(1.0f)) == 0x402df854u);
  CHECK(bitsOf(needle::expf32(-1.0f)) == 0x3ebc5ab2u);
  CHECK(bitsOf(needle::expf32(0.5f)) == 0x3fd3094cu);
  CHECK(bitsOf(needle::expf32(-7.25f)) == 0x3a3a2affu);
  CHECK(bitsOf(needle::expf32(20.5f)) == 0x4e3eb628u);
  CHECK(bitsOf(needle::expf32(-100.5f)) == 0x00000010u);
  CHECK(bitsOf(needle::expf32(88.5f)) == 0x7f4cdcc4u);
  CHECK(bitsOf(needle::expf32(-0.001f)) == 0x3f7fbe7fu);
  CHECK(bitsOf(needle::logf32(2.0f)) == 0x3f317218u);
  CHECK(bitsOf(needle::logf32(0.1f)) == 0xc0135d8eu);
  CHECK(bitsOf(needle::logf32(3e38f)) == 0x42b13196u);
  CHECK(bitsOf(needle::logf32(std::bit_cast<float>(0x000116c2u))) == 0xc2b834f2u);  // 1e-40, subnormal
  CHECK(bitsOf(needle::logf32(std::bit_cast<float>(0x3f800001u))) == 0x33ffffffu);  // 1 + 2^-23
  CHECK(bitsOf(needle::logf32(7.0f)) == 0x3ff91395u);
  CHECK(bitsOf(needle::logf32(0.75f)) == 0xbe934b11u);
  CHECK(bitsOf(needle::exp64(-3.5)) == 0x3f9eec1018e4ff66u);
  CHECK(bitsOf(needle::exp64(10.25)) == 0x40db9ea2aed2a0f1u);
  CHECK(bitsOf(needle::log64(10000.0)) == 0x40226bb1bbb55516u);
  CHECK(bitsOf(needle::log64(0.3)) == 0xbff34378fcbda721u);
  CHECK(bitsOf(needle::sin64(1000.5)) == 0x3fefd948c50a7a0du);
  CHECK(bitsOf(needle::sin64(0.7)) == 0x3fe49d6e694619b8u);
  CHECK(bitsOf(needle::cos64(3.0)) == 0xbfefae04be85e5d2u);
  CHECK(bitsOf(needle::cos64(1000.5)) == 0x3fb8dbff75eb6650u);
}

TEST_CASE("exp64, log64, sin64, cos64 agree with the C library to a few f64 ulps") {
  double worstExp = 0.0, worstLog = 0.0, worstTrig = 0.0;
  for (int i = -7000; i <= 7000; ++i) {
    const double x = i * 0.1013;  // -709 .. 709
    worstExp = std::max(worstExp, std::fabs(needle::exp64(x) - std::exp(x)) / std::exp(x));
    const double y = std::exp(i * 0.0137);
    worstLog = std::max(worstLog, std::fabs(needle::log64(y) - std::log(y)) / std::max(std::fabs(std::log(y)), 1e-300));
    const double a = i * 0.2917;  // -2042 .. 2042, like RoPE angles
    worstTrig = std::max(worstTrig, std::fabs(needle::sin64(a) - std::sin(a)));
    worstTrig = std::max(worstTrig, std::fabs(needle::cos64(a) - std::cos(a)));
  }
  INFO("exp " << worstExp << ", log " << worstLog << ", sin/cos (absolute) " << worstTrig);
  CHECK(worstExp < 4e-15);
  CHECK(worstLog < 4e-15);
  CHECK(worstTrig < 2e-15);
  CHECK(needle::exp64(710.0) == std::numeric_limits<double>::infinity());
  CHECK(needle::exp64(-746.0) == 0.0);
  CHECK(std::isnan(needle::exp64(std::nan(""))));
  CHECK(needle::log64(0.0) == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(needle::log64(-1.0)));
  CHECK(needle::log64(5e-324) == std::log(5e-324));
  CHECK(std::isnan(needle::sin64(std::numeric_limits<double>::infinity())));
  CHECK(std::isnan(needle::cos64(0x1p30)));
  CHECK(needle::sin64(0.0) == 0.0);
  CHECK(needle::cos64(0.0) == 1.0);
}
