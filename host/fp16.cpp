// fp16.cpp: binary16 <-> binary32 by bit manipulation (no hardware half type needed).
#include "fp16.hpp"

#include <cstring>

namespace needle {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;  // signed zero
    } else {      // subnormal: normalise the mantissa
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3FF) << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN, payload kept
  } else {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t exponent = (bits >> 23) & 0xFF;
  uint32_t mantissa = bits & 0x7FFFFF;
  if (exponent == 0xFF)  // infinity, or NaN kept quiet with its top payload bits
    return static_cast<uint16_t>(sign | 0x7C00 | (mantissa ? (0x200 | (mantissa >> 13)) : 0));
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00);  // overflow to infinity
  if (e <= 0) {
    // Subnormal half (or zero): shift the full 24-bit significand, round to nearest even.
    if (e < -10) return sign;
    uint32_t m = mantissa | 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: fine
  return static_cast<uint16_t>(sign | half);
}

}  // namespace needle
