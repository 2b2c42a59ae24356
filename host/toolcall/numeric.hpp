// numeric.hpp (internal to host/toolcall): number bounds as exact scaled integers.
//
// The call grammar writes integers as -?(0|[1-9][0-9]*) and numbers with at most 8 fraction digits,
// both with at most 16 integer digits. Every value it can write is then an integer multiple of
// 10^-8 (numbers) or of 1 (integers): in "scaled units" (value x 10^8, or value x 1) all of them are
// integers of magnitude below 10^24, and so are the bounds, rounded inward. __int128 holds them
// exactly (Emscripten's clang supports it).
#pragma once
#include <algorithm>
#include <string>
#include <string_view>

#include "json.hpp"
#include "toolcall/schema.hpp"

namespace needle::toolcall::numeric {

using Int = __int128;

constexpr Int pow10(int n) {
  Int r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

// value x scale for the two numeric types: 10^8 for numbers, 1 for integers.
constexpr Int scaleOf(bool integer) { return integer ? 1 : pow10(static_cast<int>(kMaxFractionDigits)); }
// The largest scaled magnitude the grammar can write: 16 nines, and 8 more for numbers.
constexpr Int reachOf(bool integer) { return pow10(static_cast<int>(kMaxIntegerDigits)) * scaleOf(integer) - 1; }

// floor (or ceil) of literal x scale, clamped to +-10^27 (past every reachable value).
inline Int scaled(std::string_view literal, Int scale, bool ceil) {
  const json::Decimal d = json::decimal(literal);
  constexpr Int kClamp = pow10(27);
  if (d.digits.empty()) return 0;
  int scaleDigits = 0;
  for (Int s = scale; s > 1; s /= 10) ++scaleDigits;
  const int64_t shift = d.exponent + scaleDigits;  // the value is digits x 10^shift in scaled units
  const int64_t length = static_cast<int64_t>(d.digits.size());
  Int magnitude = 0;
  bool inexact = false;
  if (length + shift > 27) {
    magnitude = kClamp;
  } else {
    const int64_t kept = shift >= 0 ? length : length + shift;  // digits left of the scaled point
    for (int64_t i = 0; i < kept; ++i) magnitude = magnitude * 10 + (d.digits[static_cast<size_t>(i)] - '0');
    for (int64_t i = 0; i < shift; ++i) magnitude *= 10;
    inexact = kept < length;  // the dropped digits end in a non-zero digit
  }
  if (!d.negative) return magnitude + ((ceil && inexact) ? 1 : 0);
  return -magnitude - ((!ceil && inexact) ? 1 : 0);
}

// The inclusive range [lo, hi] of scaled values that satisfy a numeric schema's bounds and that the
// grammar can write. lo > hi when there is none.
struct Range {
  Int lo, hi;
};

inline Range rangeOf(const Schema& s) {
  const bool integer = s.type == Type::Integer;
  const Int scale = scaleOf(integer);
  Range r{-reachOf(integer), reachOf(integer)};
  if (s.minimum) r.lo = std::max(r.lo, scaled(*s.minimum, scale, true));
  if (s.exclusiveMinimum) r.lo = std::max(r.lo, scaled(*s.exclusiveMinimum, scale, false) + 1);
  if (s.maximum) r.hi = std::min(r.hi, scaled(*s.maximum, scale, false));
  if (s.exclusiveMaximum) r.hi = std::min(r.hi, scaled(*s.exclusiveMaximum, scale, true) - 1);
  return r;
}

}  // namespace needle::toolcall::numeric
