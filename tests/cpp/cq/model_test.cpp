// model_test.cpp: randomModel (deterministic, complete, sensibly scaled).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "archive.hpp"
#include "bytes.hpp"
#include "geometry.hpp"
#include "layout.hpp"
#include "reference.hpp"
#include "writer.hpp"

using namespace needle;

namespace {

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double meanOf(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / v.size();
}

double stdOf(const std::vector<float>& v) {
  const double m = meanOf(v);
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / v.size());
}

}  // namespace

TEST_CASE("randomModel fills every layout tensor, deterministically", "[cq][random]") {
  const Geometry g = presetGeometry("tiny");
  const FloatModel a = randomModel(g, 42, true);
  const FloatModel b = randomModel(g, 42, true);
  const FloatModel c = randomModel(g, 43, true);
  const std::vector<TensorSpec> layout = canonicalLayout(g, {1, 2}, false);
  REQUIRE(a.headCodes == std::vector<uint32_t>{1, 2});
  REQUIRE(a.tensors.size() == layout.size());
  CHECK(a.geo.d_model == g.d_model);
  CHECK(a.geo.rope_theta == g.rope_theta);
  size_t differing = 0;
  for (const TensorSpec& spec : layout) {
    INFO(spec.key);
    const FloatTensor& t = a.tensors.at(spec.key);
    CHECK(t.shape == spec.shape);
    uint64_t n = 1;
    for (uint64_t dim : spec.shape) n *= dim;
    REQUIRE(t.data.size() == n);
    for (float x : t.data) REQUIRE((std::isfinite(x) && std::fabs(x) < 60000.0f));  // fits fp16
    CHECK(sameBits(t.data, b.tensors.at(spec.key).data));
    differing += !sameBits(t.data, c.tensors.at(spec.key).data);
  }
  // Every tensor changes with the seed except the fixed ones: the manifest and the contrastive bias.
  CHECK(differing == layout.size() - 2);
  CHECK(a.tensors.at("heads.manifest").data == std::vector<float>{1.0f, 2.0f});
  for (float x : a.tensors.at("heads.0.bias").data) CHECK(x == 0.0f);
}

TEST_CASE("randomModel streams are per tensor: heads do not change the other tensors", "[cq][random]") {
  const Geometry g = presetGeometry("tiny");
  const FloatModel with = randomModel(g, 7, true);
  const FloatModel without = randomModel(g, 7, false);
  CHECK(without.headCodes.empty());
  CHECK(without.tensors.count("heads.manifest") == 0);
  for (const auto& [key, tensor] : without.tensors) {
    INFO(key);
    CHECK(sameBits(tensor.data, with.tensors.at(key).data));
  }
}

TEST_CASE("randomModel scales: small embedding rows, N(0, 1/in) projections, 4I routing bias",
          "[cq][random]") {
  const Geometry g = presetGeometry("small");
  const FloatModel m = randomModel(g, 1, false);
  const std::vector<float>& e = m.tensors.at("embedding").data;
  double meanNorm = 0;
  for (uint32_t r = 0; r < g.vocab; ++r) {
    double s = 0;
    for (uint32_t c = 0; c < g.d_model; ++c) s += double(e[size_t{r} * g.d_model + c]) * e[size_t{r} * g.d_model + c];
    meanNorm += std::sqrt(s) / g.vocab;
  }
  CHECK(meanNorm == Approx(0.05).epsilon(0.02));
  // The final norm's (1 + s) undoes the small rows in the tied logits.
  CHECK(1 + meanOf(m.tensors.at("final_norm").data) == Approx(20.0).epsilon(0.03));
  CHECK(stdOf(m.tensors.at("layers.2.q_proj").data) == Approx(1 / std::sqrt(double(g.d_model))).epsilon(0.03));
  CHECK(stdOf(m.tensors.at("mhc.phi_res").data) == Approx(1 / std::sqrt(4.0 * g.d_model)).epsilon(0.03));
  CHECK(std::fabs(meanOf(m.tensors.at("layers.0.norm_in").data)) < 0.03);
  CHECK(meanOf(m.tensors.at("layers.0.d1").data) == Approx(1.0).epsilon(0.03));
  const std::vector<float>& bres = m.tensors.at("mhc.b_res").data;
  double diagonal = 0, offDiagonal = 0;
  for (uint32_t i = 0; i < g.num_layers; ++i)
    for (uint32_t r = 0; r < 4; ++r)
      for (uint32_t c = 0; c < 4; ++c) (r == c ? diagonal : offDiagonal) += bres[(i * 4 + r) * 4 + c];
  CHECK(diagonal / (4 * g.num_layers) == Approx(4.0).margin(0.3));
  CHECK(std::fabs(offDiagonal / (12 * g.num_layers)) < 0.3);
  for (float a : m.tensors.at("mhc.a_res").data) CHECK((a >= 0.01f && a <= 0.1f));
  const std::vector<float>& taps = m.tensors.at("engram.1.taps").data;
  CHECK(meanOf(std::vector<float>(taps.begin(), taps.begin() + g.d_model)) == Approx(1.0).epsilon(0.05));
  CHECK(std::fabs(meanOf(std::vector<float>(taps.begin() + g.d_model, taps.end()))) < 0.05);
}

TEST_CASE("randomModel refuses an inconsistent geometry", "[cq][random]") {
  Geometry g = presetGeometry("tiny");
  g.hada_n = 100;
  CHECK_THROWS_AS(randomModel(g, 1, false), Error);
}

TEST_CASE("a random model's tied logits depend on the context, not only on the input token",
          "[cq][random]") {
  // Packed, read back and run by the reference: the argmax is rarely the input token (with unit-norm
  // embedding rows it was the input token at all 32 positions; chance alone gives 32/512), it varies
  // over positions, and every logit is finite.
  const Geometry g = presetGeometry("tiny");
  const std::vector<uint8_t> bytes = writeArchive(randomModel(g, 1, false), PackOptions{});
  const Model model = readArchive(ByteView(bytes.data(), bytes.size()));
  Reference reference(model, ReferenceOptions{});
  std::vector<uint32_t> argmaxes;
  uint32_t echoes = 0;
  for (uint32_t p = 0; p < 32; ++p) {
    const uint32_t token = p == 0 ? 2 : (p * 7919 + 13) % g.vocab;
    const std::vector<float>& logits = reference.step(token, true);
    REQUIRE(logits.size() == g.vocab);
    uint32_t best = 0;
    for (uint32_t i = 0; i < g.vocab; ++i) {
      REQUIRE(std::isfinite(logits[i]));
      if (logits[i] > logits[best]) best = i;
    }
    echoes += best == token;
    argmaxes.push_back(best);
  }
  CHECK(echoes <= 2);
  std::sort(argmaxes.begin(), argmaxes.end());
  const size_t distinct = std::unique(argmaxes.begin(), argmaxes.end()) - argmaxes.begin();
  CHECK(distinct >= 20);
}
