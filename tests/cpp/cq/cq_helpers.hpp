// cq_helpers.hpp: what the CQ tests share. A CqMatrix over a blob that the test owns (built from
// quantizeCq output without the archive reader), and a small deterministic random source.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "cq.hpp"

namespace cqtest {

// A packed matrix and the bytes it points into.
struct OwnedCq {
  std::vector<uint8_t> blob;
  needle::CqMatrix m;
  OwnedCq() = default;
  OwnedCq(const OwnedCq&) = delete;  // m points into blob
  OwnedCq& operator=(const OwnedCq&) = delete;
};

// The level of each raw stored index, as the archive reader fills CqMatrix::levels.
inline std::array<float, 16> levelsFor(uint32_t bits, uint32_t group) {
  std::array<float, 16> levels{};
  if (bits == 5) {
    const float t = static_cast<float>(double{needle::kTernaryC} / std::sqrt(double(group)));
    levels[1] = t;   // crumb 1: +1
    levels[3] = -t;  // crumb 3: -1 (crumbs 0 and 2 are 0)
  } else {
    const auto codebook = needle::computeCodebooks();
    for (uint32_t k = 0; k < (1u << bits); ++k) levels[k] = codebook[needle::codebookOffset(bits) + k];
  }
  return levels;
}

// Fills `out.m` to describe `out.blob` as a [rows, cols] matrix of the given width.
inline void describe(OwnedCq& out, uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group = 128) {
  needle::CqMatrix& m = out.m;
  m.rows = rows;
  m.cols = cols;
  m.group = group;
  m.colsPadded = (cols + group - 1) / group * group;
  m.bits = bits;
  m.indexBits = bits == 5 ? 2 : bits;
  m.rowBytes = size_t{m.colsPadded} * m.indexBits / 8;
  m.packed = out.blob.data();
  m.norms = out.blob.data() + size_t{rows} * m.rowBytes;
  m.levels = levelsFor(bits, group);
}

// Quantizes w [rows, cols] and describes the result.
inline void quantize(OwnedCq& out, const std::vector<float>& w, uint32_t rows, uint32_t cols, uint32_t bits) {
  out.blob = needle::quantizeCq(w.data(), rows, cols, bits, 128, needle::computeCodebooks());
  describe(out, rows, cols, bits);
}

// Deterministic normals for test data (splitmix64 + Box-Muller), independent of the library's PRNGs.
class Normals {
 public:
  explicit Normals(uint64_t seed) : state_(seed) {}
  double uniform() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }
  float next() {
    return static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - uniform())) * std::cos(6.283185307179586 * uniform()));
  }
  std::vector<float> vector(size_t n, float scale = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * next();
    return v;
  }

 private:
  uint64_t state_;
};

// max_i |a_i - ref_i| / max_i |ref_i| (docs/numerics.md).
inline double maxRel(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(a[i] - ref[i]));
    den = std::max(den, std::fabs(ref[i]));
  }
  return num / den;
}

// The raw index of column k of a packed row, read bit by bit from the stream definition.
inline uint32_t streamIndex(const uint8_t* row, uint32_t width, uint32_t k) {
  uint32_t value = 0;
  for (uint32_t b = 0; b < width; ++b) {
    const uint32_t j = k * width + b;
    value |= ((row[j / 8] >> (j % 8)) & 1u) << b;
  }
  return value;
}

}  // namespace cqtest
