// writer.hpp: float weights in, byte-exact Needle 2 archive out (needle-pack).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "geometry.hpp"
#include "layout.hpp"
#include "tokenizer.hpp"

namespace needle {

struct FloatTensor {
  std::vector<uint64_t> shape;
  std::vector<float> data;  // row-major
};

// Float weights keyed by TensorSpec::key ("layers.3.k_proj", ...), matrices as [out, in].
struct FloatModel {
  Geometry geo;                        // num_tensors is filled in by the writer
  std::vector<uint32_t> headCodes;     // probe heads in manifest order (empty: none)
  std::map<std::string, FloatTensor> tensors;
};

struct PackOptions {
  BitsMap bits = BitsMap::parse(kRealBitsMap);
  std::optional<TokenizerSpec> tokenizer;  // written as the last record when present
};

// The whole archive: header, codebooks (computeCodebooks()), directory, 64-byte aligned blobs.
// Error names a missing tensor or a shape that does not match the layout.
std::vector<uint8_t> writeArchive(const FloatModel& model, const PackOptions& options);

// Deterministic random weights for a geometry, scaled so activations stay finite through every layer.
FloatModel randomModel(const Geometry& g, uint64_t seed, bool withHeads);

// Weights from a safetensors file (F32, F16 or BF16 tensors named by TensorSpec::key); geometry from
// its __metadata__ when present, else `fallback`. Error names the missing or misshapen tensor.
FloatModel readSafetensors(const std::string& path, const std::optional<Geometry>& fallback);
// The weights as F32 tensors in layout order, the geometry and head codes in __metadata__.
void writeSafetensors(const FloatModel& model, const std::string& path);

}  // namespace needle
