// geometry.cpp: the three geometry presets and the rules that make a header self-consistent.
//
// validateGeometry() is the gate between untrusted header bytes and every size computed from them:
// once it passes, every shape in the canonical layout is a product of small, nonzero numbers that fits
// in a u32 (one directory shape entry) and whose element count stays far below kMaxSafeInteger.
#include "geometry.hpp"

#include <cmath>
#include <string>

#include "bytes.hpp"

namespace needle {

namespace {

// Sanity caps. They are far above any real Needle (base: d 512, vocab 8192, 27 layers, 8192 slots),
// and low enough that no shape product can overflow 64 bits before checkedMul sees it.
constexpr uint32_t kMaxDModel = 65536;
constexpr uint32_t kMaxVocab = 1u << 20;
constexpr uint32_t kMaxLayers = 1024;
constexpr uint32_t kMaxSeqLen = 1u << 20;
constexpr uint32_t kMaxSlots = 1u << 24;
constexpr uint32_t kMaxHadaN = 2 * kMaxDModel;  // smallest power of two >= the largest d_model
constexpr uint32_t kMaxLanes = 16;
constexpr uint32_t kMaxTables = 64;
constexpr uint32_t kMaxSubDim = 65536;
constexpr uint32_t kMaxOrder = 16;   // tokens hashed per engram lookup
constexpr uint32_t kMaxTaps = 64;
constexpr uint32_t kMaxDilation = 64;

// The throw used by every rule: names the header field, its byte offset, and what is wrong.
[[noreturn]] void fieldError(const char* field, uint32_t offset, const std::string& problem) {
  throw Error("header field " + std::string(field) + " (offset " + std::to_string(offset) +
              "): " + problem);
}

// Error unless lo <= value <= hi.
void requireRange(const char* field, uint32_t offset, uint64_t value, uint64_t lo, uint64_t hi) {
  if (value < lo || value > hi)
    fieldError(field, offset, std::to_string(value) + " is outside [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "]");
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Error unless the product (a shape dimension stored as a u32 directory entry) fits 32 bits.
void requireU32Product(const char* field, uint32_t offset, uint64_t a, uint64_t b,
                       const std::string& what) {
  uint64_t product = checkedMul(a, b, std::string("header field ") + field);
  if (product > 0xFFFFFFFFull)
    fieldError(field, offset, what + " = " + std::to_string(a) + " x " + std::to_string(b) +
                                  " does not fit a 32-bit shape entry");
}

}  // namespace

Geometry presetGeometry(const std::string& name) {
  Geometry g;
  g.codebook_len = kCodebookLen;
  g.kv_bits = 8;
  g.mhc_lanes = 4;
  g.engram_conv_taps = 4;
  g.engram_conv_dilation = 3;
  g.num_engram_orders = 2;
  g.engram_orders[0] = 2;
  g.engram_orders[1] = 3;
  g.num_engram_sites = 2;
  if (name == "tiny") {
    g.vocab = 512;
    g.d_model = 128;
    g.num_heads = 2;
    g.num_kv_heads = 1;
    g.head_dim = 64;
    g.num_layers = 4;
    g.max_seq_len = 256;
    g.hada_n = 128;
    g.engram_slots = 256;
    g.num_engram_tables = 2;
    g.engram_sub_dim = 64;
    g.engram_sites[0] = 1;
    g.engram_sites[1] = 3;
    g.kv_window = 32;
    g.rope_theta = 10000.0f;
  } else if (name == "micro") {
    // For tool-call tests: steps cost little (d 64, 2 layers) but the context is long (2048) and the
    // window short (64), so a prompt's tools alone overflow the window; vocab comes from the tokenizer.
    g.vocab = 512;
    g.d_model = 64;
    g.num_heads = 2;
    g.num_kv_heads = 1;
    g.head_dim = 32;
    g.num_layers = 2;
    g.max_seq_len = 2048;
    g.hada_n = 64;
    g.engram_slots = 256;
    g.num_engram_tables = 2;
    g.engram_sub_dim = 32;
    g.engram_sites[0] = 0;
    g.engram_sites[1] = 1;
    g.kv_window = 64;
    g.rope_theta = 10000.0f;
  } else if (name == "small") {
    g.vocab = 2048;
    g.d_model = 256;
    g.num_heads = 4;
    g.num_kv_heads = 2;
    g.head_dim = 64;
    g.num_layers = 6;
    g.max_seq_len = 512;
    g.hada_n = 256;
    g.engram_slots = 1024;
    g.num_engram_tables = 2;
    g.engram_sub_dim = 128;
    g.engram_sites[0] = 2;
    g.engram_sites[1] = 4;
    g.kv_window = 64;
    g.rope_theta = 10000.0f;
  } else if (name == "base") {
    // The shipped Needle 2 (design page table 1.1).
    g.vocab = 8192;
    g.d_model = 512;
    g.num_heads = 8;
    g.num_kv_heads = 4;
    g.head_dim = 64;
    g.num_layers = 27;
    g.max_seq_len = 2048;
    g.hada_n = 512;
    g.engram_slots = 8192;
    g.num_engram_tables = 4;
    g.engram_sub_dim = 128;
    g.engram_sites[0] = 2;
    g.engram_sites[1] = 15;
    g.kv_window = 256;
    g.rope_theta = 100000.0f;
  } else {
    throw Error("unknown geometry preset '" + name + "' (expected micro, tiny, small or base)");
  }
  return g;
}

void validateGeometry(const Geometry& g) {
  // Fixed-format fields first: a wrong value here means a different format, not a different model.
  if (g.codebook_len != kCodebookLen)
    fieldError("codebook_len", 8, std::to_string(g.codebook_len) + " but Needle 2 always stores " +
                                      std::to_string(kCodebookLen) + " codebook floats (4+8+16)");
  if (g.kv_bits != 8)
    fieldError("kv_bits", 16, std::to_string(g.kv_bits) + " but only 8 (int8 KV cache) is supported");

  // Sizes, each capped so that later products stay small.
  requireRange("vocab", 20, g.vocab, 1, kMaxVocab);
  requireRange("d_model", 24, g.d_model, 1, kMaxDModel);
  requireRange("num_heads", 28, g.num_heads, 1, g.d_model);
  requireRange("num_kv_heads", 32, g.num_kv_heads, 1, g.num_heads);
  requireRange("num_layers", 36, g.num_layers, 1, kMaxLayers);
  requireRange("max_seq_len", 44, g.max_seq_len, 1, kMaxSeqLen);

  if (g.num_heads % g.num_kv_heads != 0)
    fieldError("num_kv_heads", 32, std::to_string(g.num_kv_heads) + " does not divide num_heads " +
                                       std::to_string(g.num_heads));
  // Compared in 64 bits: a huge head_dim must not wrap around to d_model.
  if (uint64_t{g.head_dim} * g.num_heads != g.d_model)
    fieldError("head_dim", 40, std::to_string(g.head_dim) + " x " + std::to_string(g.num_heads) +
                                   " heads != d_model " + std::to_string(g.d_model));
  // RoPE rotates pairs (m, m + head_dim/2).
  if (g.head_dim < 2 || g.head_dim % 2 != 0)
    fieldError("head_dim", 40, std::to_string(g.head_dim) + " must be even and at least 2 (RoPE pairs)");
  // The int8 KV cache keeps one scale per 32 values of a head vector (docs/numerics.md).
  if (g.head_dim % 32 != 0)
    fieldError("head_dim", 40, std::to_string(g.head_dim) + " is not a multiple of 32 (KV scale blocks)");

  if (!isPowerOfTwo(g.hada_n) || g.hada_n < g.d_model || g.hada_n > kMaxHadaN)
    fieldError("hada_n", 48, std::to_string(g.hada_n) + " must be a power of two >= d_model " +
                                 std::to_string(g.d_model) + " (and <= " + std::to_string(kMaxHadaN) +
                                 ")");
  requireRange("mhc_lanes", 52, g.mhc_lanes, 1, kMaxLanes);

  if (g.kv_window > g.max_seq_len)
    fieldError("kv_window", 12, std::to_string(g.kv_window) + " exceeds max_seq_len " +
                                    std::to_string(g.max_seq_len));
  if (!std::isfinite(g.rope_theta) || !(g.rope_theta > 0))
    fieldError("rope_theta", 116, std::to_string(g.rope_theta) + " must be finite and positive");

  // Engram hashing: orders, then the tables built from them.
  requireRange("num_engram_orders", 76, g.num_engram_orders, 1, kMaxOrders);
  for (uint32_t i = 0; i < kMaxOrders; ++i) {
    std::string field = "engram_orders[" + std::to_string(i) + "]";
    uint32_t offset = 80 + 4 * i;
    if (i < g.num_engram_orders)
      requireRange(field.c_str(), offset, g.engram_orders[i], 1, kMaxOrder);
    else if (g.engram_orders[i] != 0)
      fieldError(field.c_str(), offset, std::to_string(g.engram_orders[i]) +
                                            " but entries past num_engram_orders must be 0");
  }
  requireRange("engram_slots", 56, g.engram_slots, 1, kMaxSlots);
  requireRange("engram_sub_dim", 60, g.engram_sub_dim, 1, kMaxSubDim);
  requireRange("engram_conv_taps", 68, g.engram_conv_taps, 1, kMaxTaps);
  requireRange("engram_conv_dilation", 72, g.engram_conv_dilation, 1, kMaxDilation);

  // Engram sites: 0-based layer indices, strictly increasing, inside the model.
  requireRange("num_engram_sites", 96, g.num_engram_sites, 0, kMaxSites);
  for (uint32_t s = 0; s < kMaxSites; ++s) {
    std::string field = "engram_sites[" + std::to_string(s) + "]";
    uint32_t offset = 100 + 4 * s;
    uint32_t site = g.engram_sites[s];
    if (s >= g.num_engram_sites) {
      if (site != 0)
        fieldError(field.c_str(), offset,
                   std::to_string(site) + " but entries past num_engram_sites must be 0");
      continue;
    }
    if (site >= g.num_layers)
      fieldError(field.c_str(), offset, "layer " + std::to_string(site) + " but the model has " +
                                            std::to_string(g.num_layers) + " layers (0-based)");
    if (s > 0 && site <= g.engram_sites[s - 1])
      fieldError(field.c_str(), offset, "layer " + std::to_string(site) +
                                            " does not follow site " + std::to_string(s - 1) +
                                            " (layer " + std::to_string(g.engram_sites[s - 1]) +
                                            "): sites must be strictly increasing");
  }
  if (g.num_engram_sites > 0) {
    if (g.num_engram_tables == 0 || g.num_engram_tables % g.num_engram_orders != 0 ||
        g.num_engram_tables > kMaxTables)
      fieldError("num_engram_tables", 64,
                 std::to_string(g.num_engram_tables) + " must be a positive multiple of num_engram_orders " +
                     std::to_string(g.num_engram_orders) + " (orders x engram heads), at most " +
                     std::to_string(kMaxTables));
    // Shape entries of the engram records are u32: tables x slots rows, tables x sub_dim columns.
    requireU32Product("num_engram_tables", 64, g.num_engram_tables, g.engram_slots,
                      "engram table rows (tables x slots)");
    requireU32Product("num_engram_tables", 64, g.num_engram_tables, g.engram_sub_dim,
                      "engram projection columns (tables x sub_dim)");
  } else if (g.num_engram_tables > kMaxTables) {
    requireRange("num_engram_tables", 64, g.num_engram_tables, 0, kMaxTables);
  }

  // mHC shapes: (L lanes^2, lanes d) is the largest; make sure it fits u32 entries.
  requireU32Product("mhc_lanes", 52, uint64_t{g.num_layers} * g.mhc_lanes, g.mhc_lanes,
                    "mHC residual-mix rows (layers x lanes x lanes)");
  requireU32Product("mhc_lanes", 52, g.mhc_lanes, g.d_model, "mHC projection columns (lanes x d_model)");
  // The largest element counts, checked once so that nothing later can overflow.
  checkedMul(g.vocab, g.d_model, "header field vocab (offset 20): embedding vocab x d_model");
  checkedMul(checkedMul(g.num_engram_tables, g.engram_slots, "engram tables"), g.engram_sub_dim,
             "header field engram_sub_dim (offset 60): engram table elements");
}

}  // namespace needle
