// heads.cpp: probe-head pooling and outputs, in the f32 order docs/numerics.md ("Probe heads") fixes.
#include "heads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "bytes.hpp"
#include "mathf.hpp"

namespace needle {

namespace {

constexpr float kContrastiveEps = 1e-12f;  // inside the sqrt of the contrastive L2 norm

}  // namespace

const char* headKindName(HeadKind kind) {
  return kind == HeadKind::Contrastive ? "contrastive" : "confidence";
}

HeadPooling::HeadPooling(const std::vector<ProbeHead>& heads, uint32_t d)
    : heads_(heads), d_(d), sqrtD_(std::sqrt(static_cast<float>(d))) {
  for (size_t h = 0; h < heads.size(); ++h) {
    const ProbeHead& head = heads[h];
    const std::string name = "probe head " + std::to_string(h);
    if (head.probes == 0 || head.probe.size() != static_cast<size_t>(head.probes) * d)
      throw Error(name + ": " + std::to_string(head.probe.size()) + " probe values for " +
                  std::to_string(head.probes) + " probes of width " + std::to_string(d));
    if (head.proj.size() != static_cast<size_t>(head.out) * head.probes * d || head.bias.size() != head.out)
      throw Error(name + ": projection of " + std::to_string(head.proj.size()) + " values and bias of " +
                  std::to_string(head.bias.size()) + " do not fit " + std::to_string(head.out) +
                  " outputs of " + std::to_string(head.probes) + " x " + std::to_string(d) + " inputs");
    state_.emplace_back(head.probes);
    for (ProbeState& p : state_.back()) p.acc.resize(d);
  }
  clear();
}

void HeadPooling::clear() {
  for (auto& probes : state_) {
    for (ProbeState& p : probes) {
      p.max = -std::numeric_limits<float>::infinity();
      p.sum = 0.0f;
      std::fill(p.acc.begin(), p.acc.end(), 0.0f);
    }
  }
  cells_ = 0;
}

// One streaming-softmax update per probe, with score t = (cell . probe) / sqrt(d):
//   t > max:   scale = e^(max - t); sum = sum x scale + 1; acc = acc x scale + cell; max = t
//   otherwise: w = e^(t - max);     sum = sum + w;         acc = acc + w x cell
void HeadPooling::addCell(const float* cell) {
  for (size_t h = 0; h < heads_.size(); ++h) {
    const ProbeHead& head = heads_[h];
    for (uint32_t k = 0; k < head.probes; ++k) {
      const float* probe = head.probe.data() + static_cast<size_t>(k) * d_;
      float dot = 0.0f;
      for (uint32_t c = 0; c < d_; ++c) dot += cell[c] * probe[c];
      const float t = dot / sqrtD_;
      ProbeState& p = state_[h][k];
      if (t > p.max) {
        const float scale = expf32(p.max - t);
        p.sum = p.sum * scale + 1.0f;
        for (uint32_t c = 0; c < d_; ++c) p.acc[c] = p.acc[c] * scale + cell[c];
        p.max = t;
      } else {
        const float w = expf32(t - p.max);
        p.sum = p.sum + w;
        for (uint32_t c = 0; c < d_; ++c) p.acc[c] = p.acc[c] + w * cell[c];
      }
    }
  }
  ++cells_;
}

std::vector<float> HeadPooling::pooled(size_t h) const {
  if (h >= heads_.size())
    throw Error("probe head " + std::to_string(h) + ": the archive has " + std::to_string(heads_.size()) +
                " probe heads");
  if (cells_ == 0) throw Error("probe head " + std::to_string(h) + ": no position has been pooled yet");
  const ProbeHead& head = heads_[h];
  std::vector<float> v(static_cast<size_t>(head.probes) * d_);
  for (uint32_t k = 0; k < head.probes; ++k) {
    const ProbeState& p = state_[h][k];
    for (uint32_t c = 0; c < d_; ++c) v[static_cast<size_t>(k) * d_ + c] = p.acc[c] / p.sum;
  }
  return v;
}

std::vector<float> HeadPooling::output(size_t h) const {
  const std::vector<float> v = pooled(h);  // P x d, probe-major
  const ProbeHead& head = heads_[h];
  const size_t in = v.size();
  // out_o = (sum_j proj[o][j] v[j]) + bias[o], the sum from 0 in j order.
  std::vector<float> out(head.out);
  for (uint32_t o = 0; o < head.out; ++o) {
    const float* row = head.proj.data() + static_cast<size_t>(o) * in;
    float acc = 0.0f;
    for (size_t j = 0; j < in; ++j) acc += row[j] * v[j];
    out[o] = acc + head.bias[o];
  }
  // Contrastive: out / sqrt(sum out^2 + 1e-12).
  if (head.kind == HeadKind::Contrastive) {
    float ss = 0.0f;
    for (float x : out) ss += x * x;
    const float norm = std::sqrt(ss + kContrastiveEps);
    for (float& x : out) x = x / norm;
  }
  return out;
}

}  // namespace needle
