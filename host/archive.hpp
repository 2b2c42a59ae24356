// archive.hpp: a Needle 2 archive read in place. Packed CQ matrices stay packed, as views into the
// caller's bytes (which must outlive the Model); FP16 control tensors are widened to f32.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "geometry.hpp"
#include "layout.hpp"

namespace needle {

// One 44-byte directory record.
struct Record {
  DType dtype;
  uint8_t ndim;
  uint32_t shape[4];
  uint64_t offset;  // absolute, from the start of the archive view
  uint64_t length;
  uint32_t group;   // 128 for CQ, 0 otherwise
  uint32_t bits;    // 2, 3, 4 or 5 (ternary) for CQ, 0 otherwise
};

// A CQ matrix [rows = out, cols = in] as it lies in the archive.
struct CqMatrix {
  uint32_t rows = 0, cols = 0, colsPadded = 0, group = 0;
  uint32_t bits = 0;         // as recorded: 2, 3, 4, or 5 for ternary
  uint32_t indexBits = 0;    // bits per stored index: 2 for ternary, else `bits`
  size_t rowBytes = 0;       // colsPadded * indexBits / 8
  const uint8_t* packed = nullptr;  // rows x rowBytes, LSB-first bit stream per row
  const uint8_t* norms = nullptr;   // rows x (colsPadded / group) fp16, little-endian
  // Level of each raw stored index: the codebook for bits 2/3/4; for ternary the crumb value
  // (0 -> 0, 1 -> +c/sqrt(G), 3 -> -c/sqrt(G), 2 never written -> 0).
  std::array<float, 16> levels{};

  uint32_t groups() const { return colsPadded / group; }
  uint32_t index(uint32_t row, uint32_t col) const;  // raw stored index of one column
  float norm(uint32_t row, uint32_t g) const;        // fp16 group norm widened to f32
};

struct Layer {
  std::vector<float> norm_in;          // (d)    ZCRMS scale, zero-centred
  CqMatrix q_proj, k_proj, v_proj;     // (H hd, d), (KV hd, d), (KV hd, d)
  std::vector<float> q_norm, k_norm;   // (hd)   shared by all heads
  CqMatrix gate_proj, out_proj;        // (H hd, d), (d, H hd)
  std::vector<float> post_norm;        // (d)
  float attn_gate = 0;                 // (1)    sigmoid applied at run time
  std::vector<float> pre_hada;         // (d)
  std::vector<float> d1, d2, d3;       // (hada_n)
};

// mHC parameters stacked over all layers, as stored.
struct Mhc {
  std::vector<float> a_pre, a_post, a_res;  // (L)
  std::vector<float> b_pre, b_post;         // (L, lanes)
  std::vector<float> b_res;                 // (L, lanes, lanes)
  CqMatrix phi_pre, phi_post;               // (L lanes, lanes d): row lanes*i + k
  CqMatrix phi_res;                         // (L lanes^2, lanes d): row lanes^2 i + lanes r + c
};

struct EngramSite {
  uint32_t layer = 0;        // 0-based layer the engram is added at
  CqMatrix tables;           // (tables x slots, sub_dim): row tau * slots + slot
  CqMatrix key_proj;         // (d, tables x sub_dim)
  CqMatrix value_proj;       // (d, tables x sub_dim)
  std::vector<float> taps;   // (taps, d)
};

struct ProbeHead {
  HeadKind kind;
  uint32_t probes = 0, out = 0;   // P and output width
  std::vector<float> probe;       // (P, d)
  std::vector<float> proj;        // (out, P d)
  std::vector<float> bias;        // (out)
};

struct Model {
  Geometry geo;
  std::array<float, kCodebookLen> codebook{};  // cb2[4] | cb3[8] | cb4[16] as read from the file
  std::vector<Record> records;
  std::vector<TensorSpec> layout;              // semantic name of each record, same order
  uint64_t dataEnd = 0;                        // end of the last blob

  CqMatrix embedding;                          // (vocab, d): input embedding and tied output
  std::vector<Layer> layers;
  Mhc mhc;
  std::vector<EngramSite> engram;              // one per site, in site order
  std::vector<float> final_norm;               // (d)
  std::vector<ProbeHead> heads;                // optional probe heads, kept as read
  ByteView tokenizer;                          // RAW tokenizer blob; empty when absent
};

// Reads and validates a whole archive. Every violation throws Error naming the record (by its label)
// or header field, and the byte offset. Never reads outside `bytes`.
Model readArchive(ByteView bytes);

}  // namespace needle
