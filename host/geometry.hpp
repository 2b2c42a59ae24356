// geometry.hpp: the Needle 2 header (120 bytes) as one struct, its presets and its consistency rules.
#pragma once
#include <cstdint>
#include <string>

namespace needle {

constexpr uint32_t kTagNeedle2 = 0x05E12A83;  // the only tag we read and write
constexpr uint32_t kTagNeedle1 = 0x05E12A82;  // older 20-byte header: rejected with its own message
constexpr uint32_t kTagNeedle3 = 0x05E12A84;  // newer, different layout: rejected with its own message
constexpr uint32_t kHeaderBytes = 120;        // 29 x u32 + f32 rope_theta
constexpr uint32_t kCodebookLen = 28;         // cb2[4] | cb3[8] | cb4[16]
constexpr uint32_t kCodebookOffset = 120;
constexpr uint32_t kDirectoryOffset = kCodebookOffset + 4 * kCodebookLen;  // 232
constexpr uint32_t kRecordBytes = 44;
constexpr uint32_t kBlobAlign = 64;
constexpr uint32_t kMaxOrders = 4;
constexpr uint32_t kMaxSites = 4;

// Field order is the header's byte order; the comment gives the byte offset.
struct Geometry {
  uint32_t num_tensors = 0;          // 4   records in the directory, heads and tokenizer included
  uint32_t codebook_len = kCodebookLen;  // 8
  uint32_t kv_window = 0;            // 12  keys kept behind the current one (0: plain causal)
  uint32_t kv_bits = 8;              // 16  8 = int8 KV cache
  uint32_t vocab = 0;                // 20
  uint32_t d_model = 0;              // 24
  uint32_t num_heads = 0;            // 28  query heads
  uint32_t num_kv_heads = 0;         // 32
  uint32_t num_layers = 0;           // 36
  uint32_t head_dim = 0;             // 40
  uint32_t max_seq_len = 0;          // 44
  uint32_t hada_n = 0;               // 48  power of two >= d_model
  uint32_t mhc_lanes = 0;            // 52
  uint32_t engram_slots = 0;         // 56  rows per engram table
  uint32_t engram_sub_dim = 0;       // 60  columns per engram table row
  uint32_t num_engram_tables = 0;    // 64  orders x engram heads
  uint32_t engram_conv_taps = 0;     // 68
  uint32_t engram_conv_dilation = 0; // 72
  uint32_t num_engram_orders = 0;    // 76
  uint32_t engram_orders[kMaxOrders] = {};  // 80  zero-padded
  uint32_t num_engram_sites = 0;     // 96
  uint32_t engram_sites[kMaxSites] = {};    // 100 0-based layer indices, zero-padded
  float rope_theta = 0;              // 116 (f32)

  uint32_t engramHeads() const { return num_engram_orders ? num_engram_tables / num_engram_orders : 0; }
  uint32_t qDim() const { return num_heads * head_dim; }
  uint32_t kvDim() const { return num_kv_heads * head_dim; }
  // Engram ring rows per site: (taps - 1) x dilation + 1 values of v kept for the dilated taps.
  uint32_t engramRingRows() const { return (engram_conv_taps - 1) * engram_conv_dilation + 1; }
  // The site index whose engram is added at `layer`, or -1.
  int siteOfLayer(uint32_t layer) const {
    for (uint32_t s = 0; s < num_engram_sites; ++s)
      if (engram_sites[s] == layer) return static_cast<int>(s);
    return -1;
  }
};

// "micro", "tiny", "small" or "base" (base is the real Needle 2 geometry; micro is for tool-call tests); num_tensors is left 0 (the layout
// sets it). Throws Error for another name.
Geometry presetGeometry(const std::string& name);

// Checks every rule between header fields (heads x head_dim = d, hada_n a power of two >= d, engram
// tables = orders x heads, sites < layers, orders and sites within their arrays, window <= max_seq_len,
// ...). Throws Error naming the field and its byte offset in the header.
void validateGeometry(const Geometry& g);

}  // namespace needle
