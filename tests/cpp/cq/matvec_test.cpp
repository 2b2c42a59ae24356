// matvec_test.cpp: dequantisation, the f32 packed product, the A8 product (pinned to a scalar
// re-implementation of docs/numerics.md), and quantizeBlockInt8.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "bytes.hpp"
#include "cq.hpp"
#include "cq_helpers.hpp"
#include "fp16.hpp"

using namespace needle;
using cqtest::OwnedCq;
using cqtest::streamIndex;

namespace {

const uint32_t kWidths[] = {2, 3, 4, 5};

// ---- docs/numerics.md, "A8", written out step by step without the library's helpers ----

void referenceFwht(float* x, uint32_t n) {
  for (uint32_t stride = 1; stride < n; stride <<= 1)
    for (uint32_t base = 0; base < n; base += stride << 1)
      for (uint32_t j = 0; j < stride; ++j) {
        const float a = x[base + j], b = x[base + j + stride];
        x[base + j] = a + b;
        x[base + j + stride] = a - b;
      }
}

float referenceBlock(const float* x, uint32_t n, int8_t* q) {
  float amax = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]);
  if (amax == 0) {
    for (uint32_t i = 0; i < n; ++i) q[i] = 0;
    return 0;
  }
  const float inv = 127.0f / amax;
  for (uint32_t i = 0; i < n; ++i) {
    float r = std::nearbyint(x[i] * inv);
    if (r > 127) r = 127;
    if (r < -127) r = -127;
    q[i] = static_cast<int8_t>(r);
  }
  return amax / 127.0f;
}

std::vector<float> referenceA8(const OwnedCq& c, const std::vector<float>& x) {
  const CqMatrix& m = c.m;
  // 1. prepare
  std::vector<float> p(m.colsPadded, 0.0f);
  for (uint32_t i = 0; i < m.cols; ++i) p[i] = x[i];
  for (uint32_t s = 0; s < m.colsPadded; s += 128) {
    referenceFwht(&p[s], 128);
    for (uint32_t k = 0; k < 128; ++k) p[s + k] *= 0.088388346f;
  }
  // 2. quantise per block of 32
  std::vector<int8_t> xq(m.colsPadded);
  std::vector<float> xs(m.colsPadded / 32);
  for (uint32_t b = 0; b < xs.size(); ++b) xs[b] = referenceBlock(&p[32 * b], 32, &xq[32 * b]);
  // 3. int8 codebook levels, indexed by the raw stored index
  int8_t cbq[16] = {};
  float cbScale;
  if (m.bits == 5) {
    const float t = static_cast<float>(double{kTernaryC} / std::sqrt(128.0));
    cbq[1] = 127;
    cbq[3] = -127;
    cbScale = t / 127.0f;
  } else {
    const auto cb = computeCodebooks();
    const uint32_t n = 1u << m.bits;
    cbScale = referenceBlock(&cb[codebookOffset(m.bits)], n, cbq);
  }
  // 4-5. integer block sums, then f32 sums in order
  std::vector<float> y(m.rows);
  for (uint32_t r = 0; r < m.rows; ++r) {
    const uint8_t* row = m.packed + r * m.rowBytes;
    float acc = 0;
    for (uint32_t g = 0; g < m.colsPadded / 128; ++g) {
      float gsum = 0;
      for (uint32_t b = 0; b < 4; ++b) {
        int32_t isum = 0;
        for (uint32_t k = 0; k < 32; ++k) {
          const uint32_t col = g * 128 + b * 32 + k;
          isum += cbq[streamIndex(row, m.indexBits, col)] * xq[col];
        }
        gsum += static_cast<float>(isum) * xs[(g * 128 + b * 32) / 32];
      }
      const uint8_t* nb = m.norms + (size_t{r} * (m.colsPadded / 128) + g) * 2;
      acc += halfToFloat(static_cast<uint16_t>(nb[0] | (nb[1] << 8))) * gsum;
    }
    y[r] = acc * cbScale;
  }
  return y;
}

std::vector<double> denseProduct(const OwnedCq& c, const std::vector<float>& x) {
  std::vector<double> y(c.m.rows);
  std::vector<float> row(c.m.cols);
  for (uint32_t r = 0; r < c.m.rows; ++r) {
    dequantizeRow(c.m, r, row.data());
    double s = 0;
    for (uint32_t i = 0; i < c.m.cols; ++i) s += double(row[i]) * x[i];
    y[r] = s;
  }
  return y;
}

}  // namespace

TEST_CASE("quantize then dequantize stays close; padded columns are dropped", "[cq][dequant]") {
  cqtest::Normals rng(3);
  const uint32_t rows = 24, cols = 300;
  const std::vector<float> w = rng.vector(size_t{rows} * cols, 0.02f);
  // Expected relative error of Lloyd-Max on a Gaussian: about 0.34 (2 bits), 0.18 (3), 0.095 (4);
  // ternary about 0.4. The bounds leave a little room for 24 rows of random data.
  const double bound[6] = {0, 0, 0.36, 0.20, 0.11, 0.45};
  for (uint32_t bits : kWidths) {
    INFO("bits " << bits);
    OwnedCq q;
    cqtest::quantize(q, w, rows, cols, bits);
    double err = 0, ref = 0;
    std::vector<float> out(cols + 1, 12345.0f);
    for (uint32_t r = 0; r < rows; ++r) {
      dequantizeRow(q.m, r, out.data());
      REQUIRE(out[cols] == 12345.0f);  // nothing written past m.cols
      for (uint32_t i = 0; i < cols; ++i) {
        const double d = double(out[i]) - w[size_t{r} * cols + i];
        err += d * d;
        ref += double(w[size_t{r} * cols + i]) * w[size_t{r} * cols + i];
      }
    }
    const double rel = std::sqrt(err / ref);
    CHECK(rel < bound[bits]);
    CHECK(rel > bound[bits] / 3);  // and it is a quantiser, not a copy
  }
  OwnedCq q;
  cqtest::quantize(q, w, rows, cols, 2);
  std::vector<float> out(cols);
  CHECK_THROWS_AS(dequantizeRow(q.m, rows, out.data()), Error);
}

TEST_CASE("quantizeCq refuses bad widths, groups and non-finite weights", "[cq][quantize]") {
  const auto cb = computeCodebooks();
  std::vector<float> w(256, 0.5f);
  CHECK_THROWS_AS(quantizeCq(w.data(), 2, 128, 1, 128, cb), Error);
  CHECK_THROWS_AS(quantizeCq(w.data(), 2, 128, 6, 128, cb), Error);
  CHECK_THROWS_AS(quantizeCq(w.data(), 2, 128, 2, 96, cb), Error);
  CHECK_THROWS_AS(quantizeCq(w.data(), 0, 128, 2, 128, cb), Error);
  w[200] = std::nanf("");
  CHECK_THROWS_WITH(quantizeCq(w.data(), 2, 128, 2, 128, cb), Catch::Contains("row 1, column 72"));
  w[200] = 70000.0f;  // a norm that fp16 cannot hold
  CHECK_THROWS_WITH(quantizeCq(w.data(), 2, 128, 2, 128, cb), Catch::Contains("row 1, group 0"));
  // A zero group has norm 0 and stores fp16 zero; its indices are the levels nearest 0.
  std::vector<float> zero(128, 0.0f);
  const std::vector<uint8_t> blob = quantizeCq(zero.data(), 1, 128, 2, 128, cb);
  CHECK(blob[32] == 0);
  CHECK(blob[33] == 0);
  CHECK(blob[0] == 0x55);  // index 1 (-0.0399 is nearer to 0 than +0.0400) in every crumb

  // An exact tie goes to the lower index. With the 2-bit levels {-1, -0.5, 0.5, 1} a zero group
  // (u = 0) lies exactly between indices 1 and 2: every crumb is 1 (0x55), never 2 (0xAA).
  std::array<float, kCodebookLen> tie = cb;
  tie[0] = -1.0f, tie[1] = -0.5f, tie[2] = 0.5f, tie[3] = 1.0f;
  const std::vector<uint8_t> tied = quantizeCq(zero.data(), 1, 128, 2, 128, tie);
  for (int i = 0; i < 32; ++i) REQUIRE(int{tied[i]} == 0x55);
  // The quantizer relies on sorted levels.
  std::array<float, kCodebookLen> unsorted = cb;
  std::swap(unsorted[0], unsorted[1]);
  CHECK_THROWS_AS(quantizeCq(zero.data(), 1, 128, 2, 128, unsorted), Error);
}

TEST_CASE("the packed kernels read the bit stream as the design page defines it", "[cq][matvec]") {
  // Random bytes as packed indices, every norm 1.0: W x for x = H e_k (so the prepared vector is e_k)
  // is level[index of column k] in every row.
  cqtest::Normals rng(5);
  for (uint32_t bits : kWidths) {
    INFO("bits " << bits);
    OwnedCq c;
    const uint32_t width = bits == 5 ? 2 : bits;
    const uint32_t rows = 3, rowBytes = 256 * width / 8;
    c.blob.resize(rows * rowBytes + rows * 2 * 2);
    for (uint32_t i = 0; i < rows * rowBytes; ++i) {
      uint8_t byte = static_cast<uint8_t>(rng.uniform() * 256);
      if (bits == 5)  // crumb 2 is never written: map it to 0
        for (int t = 0; t < 4; ++t)
          if (((byte >> (2 * t)) & 3) == 2) byte = static_cast<uint8_t>(byte & ~(3 << (2 * t)));
      c.blob[i] = byte;
    }
    for (uint32_t i = 0; i < rows * 2; ++i) c.blob[rows * rowBytes + 2 * i + 1] = 0x3C;  // fp16 1.0
    cqtest::describe(c, rows, 256, bits);
    std::vector<float> prepared(256), y(rows);
    for (uint32_t k = 0; k < 256; ++k) {
      std::fill(prepared.begin(), prepared.end(), 0.0f);
      prepared[k] = 1.0f;
      cqMatvecPrepared(c.m, prepared.data(), y.data(), 0, rows);
      for (uint32_t r = 0; r < rows; ++r)
        REQUIRE(y[r] == c.m.levels[streamIndex(c.blob.data() + r * rowBytes, width, k)]);
    }
  }
}

TEST_CASE("cqMatvec(x)[row] matches dot(dequantizeRow(row), x)", "[cq][matvec]") {
  cqtest::Normals rng(9);
  const uint32_t rows = 40, cols = 300;
  const std::vector<float> w = rng.vector(size_t{rows} * cols, 0.05f);
  const std::vector<float> x = rng.vector(cols);
  for (uint32_t bits : kWidths) {
    INFO("bits " << bits);
    OwnedCq q;
    cqtest::quantize(q, w, rows, cols, bits);
    std::vector<float> y(rows);
    cqMatvec(q.m, x.data(), y.data());
    CHECK(cqtest::maxRel(y, denseProduct(q, x)) < 1e-5);

    // A row range gives the same values as the full product.
    const std::vector<float> prepared = prepareF32(q.m, x.data());
    std::vector<float> part(7);
    cqMatvecPrepared(q.m, prepared.data(), part.data(), 30, 37);
    for (uint32_t i = 0; i < 7; ++i) REQUIRE(part[i] == y[30 + i]);
    CHECK_THROWS_AS(cqMatvecPrepared(q.m, prepared.data(), part.data(), 35, 41), Error);
    CHECK_THROWS_AS(cqMatvecPrepared(q.m, prepared.data(), part.data(), 5, 4), Error);
  }
}

TEST_CASE("A8 products equal the scalar re-implementation of docs/numerics.md exactly", "[cq][a8]") {
  cqtest::Normals rng(13);
  const uint32_t rows = 33, cols = 300;
  const std::vector<float> w = rng.vector(size_t{rows} * cols, 0.05f);
  std::vector<float> x = rng.vector(cols);
  x[17] = 0;  // and a block of exact zeros after the transform: none here, but a zero input block below
  for (uint32_t bits : kWidths) {
    INFO("bits " << bits);
    OwnedCq q;
    cqtest::quantize(q, w, rows, cols, bits);
    std::vector<float> y(rows), f32(rows);
    cqMatvecA8(q.m, x.data(), y.data());
    const std::vector<float> expected = referenceA8(q, x);
    for (uint32_t r = 0; r < rows; ++r) REQUIRE(y[r] == expected[r]);
    // And close to the f32 product.
    cqMatvec(q.m, x.data(), f32.data());
    std::vector<double> ref(f32.begin(), f32.end());
    CHECK(cqtest::maxRel(y, ref) < 1e-2);
  }
  // Columns 256..299 zero: the padded group's last blocks quantise to scale 0.
  std::vector<float> sparse(cols, 0.0f);
  sparse[0] = 1.0f;
  OwnedCq q;
  cqtest::quantize(q, w, rows, cols, 2);
  const PreparedA8 p = prepareA8(q.m, sparse.data());
  REQUIRE(p.scale.size() == 12);
  CHECK(p.scale[11] == 0.0f);
  std::vector<float> y(rows);
  cqMatvecA8(q.m, sparse.data(), y.data());
  const std::vector<float> expected = referenceA8(q, sparse);
  for (uint32_t r = 0; r < rows; ++r) REQUIRE(y[r] == expected[r]);
}

TEST_CASE("levelsA8 quantises each width's levels like an activation block", "[cq][a8]") {
  OwnedCq c;
  c.blob.resize(32 + 2);
  cqtest::describe(c, 1, 128, 2);
  LevelsA8 l2 = levelsA8(c.m);
  // cb2: amax = 0.133460447 (the last level) -> +127; the first level -0.13317214 -> -127 (126.73).
  CHECK(l2.q[3] == 127);
  CHECK(l2.q[0] == -127);
  CHECK(l2.q[1] == static_cast<int8_t>(std::nearbyint(c.m.levels[1] * (127.0f / c.m.levels[3]))));
  CHECK(l2.scale == c.m.levels[3] / 127.0f);
  cqtest::describe(c, 1, 128, 5);
  LevelsA8 lt = levelsA8(c.m);
  CHECK(lt.q[0] == 0);
  CHECK(lt.q[1] == 127);
  CHECK(lt.q[2] == 0);
  CHECK(lt.q[3] == -127);
  CHECK(lt.scale == 0.108187906f / 127.0f);
}

TEST_CASE("quantizeBlockInt8 rounds ties to even, clamps, and zeroes an all-zero block", "[cq][a8]") {
  // amax 127 makes the inverse exactly 1, so x * inv is x and the ties are visible.
  const float x[10] = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -3.49f, 3.5f};
  int8_t q[10];
  const float scale = quantizeBlockInt8(x, 10, q);
  CHECK(scale == 1.0f);
  const int8_t expected[10] = {127, 0, 2, 2, 0, -2, -2, 126, -3, 4};
  for (int i = 0; i < 10; ++i) CHECK(q[i] == expected[i]);

  // A negative maximum gives -127; the scale is amax / 127 in f32.
  const float y[3] = {-4.0f, 1.0f, 2.0f};
  int8_t qy[3];
  CHECK(quantizeBlockInt8(y, 3, qy) == 4.0f / 127.0f);
  CHECK(qy[0] == -127);
  CHECK(qy[1] == 32);  // 31.75 rounds up
  CHECK(qy[2] == 64);  // 63.5 ties to even 64

  const float zero[4] = {0, -0.0f, 0, 0};
  int8_t qz[4] = {9, 9, 9, 9};
  CHECK(quantizeBlockInt8(zero, 4, qz) == 0.0f);
  for (int8_t v : qz) CHECK(v == 0);

  // Non-finite input never reaches an undefined cast: NaN becomes 0, the rest stays in range.
  const float bad[3] = {std::nanf(""), 1.0f, -2.0f};
  int8_t qb[3];
  CHECK(quantizeBlockInt8(bad, 3, qb) == 2.0f / 127.0f);
  CHECK(qb[0] == 0);
  CHECK(qb[1] == 64);  // 63.5 -> 64
  CHECK(qb[2] == -127);
}
