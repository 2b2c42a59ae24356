// rng.hpp: the tests' own small deterministic generator (a 64-bit LCG), shared by the areas that draw
// random inputs (session, toolcall). Independent of the sampler's splitmix64, so a change there
// cannot move these tests' inputs.
#pragma once

#include <cstdint>
#include <vector>

struct Rng {
  uint64_t state;
  // below(n): uniform enough in [0, n) for test inputs; n > 0.
  uint32_t below(uint32_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((state >> 33) % n);
  }
  bool chance(uint32_t percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[below(static_cast<uint32_t>(v.size()))]; }
};
