// codebook_test.cpp: the 28 header floats, recomputed bit for bit, and the FWHT.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "bytes.hpp"
#include "cq.hpp"
#include "cq_helpers.hpp"

using namespace needle;

namespace {
uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
}  // namespace

TEST_CASE("computeCodebooks reproduces the design page's codebooks bit for bit", "[cq][codebook]") {
  const auto cb = computeCodebooks();
  // cb2 as hex (design page 1.2).
  const uint32_t cb2[4] = {0xbe085e47, 0xbd237060, 0x3d23fc09, 0x3e08a9db};
  for (int k = 0; k < 4; ++k) CHECK(bitsOf(cb[k]) == cb2[k]);
  // cb3 and cb4 as printed (9 significant digits: the nearest f32 is the value itself).
  const char* cb34[24] = {
      "-0.189261362", "-0.117884994", "-0.0661496893", "-0.0210134611", "0.0221010316", "0.0667850673",
      "0.118262075",  "0.189826027",
      "-0.239531547", "-0.180706054", "-0.140957937", "-0.109012552", "-0.0815129653", "-0.0565276518",
      "-0.0329391509", "-0.0101161096", "0.0127108004", "0.0357079171", "0.0594582558", "0.0849770233",
      "0.112741619",  "0.144696921",  "0.184239",     "0.242273703"};
  for (int k = 0; k < 24; ++k) {
    INFO("codebook float " << 4 + k);
    CHECK(bitsOf(cb[4 + k]) == bitsOf(std::strtof(cb34[k], nullptr)));
  }
  // Cached: a second call gives the same floats.
  CHECK(computeCodebooks() == cb);
}

TEST_CASE("codebookOffset places cb2, cb3, cb4 and refuses other widths", "[cq][codebook]") {
  CHECK(codebookOffset(2) == 0);
  CHECK(codebookOffset(3) == 4);
  CHECK(codebookOffset(4) == 12);
  CHECK_THROWS_AS(codebookOffset(5), Error);
  CHECK_THROWS_AS(codebookOffset(1), Error);
}

TEST_CASE("FWHT applied twice gives n x, exactly on small integers", "[cq][fwht]") {
  for (uint32_t n = 1; n <= 512; n *= 2) {
    std::vector<float> x(n), y(n);
    for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>((i * 37 + 11) % 23) - 11);
    y = x;
    fwht(y.data(), n);
    fwht(y.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == static_cast<float>(n) * x[i]);
  }
  std::vector<float> z(12);
  CHECK_THROWS_AS(fwht(z.data(), 12), Error);
  CHECK_THROWS_AS(fwht(z.data(), 0), Error);
}

TEST_CASE("FWHT is the natural-order Sylvester matrix: (-1)^popcount(i&j)", "[cq][fwht]") {
  // Column j of the unnormalised transform is the transform of the unit vector e_j.
  const uint32_t n = 128;
  for (uint32_t j : {0u, 1u, 5u, 64u, 127u}) {
    std::vector<float> e(n, 0.0f);
    e[j] = 1.0f;
    fwht(e.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(e[i] == ((__builtin_popcount(i & j) & 1) ? -1.0f : 1.0f));
  }
  // The butterfly's order: stride 1 first, a+b to the left (checked on a case where order matters
  // only through rounding would be fragile; a 4-point transform by hand is enough).
  float x[4] = {1, 2, 3, 4};
  fwht(x, 4);
  CHECK(x[0] == 10);
  CHECK(x[1] == -2);
  CHECK(x[2] == -4);
  CHECK(x[3] == 0);
}

TEST_CASE("fwhtNormalized is orthonormal and scales once by the f32 1/sqrt(n)", "[cq][fwht]") {
  cqtest::Normals rng(7);
  for (uint32_t n : {128u, 512u}) {
    std::vector<float> a = rng.vector(n), b = rng.vector(n);
    double aa = 0, ab = 0;
    for (uint32_t i = 0; i < n; ++i) aa += double(a[i]) * a[i], ab += double(a[i]) * b[i];
    std::vector<float> ha = a, hb = b;
    fwhtNormalized(ha.data(), n);
    fwhtNormalized(hb.data(), n);
    double haha = 0, hahb = 0;
    for (uint32_t i = 0; i < n; ++i) haha += double(ha[i]) * ha[i], hahb += double(ha[i]) * hb[i];
    CHECK(haha == Approx(aa).epsilon(1e-5));
    CHECK(hahb == Approx(ab).margin(1e-4 * n));
    // H is its own inverse.
    fwhtNormalized(ha.data(), n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(ha[i] == Approx(a[i]).margin(1e-5));
  }
  // The scale is one f32 multiplication by the rounded constant: e_0 becomes that constant.
  std::vector<float> e(128, 0.0f);
  e[0] = 1.0f;
  fwhtNormalized(e.data(), 128);
  CHECK(bitsOf(e[77]) == bitsOf(0.088388346f));
}
