// layout.cpp: the canonical record order (design page 1.4), the bits map, and blob placement.
//
// The directory of a Needle 2 archive has no names: a record is what it is because of where it sits.
// canonicalLayout() is therefore the single source of truth for "record 43 is layer 3's key
// projection", shared by the reader, the writer, needle-info and the safetensors importer.
#include "layout.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "bytes.hpp"

namespace needle {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::FP16: return "FP16";
    case DType::FP32: return "FP32";
    case DType::CQ: return "CQ";
    case DType::RAW: return "RAW";
  }
  return "dtype?";
}

uint32_t coreRecordCount(const Geometry& g) {
  return 1 + 14 * g.num_layers + 9 + 4 * g.num_engram_sites + 1;
}

namespace {

// One record appended to the layout. CQ records carry the upstream canonical name for the bits map.
void add(std::vector<TensorSpec>& out, std::string key, std::string label, DType dtype,
         std::vector<uint64_t> shape, std::string bitsName = "") {
  out.push_back(TensorSpec{std::move(key), std::move(label), std::move(bitsName), dtype, std::move(shape)});
}

// Probe head shapes: P probes of width d, then a projection to `out` values.
struct HeadShape {
  uint64_t probes, out;
};
HeadShape headShape(uint32_t code, size_t index) {
  if (code == static_cast<uint32_t>(HeadKind::Contrastive)) return {4, 128};
  if (code == static_cast<uint32_t>(HeadKind::Confidence)) return {8, 1};
  throw Error("probe head " + std::to_string(index) + ": code " + std::to_string(code) +
              " is neither 1 (contrastive) nor 2 (confidence)");
}

}  // namespace

std::vector<TensorSpec> canonicalLayout(const Geometry& g, const std::vector<uint32_t>& headCodes,
                                        bool withTokenizer) {
  const uint64_t d = g.d_model, L = g.num_layers, lanes = g.mhc_lanes;
  const uint64_t hd = g.head_dim, qDim = uint64_t{g.num_heads} * hd, kvDim = uint64_t{g.num_kv_heads} * hd;
  std::vector<TensorSpec> out;
  out.reserve(coreRecordCount(g) + 1 + 3 * headCodes.size() + 1);

  // 1. One embedding: input lookup and tied output.
  add(out, "embedding", "embedding", DType::CQ, {g.vocab, d}, "embedding");

  // 2. Fourteen records per layer.
  for (uint32_t i = 0; i < g.num_layers; ++i) {
    const std::string k = "layers." + std::to_string(i) + ".";
    const std::string l = "layer " + std::to_string(i) + " ";
    add(out, k + "norm_in", l + "input norm", DType::FP16, {d});
    add(out, k + "q_proj", l + "query projection", DType::CQ, {qDim, d}, "attn.q_proj");
    add(out, k + "k_proj", l + "key projection", DType::CQ, {kvDim, d}, "attn.k_proj");
    add(out, k + "v_proj", l + "value projection", DType::CQ, {kvDim, d}, "attn.v_proj");
    add(out, k + "q_norm", l + "query norm", DType::FP16, {hd});
    add(out, k + "k_norm", l + "key norm", DType::FP16, {hd});
    add(out, k + "gate_proj", l + "output gate projection", DType::CQ, {qDim, d}, "attn.gate_proj");
    add(out, k + "out_proj", l + "output projection", DType::CQ, {d, qDim}, "attn.out_proj");
    add(out, k + "post_norm", l + "post-attention norm", DType::FP16, {d});
    add(out, k + "attn_gate", l + "attention gate", DType::FP16, {1});
    add(out, k + "pre_hada", l + "MLP input norm", DType::FP16, {d});
    add(out, k + "d1", l + "MLP diagonal d1", DType::FP16, {g.hada_n});
    add(out, k + "d2", l + "MLP diagonal d2", DType::FP16, {g.hada_n});
    add(out, k + "d3", l + "MLP diagonal d3", DType::FP16, {g.hada_n});
  }

  // 3. mHC, stacked over all layers after the last one.
  add(out, "mhc.a_pre", "mHC pre-mix scale", DType::FP16, {L});
  add(out, "mhc.a_post", "mHC post-mix scale", DType::FP16, {L});
  add(out, "mhc.a_res", "mHC residual-mix scale", DType::FP16, {L});
  add(out, "mhc.b_pre", "mHC pre-mix bias", DType::FP16, {L, lanes});
  add(out, "mhc.b_post", "mHC post-mix bias", DType::FP16, {L, lanes});
  add(out, "mhc.b_res", "mHC residual-mix bias", DType::FP16, {L, lanes, lanes});
  add(out, "mhc.phi_pre", "mHC pre-mix projection", DType::CQ, {L * lanes, lanes * d}, "mhc_phi_pre");
  add(out, "mhc.phi_post", "mHC post-mix projection", DType::CQ, {L * lanes, lanes * d}, "mhc_phi_post");
  add(out, "mhc.phi_res", "mHC residual-mix projection", DType::CQ, {L * lanes * lanes, lanes * d},
      "mhc_phi_res");

  // 4. Four records per engram site.
  const uint64_t tables = g.num_engram_tables;
  for (uint32_t s = 0; s < g.num_engram_sites; ++s) {
    const std::string k = "engram." + std::to_string(s) + ".";
    const std::string l = "engram site " + std::to_string(s) + " ";
    const std::string b = "engram" + std::to_string(s) + ".";
    add(out, k + "tables", l + "tables", DType::CQ, {tables * g.engram_slots, g.engram_sub_dim},
        b + "tables");
    add(out, k + "key_proj", l + "key projection", DType::CQ, {d, tables * g.engram_sub_dim},
        b + "key_proj");
    add(out, k + "value_proj", l + "value projection", DType::CQ, {d, tables * g.engram_sub_dim},
        b + "value_proj");
    add(out, k + "taps", l + "taps", DType::FP16, {g.engram_conv_taps, d});
  }

  // 5. The final norm closes the core records.
  add(out, "final_norm", "final norm", DType::FP16, {d});

  // 6. Optional probe heads: a manifest of codes, then one triple per head.
  if (!headCodes.empty()) {
    add(out, "heads.manifest", "probe head manifest", DType::FP16, {headCodes.size()});
    for (size_t h = 0; h < headCodes.size(); ++h) {
      HeadShape shape = headShape(headCodes[h], h);
      const std::string k = "heads." + std::to_string(h) + ".";
      const std::string l = "probe head " + std::to_string(h) + " ";
      add(out, k + "probes", l + "probes", DType::FP16, {shape.probes, d});
      add(out, k + "proj", l + "projection", DType::FP16, {shape.out, shape.probes * d});
      add(out, k + "bias", l + "bias", DType::FP16, {shape.out});
    }
  }

  // 7. The tokenizer, always last.
  if (withTokenizer) add(out, "tokenizer", "tokenizer", DType::RAW, {});
  return out;
}

// ---- bits map ----

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "2", "3", "4", "5" or "1.58" (ternary, stored as 5).
uint32_t parseWidth(const std::string& text, const std::string& entry) {
  if (text == "2" || text == "3" || text == "4") return static_cast<uint32_t>(text[0] - '0');
  if (text == "1.58" || text == "5") return 5;
  throw Error("bits map entry '" + entry + "': width '" + text +
              "' is not one of 2, 3, 4 or 1.58 (ternary, also written 5)");
}

}  // namespace

BitsMap BitsMap::parse(const std::string& text) {
  BitsMap map;
  if (trim(text).empty()) throw Error("bits map is empty (expected e.g. \"" + std::string(kRealBitsMap) + "\")");
  bool sawDefault = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string entry = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) throw Error("bits map '" + text + "' has an empty entry");
    size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      // A bare width is shorthand for default=WIDTH (needle build --bits 2).
      if (sawDefault) throw Error("bits map '" + text + "' sets the default width twice");
      map.defaultBits = parseWidth(entry, entry);
      sawDefault = true;
      continue;
    }
    std::string prefix = trim(entry.substr(0, eq));
    uint32_t bits = parseWidth(trim(entry.substr(eq + 1)), entry);
    if (prefix.empty()) throw Error("bits map entry '" + entry + "' has no name before '='");
    if (prefix == "default") {
      if (sawDefault) throw Error("bits map '" + text + "' sets the default width twice");
      map.defaultBits = bits;
      sawDefault = true;
      continue;
    }
    for (const auto& [p, b] : map.prefixes)
      if (p == prefix) throw Error("bits map '" + text + "' names '" + prefix + "' twice");
    map.prefixes.emplace_back(prefix, bits);
  }
  return map;
}

uint32_t BitsMap::bitsFor(const std::string& bitsName) const {
  uint32_t bits = defaultBits;
  size_t best = 0;
  for (const auto& [prefix, b] : prefixes)
    if (prefix.size() > best && bitsName.compare(0, prefix.size(), prefix) == 0) {
      best = prefix.size();
      bits = b;
    }
  return bits;
}

// ---- sizes and placement ----

uint64_t elementCount(const std::vector<uint64_t>& shape, const std::string& what) {
  uint64_t n = 1;
  for (uint64_t dim : shape) n = checkedMul(n, dim, what);
  return n;
}

uint64_t cqBlobBytes(uint64_t rows, uint64_t cols, uint32_t group, uint32_t bits, const std::string& what) {
  if (group == 0) throw Error(what + ": CQ group is 0");
  const uint64_t indexBits = bits == 5 ? 2 : bits;
  const uint64_t groups = cols / group + (cols % group != 0);
  const uint64_t colsPadded = checkedMul(groups, group, what);
  const uint64_t packedBits = checkedMul(checkedMul(rows, colsPadded, what), indexBits, what);
  const uint64_t norms = checkedMul(checkedMul(rows, groups, what), 2, what);
  // Rows are whole bytes whenever group is a multiple of 8; round up otherwise so nothing is lost.
  return checkedAdd((packedBits + 7) / 8, norms, what);
}

std::vector<BlobPlacement> placeBlobs(const std::vector<TensorSpec>& layout, const BitsMap& bits,
                                      uint64_t tokenizerBytes) {
  std::vector<BlobPlacement> out(layout.size());
  uint64_t cursor = kDirectoryOffset + uint64_t{kRecordBytes} * layout.size();
  for (size_t i = 0; i < layout.size(); ++i) {
    const TensorSpec& spec = layout[i];
    BlobPlacement& p = out[i];
    p.offset = align64(cursor);
    switch (spec.dtype) {
      case DType::CQ:
        p.group = kCqGroup;
        p.bits = bits.bitsFor(spec.bitsName);
        p.length = cqBlobBytes(spec.shape.at(0), spec.shape.at(1), p.group, p.bits, spec.label);
        break;
      case DType::FP16: p.length = checkedMul(elementCount(spec.shape, spec.label), 2, spec.label); break;
      case DType::FP32: p.length = checkedMul(elementCount(spec.shape, spec.label), 4, spec.label); break;
      case DType::RAW: p.length = tokenizerBytes; break;
    }
    cursor = checkedAdd(p.offset, p.length, spec.label);
  }
  return out;
}

}  // namespace needle
