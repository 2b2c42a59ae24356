// fp16.hpp: IEEE binary16 <-> binary32, exact in both directions where representable.
#pragma once
#include <cstdint>

namespace needle {

// Exact widening: zero, negative zero, subnormals, infinities and NaN payloads included.
float halfToFloat(uint16_t bits);

// Rounding to nearest, ties to even (numpy's astype(float16)); overflow gives infinity, NaN stays NaN.
uint16_t floatToHalf(float value);

}  // namespace needle
