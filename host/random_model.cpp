// random_model.cpp: deterministic random weights for any geometry (docs/cq.md, "The random model").
//
// The weights are not trained, but they are shaped like trained ones: every projection keeps unit-scale
// activations at unit scale, the norms and gates sit near their training initial values, and the mHC
// routing stays near the identity, so activations remain finite and varied through every layer and over
// long sessions. Each tensor draws from its own stream, derived from the seed and the tensor's key, so a
// tensor's values do not depend on which other tensors exist or in which order they are generated.
#include <cmath>
#include <string>

#include "bytes.hpp"
#include "sampler.hpp"
#include "writer.hpp"

namespace needle {

namespace {

// FNV-1a over the key's bytes: the key's share of the stream seed.
uint64_t hashKey(const std::string& key) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// The random stream of one tensor: uniform doubles and standard normals (Box-Muller, both outputs used).
class Stream {
 public:
  // The stream's state: the first splitmix64 output for the seed mixed with the key's hash.
  Stream(uint64_t seed, const std::string& key) : rng_(SplitMix64(seed ^ hashKey(key)).next()) {}
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return rng_.uniform(); }
  double normal() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 - u lies in (0, 1]
    const double angle = 6.283185307179586 * uniform();
    spare_ = radius * std::sin(angle);
    hasSpare_ = true;
    return radius * std::cos(angle);
  }

 private:
  SplitMix64 rng_;
  bool hasSpare_ = false;
  double spare_ = 0;
};

// Norm of the embedding rows. The tied output reads the same rows, and the input embedding stays in
// every lane through the near-identity routing, so with unit rows the logit of the current token
// stands about sqrt(d) x (its share of the final hidden state) standard deviations above the rest:
// a random model would echo its input (measured: the argmax was the input token at every position).
// With rows of norm 0.05 the layers' unit-scale updates dominate the lanes, and the argmax depends on
// the context. Every norm in the model is scale-free, so nothing else changes.
constexpr double kEmbeddingNorm = 0.05;

// The last component of a key: "layers.3.k_proj" -> "k_proj", "heads.manifest" -> "manifest".
std::string leafName(const std::string& key) {
  size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

uint64_t elements(const std::vector<uint64_t>& shape, const std::string& label) {
  uint64_t n = 1;
  for (uint64_t dim : shape) n = checkedMul(n, dim, label);
  return n;
}

// Values of one tensor. `in` is the reduction width of a matrix (its last dimension).
std::vector<float> drawTensor(const TensorSpec& spec, uint64_t seed, const std::vector<uint32_t>& headCodes) {
  const std::string leaf = leafName(spec.key);
  const uint64_t n = elements(spec.shape, spec.label);
  const uint64_t in = spec.shape.empty() ? 1 : spec.shape.back();
  const double projectionStd = 1.0 / std::sqrt(static_cast<double>(in));
  Stream rng(seed, spec.key);
  std::vector<float> v(n);
  auto normals = [&](double mean, double stddev) {
    for (float& x : v) x = static_cast<float>(mean + stddev * rng.normal());
  };

  if (leaf == "embedding") {
    // Rows of norm kEmbeddingNorm (see below): small next to the layers' updates.
    normals(0, kEmbeddingNorm * projectionStd);
  } else if (leaf == "final_norm") {
    // (1 + s) ~ 1 / kEmbeddingNorm: gives the tied logits a standard deviation of about 1 again.
    for (float& x : v) x = static_cast<float>((1.0 + 0.1 * rng.normal()) / kEmbeddingNorm - 1.0);
  } else if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj" || leaf == "gate_proj" ||
             leaf == "out_proj" || leaf == "phi_pre" || leaf == "phi_post" || leaf == "phi_res" ||
             leaf == "key_proj" || leaf == "value_proj") {
    normals(0, projectionStd);  // N(0, 1/in): unit-scale inputs give unit-scale outputs
  } else if (leaf == "norm_in" || leaf == "q_norm" || leaf == "k_norm" || leaf == "post_norm" ||
             leaf == "pre_hada") {
    normals(0, 0.1);  // zero-centred scales: the engine uses 1 + s
  } else if (leaf == "attn_gate") {
    normals(0, 1);  // sigmoid(gate) spread over (0, 1)
  } else if (leaf == "d1" || leaf == "d2") {
    normals(1, 0.1);
  } else if (leaf == "d3") {
    // Larger than the training start (0.02) so that the MLP contributes visibly to each update.
    normals(0.3, 0.1);
  } else if (leaf == "a_pre" || leaf == "a_post" || leaf == "a_res") {
    for (float& x : v) x = static_cast<float>(0.01 + 0.09 * rng.uniform());  // raw multipliers
  } else if (leaf == "b_pre" || leaf == "b_post") {
    normals(0, 0.5);
  } else if (leaf == "b_res") {
    // 4 I + noise: the Sinkhorn routing stays close to the identity, as at the training start.
    normals(0, 0.5);
    const uint64_t lanes = spec.shape.at(2);
    for (uint64_t m = 0; m < spec.shape.at(0); ++m)
      for (uint64_t r = 0; r < lanes; ++r) v[(m * lanes + r) * lanes + r] += 4.0f;
  } else if (leaf == "tables") {
    normals(0, 1);  // table rows are the engram input e_p directly
  } else if (leaf == "taps") {
    normals(0, 0.1);
    for (uint64_t c = 0; c < spec.shape.at(1); ++c) v[c] += 1.0f;  // taps[0] ~ 1: mostly the current v
  } else if (leaf == "manifest") {
    for (size_t h = 0; h < v.size(); ++h) v[h] = static_cast<float>(headCodes.at(h));
  } else if (leaf == "probes") {
    normals(0, 1);
  } else if (leaf == "proj") {
    normals(0, projectionStd);
  } else if (leaf == "bias") {
    // The contrastive head stores zeros; the confidence head gets a small random bias.
    const size_t head = std::stoul(spec.key.substr(6));  // "heads.H.bias"
    if (headCodes.at(head) == static_cast<uint32_t>(HeadKind::Contrastive))
      for (float& x : v) x = 0;
    else
      normals(0, 0.1);
  } else {
    throw Error("random model: no distribution for " + spec.label + " ('" + spec.key + "')");
  }
  return v;
}

}  // namespace

FloatModel randomModel(const Geometry& g, uint64_t seed, bool withHeads) {
  validateGeometry(g);
  FloatModel model;
  model.geo = g;
  if (withHeads)
    model.headCodes = {static_cast<uint32_t>(HeadKind::Contrastive), static_cast<uint32_t>(HeadKind::Confidence)};
  for (const TensorSpec& spec : canonicalLayout(g, model.headCodes, false)) {
    FloatTensor& t = model.tensors[spec.key];
    t.shape = spec.shape;
    t.data = drawTensor(spec, seed, model.headCodes);
  }
  return model;
}

}  // namespace needle
