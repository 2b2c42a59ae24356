// Probe heads (host/heads.cpp): the streaming-softmax pooling against a naive two-pass f64 pooling
// (close, not equal: the streaming form rounds differently), the head outputs, clear(), the errors,
// and the cells a Reference step feeds (the scaled embedding, then the lane mean after each layer).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "archive.hpp"
#include "heads.hpp"
#include "reference.hpp"
#include "writer.hpp"

using namespace needle;

namespace {

// A probe head of the given kind with normal random probes, projection and bias.
ProbeHead randomHead(HeadKind kind, uint32_t d, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ProbeHead h;
  h.kind = kind;
  h.probes = kind == HeadKind::Contrastive ? 4 : 8;
  h.out = kind == HeadKind::Contrastive ? 128 : 1;
  h.probe.resize(static_cast<size_t>(h.probes) * d);
  h.proj.resize(static_cast<size_t>(h.out) * h.probes * d);
  h.bias.resize(h.out);
  for (float& v : h.probe) v = normal(rng);
  for (float& v : h.proj) v = normal(rng) / std::sqrt(static_cast<float>(h.probes * d));
  for (float& v : h.bias) v = kind == HeadKind::Contrastive ? 0.0f : 0.1f * normal(rng);
  return h;
}

// The definition, non-streaming, in f64: for each probe, scores of every cell, one softmax over all of
// them, the weighted sum of the cells; then proj x pooled + bias (and the L2 norm for contrastive).
struct Naive {
  std::vector<double> pooled, output;
};
Naive naiveHead(const ProbeHead& h, const std::vector<std::vector<float>>& cells, uint32_t d) {
  Naive n;
  n.pooled.assign(static_cast<size_t>(h.probes) * d, 0.0);
  for (uint32_t k = 0; k < h.probes; ++k) {
    std::vector<double> score;
    for (const auto& cell : cells) {
      double dot = 0;
      for (uint32_t c = 0; c < d; ++c) dot += double(cell[c]) * double(h.probe[k * d + c]);
      score.push_back(dot / std::sqrt(double(d)));
    }
    const double mx = *std::max_element(score.begin(), score.end());
    double sum = 0;
    for (double s : score) sum += std::exp(s - mx);
    for (size_t t = 0; t < cells.size(); ++t) {
      const double w = std::exp(score[t] - mx) / sum;
      for (uint32_t c = 0; c < d; ++c) n.pooled[k * d + c] += w * double(cells[t][c]);
    }
  }
  for (uint32_t o = 0; o < h.out; ++o) {
    double acc = h.bias[o];
    for (size_t j = 0; j < n.pooled.size(); ++j) acc += double(h.proj[o * n.pooled.size() + j]) * n.pooled[j];
    n.output.push_back(acc);
  }
  if (h.kind == HeadKind::Contrastive) {
    double ss = 0;
    for (double v : n.output) ss += v * v;
    for (double& v : n.output) v /= std::sqrt(ss + 1e-12);
  }
  return n;
}

// max |a - ref| / max |ref|
double maxRel(const std::vector<float>& a, const std::vector<double>& ref) {
  REQUIRE(a.size() == ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - ref[i]));
    den = std::max(den, std::fabs(ref[i]));
  }
  return num / den;
}

// Cells of varying scale: the running maximum moves up and down many times.
std::vector<std::vector<float>> randomCells(size_t n, uint32_t d, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.2f, 3.0f);
  std::vector<std::vector<float>> cells(n, std::vector<float>(d));
  for (auto& cell : cells) {
    const float s = scale(rng);
    for (float& v : cell) v = s * normal(rng);
  }
  return cells;
}

// The tiny random model with both heads, written and read back (the Model views `bytes`).
struct TinyWithHeads {
  std::vector<uint8_t> bytes;
  Model model;
  TinyWithHeads() {
    bytes = writeArchive(randomModel(presetGeometry("tiny"), 5, true), PackOptions{});
    model = readArchive(ByteView(bytes.data(), bytes.size()));
  }
};
const Model& tinyWithHeads() {
  static const TinyWithHeads built;
  return built.model;
}

}  // namespace

TEST_CASE("streaming pooling agrees with the two-pass f64 definition", "[heads]") {
  std::mt19937 rng(17);
  const uint32_t d = 64;
  const std::vector<ProbeHead> heads{randomHead(HeadKind::Contrastive, d, rng),
                                     randomHead(HeadKind::Confidence, d, rng)};
  for (size_t count : {1, 2, 7, 300}) {
    const auto cells = randomCells(count, d, rng);
    HeadPooling pooling(heads, d);
    for (const auto& cell : cells) pooling.addCell(cell.data());
    CHECK(pooling.cells() == count);
    for (size_t h = 0; h < heads.size(); ++h) {
      const Naive naive = naiveHead(heads[h], cells, d);
      INFO("cells " << count << ", head " << h);
      CHECK(maxRel(pooling.pooled(h), naive.pooled) < 1e-5);
      CHECK(maxRel(pooling.output(h), naive.output) < 1e-5);
    }
    // one cell: the pooled probes are that cell exactly (weight e^0 / 1)
    if (count == 1)
      for (uint32_t c = 0; c < d; ++c) CHECK(pooling.pooled(1)[3 * d + c] == cells[0][c]);
  }
}

TEST_CASE("head outputs: a unit contrastive vector, one confidence logit", "[heads]") {
  std::mt19937 rng(3);
  const uint32_t d = 32;
  const std::vector<ProbeHead> heads{randomHead(HeadKind::Contrastive, d, rng),
                                     randomHead(HeadKind::Confidence, d, rng)};
  HeadPooling pooling(heads, d);
  for (const auto& cell : randomCells(20, d, rng)) pooling.addCell(cell.data());
  const auto contrastive = pooling.output(0);
  REQUIRE(contrastive.size() == 128);
  double ss = 0;
  for (float v : contrastive) ss += double(v) * v;
  CHECK(std::fabs(ss - 1.0) < 1e-5);
  CHECK(pooling.output(1).size() == 1);
}

TEST_CASE("clear() starts over: the same cells give the same bits as a fresh pooling", "[heads]") {
  std::mt19937 rng(8);
  const uint32_t d = 32;
  const std::vector<ProbeHead> heads{randomHead(HeadKind::Confidence, d, rng)};
  const auto first = randomCells(9, d, rng), second = randomCells(5, d, rng);
  HeadPooling reused(heads, d), fresh(heads, d);
  for (const auto& cell : first) reused.addCell(cell.data());
  reused.clear();
  CHECK(reused.cells() == 0);
  for (const auto& cell : second) {
    reused.addCell(cell.data());
    fresh.addCell(cell.data());
  }
  CHECK(reused.pooled(0) == fresh.pooled(0));
  CHECK(reused.output(0) == fresh.output(0));
}

TEST_CASE("asking too early or for a missing head is an error", "[heads]") {
  std::mt19937 rng(1);
  const std::vector<ProbeHead> heads{randomHead(HeadKind::Contrastive, 32, rng)};
  HeadPooling pooling(heads, 32);
  CHECK_THROWS_WITH(pooling.output(0), "probe head 0: no position has been pooled yet");
  std::vector<float> cell(32, 1.0f);
  pooling.addCell(cell.data());
  CHECK_THROWS_WITH(pooling.output(1), "probe head 1: the archive has 1 probe heads");
  ProbeHead bad = heads[0];
  bad.probe.resize(10);
  const std::vector<ProbeHead> badHeads{bad};
  CHECK_THROWS_AS(HeadPooling(badHeads, 32), Error);
}

TEST_CASE("a Reference step feeds the scaled embedding and the lane mean after every layer", "[heads][reference]") {
  const Model& m = tinyWithHeads();
  const Geometry& g = m.geo;
  REQUIRE(m.heads.size() == 2);
  ReferenceOptions options;
  options.a8 = true;
  Reference ref(m, options);
  HeadPooling attached(m.heads, g.d_model), manual(m.heads, g.d_model);
  ref.setHeads(&attached);
  Trace trace;
  ref.setTrace(&trace);
  std::vector<std::vector<float>> cells;
  const std::vector<uint32_t> ids{2, 40, 41, 300, 40, 7, 8, 9, 100, 41};
  for (uint32_t id : ids) {
    ref.step(id, false);
    // the cells by their definition, from the trace: e sqrt(d), then each layer's lane mean in f32
    std::vector<std::vector<float>> here{trace.embedding};
    for (uint32_t i = 0; i < g.num_layers; ++i) {
      std::vector<float> mean(g.d_model, 0.0f);
      for (uint32_t k = 0; k < g.mhc_lanes; ++k)
        for (uint32_t c = 0; c < g.d_model; ++c) mean[c] += trace.laneOut[i][k * g.d_model + c];
      for (float& v : mean) v /= static_cast<float>(g.mhc_lanes);
      here.push_back(mean);
    }
    for (const auto& cell : here) {
      manual.addCell(cell.data());
      cells.push_back(cell);
    }
  }
  CHECK(attached.cells() == ids.size() * (g.num_layers + 1));
  for (size_t h = 0; h < m.heads.size(); ++h) {
    CHECK(attached.output(h) == manual.output(h));  // the same cells, bit for bit
    CHECK(maxRel(attached.output(h), naiveHead(m.heads[h], cells, g.d_model).output) < 2e-5);
  }
  // detached: steps feed nothing
  ref.setHeads(nullptr);
  const auto before = attached.output(0);
  ref.step(5, false);
  CHECK(attached.output(0) == before);
}
