// binary16 widening (how FP16 control tensors are read) and rounding (how they are written).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "fp16.hpp"

using namespace needle;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

TEST_CASE("fp16 widening: special values", "[fp16]") {
  CHECK(bitsOf(halfToFloat(0x0000)) == 0x00000000u);  // +0
  CHECK(bitsOf(halfToFloat(0x8000)) == 0x80000000u);  // -0 keeps its sign
  CHECK(halfToFloat(0x3C00) == 1.0f);
  CHECK(halfToFloat(0xBC00) == -1.0f);
  CHECK(halfToFloat(0x7C00) == INFINITY);
  CHECK(halfToFloat(0xFC00) == -INFINITY);
  CHECK(std::isnan(halfToFloat(0x7E00)));
  CHECK(std::isnan(halfToFloat(0xFC01)));
  CHECK(bitsOf(halfToFloat(0x7E00)) == 0x7FC00000u);  // quiet NaN payload moves up 13 bits
}

TEST_CASE("fp16 widening: subnormals and normals", "[fp16]") {
  CHECK(halfToFloat(0x0001) == 5.96046448e-8f);       // smallest subnormal, 2^-24
  CHECK(halfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(halfToFloat(0x03FF) == 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  CHECK(halfToFloat(0x03FF) == 6.09755516e-5f);
  CHECK(halfToFloat(0x8001) == -5.96046448e-8f);
  CHECK(halfToFloat(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(halfToFloat(0x7BFF) == 65504.0f);               // largest finite
  CHECK(halfToFloat(0x3555) == 0.333251953125f);
  CHECK(halfToFloat(0xC000) == -2.0f);
  CHECK(halfToFloat(0x5640) == 100.0f);
  CHECK(halfToFloat(0x2E66) == 0.099975586f);  // 0.1 as stored
}

TEST_CASE("fp16 rounding: every half survives a round trip", "[fp16]") {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      const uint16_t back = floatToHalf(f);
      CHECK((back & 0x7C00) == 0x7C00);
      CHECK((back & 0x03FF) != 0);
    } else if (floatToHalf(f) != h) {
      FAIL("half " << h << " came back as " << floatToHalf(f));
    }
  }
}

TEST_CASE("fp16 rounding: nearest, ties to even, at every gap", "[fp16]") {
  // Between each pair of adjacent positive halves: the midpoint goes to the even one, anything
  // above it up, anything below it down. Covers subnormals, the subnormal/normal seam and overflow.
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double lo = halfToFloat(static_cast<uint16_t>(h));
    const double hi = h + 1 == 0x7C00 ? 65536.0 : halfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact in f32
    REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    if (floatToHalf(mid) != even || floatToHalf(std::nextafter(mid, 0.0f)) != h ||
        floatToHalf(std::nextafter(mid, INFINITY)) != h + 1 || floatToHalf(-mid) != (even | 0x8000))
      FAIL("rounding around half " << h);
  }
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);       // tie: down to even
  CHECK(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);   // tie: up to even
  CHECK(floatToHalf(std::ldexp(1.0f, -25)) == 0x0000);              // half the smallest subnormal
  CHECK(floatToHalf(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(floatToHalf(65519.0f) == 0x7BFF);
  CHECK(floatToHalf(65520.0f) == 0x7C00);  // the tie above 65504 rounds to infinity
  CHECK(floatToHalf(1e10f) == 0x7C00);
  CHECK(floatToHalf(-1e-10f) == 0x8000);
  CHECK(floatToHalf(0.1f) == 0x2E66);
  CHECK(floatToHalf(INFINITY) == 0x7C00);
  CHECK(floatToHalf(-INFINITY) == 0xFC00);
}
