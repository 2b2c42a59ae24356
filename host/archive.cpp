// archive.cpp: reading a Needle 2 archive in place.
//
// The order of the checks is the order of trust. First the tag (so that a Needle 1 or Needle 3 file
// gets its own message), then the 120-byte header and its geometry rules, the codebooks, and the raw
// directory. Only then do we know how many records the geometry implies, which of them are probe heads
// and whether a tokenizer closes the file; each record is checked against its place in the canonical
// layout (dtype, shape, CQ group and bits, blob length, blob inside the archive) before any of its
// bytes are used. Sizes come from the validated geometry, never straight from the file, and every
// product goes through checkedMul. Packed CQ weights are never read here: they stay views into the
// caller's bytes. The work is O(records + control tensor sizes + tokenizer blob).
#include "archive.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "cq.hpp"
#include "fp16.hpp"
#include "tokenizer.hpp"

namespace needle {

// ---- CqMatrix accessors ----

uint32_t CqMatrix::index(uint32_t row, uint32_t col) const {
  // Each row is one LSB-first bit stream: index k occupies stream bits [k b, k b + b).
  const uint8_t* rowBytesPtr = packed + size_t{row} * rowBytes;
  const uint64_t bit = uint64_t{col} * indexBits;
  const size_t byte = static_cast<size_t>(bit >> 3);
  const uint32_t shift = static_cast<uint32_t>(bit & 7);
  uint32_t value = uint32_t{rowBytesPtr[byte]} >> shift;
  if (shift + indexBits > 8) value |= uint32_t{rowBytesPtr[byte + 1]} << (8 - shift);  // 3-bit spill
  return value & ((1u << indexBits) - 1);
}

float CqMatrix::norm(uint32_t row, uint32_t g) const {
  const uint8_t* p = norms + 2 * (size_t{row} * groups() + g);
  return halfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

std::string shapeText(const uint32_t* shape, uint32_t ndim) {
  std::string s = "[";
  for (uint32_t i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string shapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t recordOffset(uint64_t index) { return kDirectoryOffset + uint64_t{kRecordBytes} * index; }

// "layer 3 key projection (record 43, directory offset 2124)": how every record error starts.
std::string where(const std::string& label, uint64_t index) {
  return label + " (record " + std::to_string(index) + ", directory offset " +
         std::to_string(recordOffset(index)) + ")";
}

// Checks the tag, then reads the 29 u32 fields and the f32 rope_theta.
Geometry readHeader(ByteView bytes) {
  const uint32_t tag = bytes.u32(0, "archive tag");
  if (tag == kTagNeedle1)
    throw Error("this is a Needle 1 archive (tag 0x05E12A82 at offset 0, 20-byte header without "
                "geometry); needlework reads Needle 2 (tag 0x05E12A83)");
  if (tag == kTagNeedle3)
    throw Error("this is a Needle 3 archive; needlework reads Needle 2 (tag 0x05E12A84 at offset 0, "
                "expected 0x05E12A83)");
  if (tag != kTagNeedle2)
    throw Error("not a Needle archive: tag " + hex32(tag) + " at offset 0 (Needle 2 is 0x05E12A83)");
  bytes.require(0, kHeaderBytes, "header");

  Geometry g;
  static const std::string kHeader = "header";
  auto field = [&](uint32_t offset) { return bytes.u32(offset, kHeader); };
  g.num_tensors = field(4);
  g.codebook_len = field(8);
  g.kv_window = field(12);
  g.kv_bits = field(16);
  g.vocab = field(20);
  g.d_model = field(24);
  g.num_heads = field(28);
  g.num_kv_heads = field(32);
  g.num_layers = field(36);
  g.head_dim = field(40);
  g.max_seq_len = field(44);
  g.hada_n = field(48);
  g.mhc_lanes = field(52);
  g.engram_slots = field(56);
  g.engram_sub_dim = field(60);
  g.num_engram_tables = field(64);
  g.engram_conv_taps = field(68);
  g.engram_conv_dilation = field(72);
  g.num_engram_orders = field(76);
  for (uint32_t i = 0; i < kMaxOrders; ++i) g.engram_orders[i] = field(80 + 4 * i);
  g.num_engram_sites = field(96);
  for (uint32_t s = 0; s < kMaxSites; ++s) g.engram_sites[s] = field(100 + 4 * s);
  g.rope_theta = bytes.f32(116, kHeader);
  return g;
}

// The 44-byte directory record at `index`, read without judging it (the caller has checked that the
// whole directory lies inside the archive).
Record readRecord(ByteView bytes, uint64_t index) {
  static const std::string what = "directory record";
  const uint64_t at = recordOffset(index);
  Record r;
  r.dtype = static_cast<DType>(bytes.u8(at, what));
  r.ndim = bytes.u8(at + 1, what);
  for (uint32_t k = 0; k < 4; ++k) r.shape[k] = bytes.u32(at + 4 + 4 * k, what);
  r.offset = bytes.u64(at + 20, what);
  r.length = bytes.u64(at + 28, what);
  r.group = bytes.u32(at + 36, what);
  r.bits = bytes.u32(at + 40, what);
  return r;
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// CQ groups: powers of two from 32 (so that A8's blocks of 32 nest inside a group and packed rows are
// whole bytes) to 65536; the real file uses 128 everywhere.
constexpr uint32_t kMinGroup = 32;
constexpr uint32_t kMaxGroup = 65536;

// Checks one record against its place in the layout: dtype, shape, CQ parameters, blob length and
// blob bounds. `dirEnd` is the end of the directory: no blob may start before it.
void checkRecord(ByteView bytes, const Record& r, uint64_t index, const TensorSpec& spec, uint64_t dirEnd) {
  // The error prefix is built only on failure: a valid record costs no string work.
  auto fail = [&](const std::string& problem) { throw Error(where(spec.label, index) + ": " + problem); };
  const uint64_t recAt = recordOffset(index);
  const uint8_t rawType = static_cast<uint8_t>(r.dtype);
  if (rawType < 1 || rawType > 4)
    fail("dtype " + std::to_string(rawType) + " is not 1 FP16, 2 FP32, 3 CQ or 4 RAW");
  const uint16_t pad = static_cast<uint16_t>(bytes.data()[recAt + 2] | (bytes.data()[recAt + 3] << 8));
  if (pad != 0) fail("the u16 at record byte 2 is " + std::to_string(pad) + ", expected 0");
  if (r.ndim > 4) fail("ndim " + std::to_string(r.ndim) + " is more than 4");
  for (uint32_t k = r.ndim; k < 4; ++k)
    if (r.shape[k] != 0)
      fail("unused shape entry " + std::to_string(k) + " is " + std::to_string(r.shape[k]) + ", expected 0");

  // dtype: FP16 control tensors may also come as FP32 (defined by the format, never written by v2).
  const bool dtypeOk = r.dtype == spec.dtype || (spec.dtype == DType::FP16 && r.dtype == DType::FP32);
  if (!dtypeOk) fail(std::string("dtype ") + dtypeName(r.dtype) + " but the layout needs " + dtypeName(spec.dtype));

  bool shapeOk = r.ndim == spec.shape.size();
  for (uint32_t k = 0; shapeOk && k < r.ndim; ++k) shapeOk = r.shape[k] == spec.shape[k];
  if (!shapeOk) fail("shape " + shapeText(r.shape, r.ndim) + " but the geometry needs " + shapeText(spec.shape));

  // Expected blob length from the (now validated) shape; the products cannot overflow after
  // validateGeometry, but they still go through checkedMul.
  uint64_t expected = r.length;  // RAW: any length, the tokenizer parser judges the content
  if (r.dtype == DType::CQ) {
    if (!isPowerOfTwo(r.group) || r.group < kMinGroup || r.group > kMaxGroup)
      fail("CQ group " + std::to_string(r.group) + " is not a power of two in [" + std::to_string(kMinGroup) +
           ", " + std::to_string(kMaxGroup) + "]");
    if (r.bits < 2 || r.bits > 5) fail("CQ bits " + std::to_string(r.bits) + " is not 2, 3, 4 or 5 (ternary)");
    expected = cqBlobBytes(r.shape[0], r.shape[1], r.group, r.bits, spec.label);
    if (r.length != expected)
      fail("blob length " + std::to_string(r.length) + " but packed rows + fp16 norms of a " +
           shapeText(r.shape, 2) + " matrix at " + std::to_string(r.bits) + " bits, group " +
           std::to_string(r.group) + " need " + std::to_string(expected));
  } else {
    if (r.group != 0 || r.bits != 0)
      fail("group " + std::to_string(r.group) + " and bits " + std::to_string(r.bits) + " must both be 0 for a " +
           dtypeName(r.dtype) + " record");
    if (r.dtype != DType::RAW) {
      const uint64_t elementBytes = r.dtype == DType::FP16 ? 2 : 4;
      uint64_t elements = 1;
      for (uint32_t k = 0; k < r.ndim; ++k) elements = checkedMul(elements, r.shape[k], spec.label);
      expected = checkedMul(elements, elementBytes, spec.label);
      if (r.length != expected)
        fail("blob length " + std::to_string(r.length) + " but " + std::to_string(elements) + " " +
             dtypeName(r.dtype) + " elements need " + std::to_string(expected));
    }
  }

  if (r.offset < dirEnd)
    fail("blob offset " + std::to_string(r.offset) + " lies inside the header or directory (which end at " +
         std::to_string(dirEnd) + ")");
  if (r.offset > bytes.size() || r.length > bytes.size() - r.offset)
    bytes.require(r.offset, r.length, where(spec.label, index) + ": blob");
}

// A control tensor widened to f32 (FP16 via halfToFloat, FP32 copied). The record is already checked,
// so the element count is bounded by the archive's size.
std::vector<float> readFloats(ByteView bytes, const Record& r) {
  const uint64_t elementBytes = r.dtype == DType::FP32 ? 4 : 2;
  std::vector<float> out(static_cast<size_t>(r.length / elementBytes));
  const uint8_t* p = bytes.data() + r.offset;
  for (size_t i = 0; i < out.size(); ++i) {
    if (elementBytes == 2) {
      out[i] = halfToFloat(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
    } else {
      uint32_t bits = uint32_t{p[4 * i]} | (uint32_t{p[4 * i + 1]} << 8) | (uint32_t{p[4 * i + 2]} << 16) |
                      (uint32_t{p[4 * i + 3]} << 24);
      std::memcpy(&out[i], &bits, 4);
    }
  }
  return out;
}

// A CQ record as a view: no packed byte is read.
CqMatrix viewCq(ByteView bytes, const Record& r, const std::array<float, kCodebookLen>& codebook) {
  CqMatrix m;
  m.rows = r.shape[0];
  m.cols = r.shape[1];
  m.group = r.group;
  m.colsPadded = (m.cols + m.group - 1) / m.group * m.group;
  m.bits = r.bits;
  m.indexBits = r.bits == 5 ? 2 : r.bits;
  m.rowBytes = size_t{m.colsPadded} * m.indexBits / 8;
  m.packed = bytes.data() + r.offset;
  m.norms = m.packed + size_t{m.rows} * m.rowBytes;
  if (r.bits == 5) {
    // Ternary crumbs: sign-extended 1 is +1, 3 is -1; 0 is zero and 2 is never written.
    // c / sqrt(G) computed in f64 and rounded once (0.108187906f at G = 128), as the quantizer does.
    const float level = static_cast<float>(double{kTernaryC} / std::sqrt(static_cast<double>(r.group)));
    m.levels[1] = level;
    m.levels[3] = -level;
  } else {
    const uint32_t offset = r.bits == 2 ? 0 : r.bits == 3 ? 4 : 12;
    for (uint32_t k = 0; k < (1u << r.bits); ++k) m.levels[k] = codebook[offset + k];
  }
  return m;
}

}  // namespace

Model readArchive(ByteView bytes) {
  Model model;
  Geometry& g = model.geo;
  g = readHeader(bytes);
  validateGeometry(g);

  // Codebooks: 28 floats, read as stored (they are empirical, not recomputed).
  bytes.require(kCodebookOffset, 4 * kCodebookLen, "codebooks");
  for (uint32_t k = 0; k < kCodebookLen; ++k) {
    const uint32_t offset = kCodebookOffset + 4 * k;
    model.codebook[k] = bytes.f32(offset, "codebooks");
    if (!std::isfinite(model.codebook[k])) {
      const char* name = k < 4 ? "cb2" : k < 12 ? "cb3" : "cb4";
      const uint32_t local = k < 4 ? k : k < 12 ? k - 4 : k - 12;
      throw Error("codebook entry " + std::string(name) + "[" + std::to_string(local) + "] (offset " +
                  std::to_string(offset) + ") is not finite");
    }
  }

  // Directory: bounds first, so that the record vector is never sized from an unchecked count.
  const uint64_t n = g.num_tensors;
  const uint32_t core = coreRecordCount(g);
  if (n < core)
    throw Error("header field num_tensors (offset 4): " + std::to_string(n) +
                " records but the geometry needs at least " + std::to_string(core));
  const uint64_t dirEnd = checkedAdd(kDirectoryOffset, checkedMul(kRecordBytes, n, "directory"), "directory");
  bytes.require(kDirectoryOffset, dirEnd - kDirectoryOffset, "directory of " + std::to_string(n) + " records");
  model.records.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) model.records.push_back(readRecord(bytes, i));

  // Which optional records are present: the tokenizer iff the last record is RAW; then the count
  // formula gives the probe heads (extra = N - core - [tokenizer], H = (extra - 1) / 3).
  const bool withTokenizer = model.records.back().dtype == DType::RAW;
  const uint64_t optional = n - core;
  if (withTokenizer && optional == 0)
    throw Error(where("final norm", n - 1) + ": dtype RAW but the layout needs FP16");
  const uint64_t extra = optional - (withTokenizer ? 1 : 0);
  std::vector<uint32_t> headCodes;
  if (extra != 0) {
    if (extra < 4 || (extra - 1) % 3 != 0)
      throw Error("header field num_tensors (offset 4): " + std::to_string(n) + " records = " +
                  std::to_string(core) + " core" + (withTokenizer ? " + tokenizer" : "") + " + " +
                  std::to_string(extra) + ", but probe heads take 1 manifest + 3 records per head");
    const uint64_t heads = (extra - 1) / 3;
    TensorSpec manifestSpec{"heads.manifest", "probe head manifest", "", DType::FP16, {heads}};
    const Record& manifest = model.records[core];
    checkRecord(bytes, manifest, core, manifestSpec, dirEnd);
    std::vector<float> codes = readFloats(bytes, manifest);
    for (size_t h = 0; h < codes.size(); ++h) {
      if (codes[h] != 1.0f && codes[h] != 2.0f)
        throw Error(where("probe head manifest", core) + ": entry " + std::to_string(h) + " is " +
                    std::to_string(codes[h]) + ", expected 1 (contrastive) or 2 (confidence)");
      headCodes.push_back(static_cast<uint32_t>(codes[h]));
    }
  }
  model.layout = canonicalLayout(g, headCodes, withTokenizer);
  if (model.layout.size() != n)  // cannot happen when the count formula above is right
    throw Error("internal: layout has " + std::to_string(model.layout.size()) + " records, header " +
                std::to_string(n));

  for (uint64_t i = 0; i < n; ++i) {
    checkRecord(bytes, model.records[i], i, model.layout[i], dirEnd);
    model.dataEnd = std::max(model.dataEnd, model.records[i].offset + model.records[i].length);
  }

  // Fill the model in layout order with a cursor over the records.
  size_t cursor = 0;
  auto cq = [&] { return viewCq(bytes, model.records[cursor++], model.codebook); };
  auto floats = [&] { return readFloats(bytes, model.records[cursor++]); };

  model.embedding = cq();
  model.layers.resize(g.num_layers);
  for (Layer& layer : model.layers) {
    layer.norm_in = floats();
    layer.q_proj = cq();
    layer.k_proj = cq();
    layer.v_proj = cq();
    layer.q_norm = floats();
    layer.k_norm = floats();
    layer.gate_proj = cq();
    layer.out_proj = cq();
    layer.post_norm = floats();
    layer.attn_gate = floats().at(0);
    layer.pre_hada = floats();
    layer.d1 = floats();
    layer.d2 = floats();
    layer.d3 = floats();
  }
  Mhc& mhc = model.mhc;
  mhc.a_pre = floats();
  mhc.a_post = floats();
  mhc.a_res = floats();
  mhc.b_pre = floats();
  mhc.b_post = floats();
  mhc.b_res = floats();
  mhc.phi_pre = cq();
  mhc.phi_post = cq();
  mhc.phi_res = cq();
  model.engram.resize(g.num_engram_sites);
  for (uint32_t s = 0; s < g.num_engram_sites; ++s) {
    EngramSite& site = model.engram[s];
    site.layer = g.engram_sites[s];
    site.tables = cq();
    site.key_proj = cq();
    site.value_proj = cq();
    site.taps = floats();
  }
  model.final_norm = floats();
  if (!headCodes.empty()) {
    ++cursor;  // the manifest, already read
    for (uint32_t code : headCodes) {
      ProbeHead head;
      head.kind = static_cast<HeadKind>(code);
      head.probes = model.records[cursor].shape[0];
      head.probe = floats();
      head.out = model.records[cursor].shape[0];
      head.proj = floats();
      head.bias = floats();
      model.heads.push_back(std::move(head));
    }
  }
  if (withTokenizer) {
    const Record& r = model.records[cursor];
    const std::string at = where("tokenizer", cursor);
    model.tokenizer = bytes.slice(r.offset, r.length, at);
    // A tokenizer that does not parse is a load error, not a later surprise.
    size_t pieces = 0;
    try {
      pieces = Tokenizer::fromBlob(model.tokenizer).size();
    } catch (const Error& e) {
      throw Error(at + ", blob at offset " + std::to_string(r.offset) + ": " + e.what());
    }
    if (pieces > g.vocab)
      throw Error(at + ": " + std::to_string(pieces) + " pieces but header field vocab (offset 20) is " +
                  std::to_string(g.vocab) + ": encoded ids would pass the embedding");
    ++cursor;
  }
  return model;
}

}  // namespace needle
