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

// Blob sizes and placement: the arithmetic shared by the reader, the writer and needle-info.
constexpr uint32_t kCqGroup = 128;  // the group every CQ record is written with
// Product of a shape (1 for an empty one); Error naming `what` on overflow.
uint64_t elementCount(const std::vector<uint64_t>& shape, const std::string& what);
// Bytes of a CQ blob of a [rows, cols] matrix: rows x colsPadded x b / 8 packed bytes (b = 2 for
// ternary bits 5), then rows x colsPadded / group fp16 norms. Error naming `what` on overflow.
uint64_t cqBlobBytes(uint64_t rows, uint64_t cols, uint32_t group, uint32_t bits, const std::string& what);
// The next multiple of 64 at or after `offset`.
inline uint64_t align64(uint64_t offset) { return (offset + 63) / 64 * 64; }

// Where one record's blob lies in an archive written by writeArchive.
struct BlobPlacement {
  uint64_t offset = 0, length = 0;
  uint32_t group = 0, bits = 0;  // CQ: kCqGroup and the bits map's width; otherwise 0
};
// Every record's placement for a layout, a bits map and the tokenizer blob size (used for the RAW
// record): the first blob at align64(232 + 44 N), each next one at align64(end of the previous one).
std::vector<BlobPlacement> placeBlobs(const std::vector<TensorSpec>& layout, const BitsMap& bits,
                                      uint64_t tokenizerBytes);

}  // namespace needle
