// quantize_test.cpp: the CQ quantizer (design page 2): nearest levels, fp16 norms, exact packed bytes.
#include <catch2/catch.hpp>

#include <cmath>

#include "bytes.hpp"
#include "cq.hpp"
#include "cq_helpers.hpp"
#include "fp16.hpp"

using namespace needle;
using cqtest::OwnedCq;
using cqtest::streamIndex;

namespace {

// H_G in double, from its definition: (-1)^popcount(i AND j) / sqrt(G).
std::vector<double> hadamardApply(const std::vector<double>& v) {
  const size_t n = v.size();
  std::vector<double> out(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) out[i] += ((__builtin_popcountll(i & j) & 1) ? -v[j] : v[j]);
  for (double& x : out) x /= std::sqrt(double(n));
  return out;
}

// A [rows, 128] matrix whose group g of row r rotates to levels[pattern(r, k)] exactly (up to the f32
// rounding of w): w = H r, so H w = r. The patterns below keep ||r|| within the range where the scaled
// u = r / ||r|| still rounds to the same levels.
std::vector<float> fromRotated(const std::vector<std::vector<double>>& rotatedRows) {
  std::vector<float> w;
  for (const auto& r : rotatedRows)
    for (double x : hadamardApply(r)) w.push_back(static_cast<float>(x));
  return w;
}

}  // namespace

TEST_CASE("packed bytes by hand: 2, 3, 4 bits and ternary", "[cq][quantize]") {
  const auto cb = computeCodebooks();
  // Row 0 repeats `pattern` along its 128 columns; row 1 uses the mirrored indices L-1-i. Each
  // pattern keeps the sum of squared levels near 1 (scale 0.90, 1.05, 0.96), far from any midpoint.
  struct Case {
    uint32_t bits;
    std::vector<uint32_t> pattern;
    std::vector<uint8_t> forward, backward;  // the bytes of one pattern period, rows 0 and 1
  };
  const Case cases[] = {
      // Indices 0,1,2,3 in one byte, LSB first: 0 | 1<<2 | 2<<4 | 3<<6.
      {2, {0, 1, 2, 3}, {0xE4}, {0x1B}},
      // 8 indices per 24-bit little-endian word: 0..7 is 0xFAC688; 3,4,3,4,... is 0x8E38E3.
      {3, {0, 1, 2, 3, 4, 5, 6, 7, 3, 4, 3, 4, 3, 4, 3, 4},
       {0x88, 0xC6, 0xFA, 0xE3, 0x38, 0x8E},
       {0x77, 0x39, 0x05, 0x1C, 0xC7, 0x71}},
      // The even column in the low nibble.
      {4, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8},
       {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, 0x87, 0x87, 0x87, 0x87, 0x87, 0x87, 0x87, 0x87},
       {0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78}},
  };
  for (const Case& c : cases) {
    INFO("bits " << c.bits);
    const uint32_t levels = 1u << c.bits;
    std::vector<std::vector<double>> rows(2, std::vector<double>(128));
    for (uint32_t k = 0; k < 128; ++k) {
      const uint32_t index = c.pattern[k % c.pattern.size()];
      rows[0][k] = cb[codebookOffset(c.bits) + index];
      rows[1][k] = cb[codebookOffset(c.bits) + levels - 1 - index];
    }
    const std::vector<float> w = fromRotated(rows);
    const std::vector<uint8_t> blob = quantizeCq(w.data(), 2, 128, c.bits, 128, cb);
    const size_t rowBytes = 128 * c.bits / 8;
    REQUIRE(blob.size() == 2 * rowBytes + 2 * 2);
    for (size_t i = 0; i < rowBytes; ++i) {
      INFO("byte " << i);
      REQUIRE(int{blob[i]} == int{c.forward[i % c.forward.size()]});
      REQUIRE(int{blob[rowBytes + i]} == int{c.backward[i % c.backward.size()]});
    }
    // Norms after the packed rows: fp16 of ||r||, little-endian, row-major.
    for (int r = 0; r < 2; ++r) {
      double sum = 0;
      for (double x : rows[r]) sum += x * x;
      const uint16_t expected = floatToHalf(static_cast<float>(std::sqrt(sum)));
      CHECK(blob[2 * rowBytes + 2 * r] == (expected & 0xFF));
      CHECK(blob[2 * rowBytes + 2 * r + 1] == (expected >> 8));
    }
  }

  // Ternary: levels {-t, 0, +t} at index k mod 3, written as crumbs 3, 0, 1. Bytes repeat every three:
  // columns 0-3 are levels 0,1,2,0 = crumbs 3,0,1,3 = 0xD3; then 0x34 and 0x4D.
  const double t = double{kTernaryC} / std::sqrt(128.0);
  std::vector<std::vector<double>> rows(1, std::vector<double>(128));
  for (uint32_t k = 0; k < 128; ++k) rows[0][k] = (k % 3 == 0) ? -t : (k % 3 == 1) ? 0.0 : t;
  const std::vector<float> w = fromRotated(rows);
  const std::vector<uint8_t> blob = quantizeCq(w.data(), 1, 128, 5, 128, cb);
  REQUIRE(blob.size() == 32 + 2);
  const uint8_t expected[3] = {0xD3, 0x34, 0x4D};
  for (size_t i = 0; i < 32; ++i) {
    INFO("byte " << i);
    REQUIRE(int{blob[i]} == int{expected[i % 3]});
  }
}

TEST_CASE("quantizeCq picks the nearest level of the unit-norm rotated group", "[cq][quantize]") {
  cqtest::Normals rng(11);
  const uint32_t rows = 6, cols = 300;  // 3 groups, the last one padded with 84 zero columns
  const std::vector<float> w = rng.vector(size_t{rows} * cols, 0.05f);
  const auto cb = computeCodebooks();
  for (uint32_t bits : {2u, 3u, 4u, 5u}) {
    INFO("bits " << bits);
    OwnedCq q;
    cqtest::quantize(q, w, rows, cols, bits);
    const uint32_t width = bits == 5 ? 2 : bits;
    REQUIRE(q.blob.size() == size_t{rows} * 384 * width / 8 + size_t{rows} * 3 * 2);
    std::vector<double> level;  // sorted levels and the code stored for each
    std::vector<uint32_t> code;
    if (bits == 5) {
      const double t = q.m.levels[1];
      level = {-t, 0, t};
      code = {3, 0, 1};
    } else {
      for (uint32_t k = 0; k < (1u << bits); ++k) level.push_back(cb[codebookOffset(bits) + k]), code.push_back(k);
    }
    size_t checked = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t g = 0; g < 3; ++g) {
        std::vector<double> group(128, 0.0);
        for (uint32_t k = 0; k < 128 && g * 128 + k < cols; ++k) group[k] = w[size_t{r} * cols + g * 128 + k];
        const std::vector<double> rot = hadamardApply(group);
        double norm = 0;
        for (double x : rot) norm += x * x;
        norm = std::sqrt(norm);
        // The stored norm is fp16 of the norm (H is orthonormal: also the norm of the raw group).
        const uint8_t* stored = q.m.norms + (size_t{r} * 3 + g) * 2;
        CHECK((stored[0] | (stored[1] << 8)) == floatToHalf(static_cast<float>(norm)));
        ++checked;
        for (uint32_t k = 0; k < 128; ++k) {
          const double u = rot[k] / norm;
          size_t best = 0;
          for (size_t l = 1; l < level.size(); ++l)
            if (std::fabs(u - level[l]) < std::fabs(u - level[best])) best = l;
          // Skip values within rounding distance of a midpoint (the test's H is not the library's).
          bool nearTie = false;
          for (size_t l = 0; l + 1 < level.size(); ++l)
            nearTie = nearTie || std::fabs(u - (level[l] + level[l + 1]) / 2) < 1e-9;
          if (nearTie) continue;
          REQUIRE(streamIndex(q.m.packed + r * q.m.rowBytes, width, g * 128 + k) == code[best]);
        }
      }
    }
    CHECK(checked == rows * 3);
  }
}
