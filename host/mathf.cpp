// mathf.cpp: the transcendentals of docs/numerics.md, one IEEE f64 operation per step in the order the
// page states. The library is compiled with -ffp-contract=off (CMakeLists.txt) so that no a * b + c is
// fused into one rounding: a fused step would give different bits from engine.wat's.
#include "mathf.hpp"

#include <array>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <limits>

namespace needle {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The bits of a double and back (memcpy: std::bit_cast is missing from Emscripten 3.1.6's libc++).
uint64_t bitsOf(double x) {
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
double fromBits(uint64_t u) {
  double x;
  std::memcpy(&x, &u, 8);
  return x;
}

// 2^n for a normal exponent n (-1022 <= n <= 1023), from the exponent bits.
double pow2(int32_t n) {
  return fromBits(static_cast<uint64_t>(static_cast<int64_t>(n) + 1023) << 52);
}

// T[j] ~ 2^(j/32), j = 0..31: R_b = 2^(2^b / 32) by repeated square roots of 2 (R_4 = sqrt 2,
// R_b = sqrt R_(b+1)), and T[j] = the product of R_b over the set bits b of j, from b = 0 up.
// Square roots and products are correctly rounded, so every implementation gets the same table.
std::array<double, 32> makeExpTable() {
  std::array<double, 5> root{};
  root[4] = std::sqrt(2.0);
  for (int b = 3; b >= 0; --b) root[b] = std::sqrt(root[b + 1]);
  std::array<double, 32> table{};
  for (uint32_t j = 0; j < 32; ++j) {
    double t = 1.0;
    for (uint32_t b = 0; b < 5; ++b)
      if ((j >> b) & 1u) t = t * root[b];
    table[j] = t;
  }
  return table;
}

const std::array<double, 32>& expTable() {
  static const std::array<double, 32> table = makeExpTable();
  return table;
}

// Taylor kernels of sin and cos for |r| <= pi/4: s = 1 - r^2 s / (i (i - 1)) from the top.
double sinKernel(double r) {
  const double r2 = r * r;
  double s = 1.0;
  for (int i = 23; i > 1; i -= 2) s = 1.0 - (r2 * s) / static_cast<double>(i * (i - 1));
  return r * s;
}

double cosKernel(double r) {
  const double r2 = r * r;
  double s = 1.0;
  for (int i = 22; i > 0; i -= 2) s = 1.0 - (r2 * s) / static_cast<double>(i * (i - 1));
  return s;
}

// sin (which = 0) or cos (which = 1): x = k pi/2 + r, then the kernel of quadrant (k + which) mod 4.
double trig(double x, int64_t which) {
  if (!(std::fabs(x) < 0x1p30)) return kNaN;  // NaN, infinity, or outside the domain (RoPE: below 2^20)
  const double k = std::nearbyint(x * 0x1.45f306dc9c883p-1);  // 2/pi
  const double r = ((x - k * 0x1.921fb54400000p0) - k * 0x1.0b4611a600000p-34) - k * 0x1.3198a2e037073p-69;
  switch ((static_cast<int64_t>(k) + which) & 3) {
    case 0: return sinKernel(r);
    case 1: return cosKernel(r);
    case 2: return -sinKernel(r);
    default: return -cosKernel(r);
  }
}

}  // namespace

float expf32(float x) {
  if (!(std::fabs(x) <= 104.0f)) {  // NaN, or beyond the f32 range: e^104 overflows, e^-104 rounds to 0
    if (x != x) return x;
    return x > 0.0f ? std::numeric_limits<float>::infinity() : 0.0f;
  }
  // x 32/ln2 = 32 k + j + r with |r| <= 1/2: e^x = 2^k 2^(j/32) 2^(r/32).
  const double z = static_cast<double>(x) * 0x1.71547652b82fep+5;
  const double kd = std::nearbyint(z);
  const double r = z - kd;  // exact
  const int32_t n = static_cast<int32_t>(kd);
  const double scale = expTable()[static_cast<uint32_t>(n) & 31u] * pow2(n >> 5);  // exact: a power of 2
  // 2^(r/32) = e^(r ln2/32): Taylor coefficients (ln2/32)^i / i!, Horner from the top.
  double p = 0x1.3b2ab6fba4e77p-27;
  p = p * r + 0x1.c6b08d704a0c0p-20;
  p = p * r + 0x1.ebfbdff82c58fp-13;
  p = p * r + 0x1.62e42fefa39efp-6;
  p = p * r + 1.0;
  return static_cast<float>(p * scale);
}

// x = 2^k m for a positive normal double, with m in (sqrt(1/2), sqrt 2]: returns m and adds k to e.
// Exact (only exponent bits change), shared by logf32 and log64.
static double splitSqrt2(double x, int32_t& e) {
  const uint64_t bits = bitsOf(x);
  e = e + (static_cast<int32_t>(bits >> 52) - 1023);
  double m = fromBits((bits & 0x000fffffffffffffu) | 0x3ff0000000000000u);
  if (m > 0x1.6a09e667f3bcdp+0) {
    m = m * 0.5;
    e = e + 1;
  }
  return m;
}

float logf32(float x) {
  if (!(x > 0.0f && x < std::numeric_limits<float>::infinity())) {
    if (x == 0.0f) return -std::numeric_limits<float>::infinity();
    if (x > 0.0f) return x;                       // +infinity
    return std::numeric_limits<float>::quiet_NaN();  // negative or NaN
  }
  // x = 2^e m exactly in f64 (an f32 subnormal is a normal f64), m in (sqrt(1/2), sqrt 2].
  int32_t e = 0;
  const double m = splitSqrt2(static_cast<double>(x), e);
  // ln m = 2 atanh(s) = s (2 + 2/3 s^2 + 2/5 s^4 + ...), s = (m - 1)/(m + 1), |s| < 0.172.
  const double s = (m - 1.0) / (m + 1.0);
  const double t = s * s;
  double p = 0x1.3b13b13b13b14p-3;  // 2/13
  p = p * t + 0x1.745d1745d1746p-3;  // 2/11
  p = p * t + 0x1.c71c71c71c71cp-3;  // 2/9
  p = p * t + 0x1.2492492492492p-2;  // 2/7
  p = p * t + 0x1.999999999999ap-2;  // 2/5
  p = p * t + 0x1.5555555555555p-1;  // 2/3
  p = p * t + 2.0;
  return static_cast<float>(static_cast<double>(e) * 0x1.62e42fefa39efp-1 + s * p);
}

double exp64(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return kInf;
  if (x < -745.2) return 0.0;
  const double k = std::nearbyint(x * 0x1.71547652b82fep+0);  // 1/ln2
  // ln 2 in two parts: k times the first is exact for |k| < 2^11
  const double r = (x - k * 0x1.62e42fee00000p-1) - k * 0x1.a39ef35793c76p-33;
  double s = 1.0;
  for (int i = 15; i >= 1; --i) s = 1.0 + (r * (1.0 / static_cast<double>(i))) * s;
  // 2^k in two halves, so that subnormal results and k = 1024 stay exact
  const int32_t n = static_cast<int32_t>(k);
  return (s * pow2(n >> 1)) * pow2(n - (n >> 1));
}

double log64(double x) {
  if (x != x) return x;
  if (x < 0.0) return kNaN;
  if (x == 0.0) return -kInf;
  if (x == kInf) return x;
  int32_t e = 0;
  if (x < 0x1p-1022) {  // subnormal: scale into the normal range
    x = x * 0x1p54;
    e = -54;
  }
  const double m = splitSqrt2(x, e);
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  // atanh series s + s^3/3 + ... + s^25/25, Horner in s^2 from the top
  double sum = 0.0;
  for (int i = 25; i > 0; i -= 2) sum = 1.0 / static_cast<double>(i) + s2 * sum;
  const double term = 2.0 * (s * sum);
  const double ed = static_cast<double>(e);
  return ed * 0x1.62e42fee00000p-1 + (ed * 0x1.a39ef35793c76p-33 + term);
}

double sin64(double x) { return trig(x, 0); }
double cos64(double x) { return trig(x, 1); }

}  // namespace needle
