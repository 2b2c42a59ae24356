// layout.hpp: the canonical record order of a Needle 2 archive, the one definition that the reader,
// the writer, needle-info and the safetensors importer all follow. The position of a record is its
// identity (the directory has no names); `key` and `label` are ours.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "geometry.hpp"

namespace needle {

enum class DType : uint8_t { FP16 = 1, FP32 = 2, CQ = 3, RAW = 4 };
const char* dtypeName(DType t);  // "FP16", "FP32", "CQ", "RAW", or "dtype?"

// Probe head codes as stored in heads.manifest.
enum class HeadKind : uint32_t { Contrastive = 1, Confidence = 2 };

struct TensorSpec {
  std::string key;     // safetensors name and dump name: "embedding", "layers.3.k_proj", "mhc.phi_pre",
                       // "engram.0.tables", "final_norm", "heads.0.proj", "tokenizer"
  std::string label;   // for errors and needle-info: "layer 3 key projection"
  std::string bitsName;  // upstream canonical name used by the bits map: "embedding", "attn.k_proj",
                         // "mhc_phi_pre", "engram0.key_proj", ... (empty for non-CQ records)
  DType dtype;
  std::vector<uint64_t> shape;  // CQ matrices as [out, in]; RAW has no shape
};

// The records of an archive with this geometry, probe heads (codes in manifest order; empty for none)
// and optional tokenizer, in file order. Throws Error for an unknown head code.
std::vector<TensorSpec> canonicalLayout(const Geometry& g, const std::vector<uint32_t>& headCodes,
                                        bool withTokenizer);

// Number of records without heads or tokenizer: 1 + 14 L + 9 + 4 S + 1.
uint32_t coreRecordCount(const Geometry& g);

// Per-tensor bit widths, e.g. "embedding=4,mhc=4,default=2" (the real Needle 2 map) or "default=1.58".
// The longest prefix of a TensorSpec::bitsName wins; "1.58" is stored as bits 5 (ternary).
struct BitsMap {
  std::vector<std::pair<std::string, uint32_t>> prefixes;
  uint32_t defaultBits = 4;
  static BitsMap parse(const std::string& text);  // Error on a bad entry or width
  uint32_t bitsFor(const std::string& bitsName) const;
};
constexpr const char* kRealBitsMap = "embedding=4,mhc=4,default=2";

}  // namespace needle
