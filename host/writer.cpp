// writer.cpp: float weights -> a byte-exact Needle 2 archive (what upstream's exporter writes).
//
// The file is planned before it is written: placeBlobs() gives every blob's offset and length from the
// layout and the bits map alone, the output is allocated once at its final size (zero-filled, which
// makes the alignment gaps zero), and each blob is then written in place.
#include <cmath>
#include <cstring>
#include <string>

#include "cq.hpp"
#include "fp16.hpp"
#include "writer.hpp"

namespace needle {

namespace {

void putU32(std::vector<uint8_t>& out, uint64_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) out[at + k] = static_cast<uint8_t>(v >> (8 * k));
}
void putU64(std::vector<uint8_t>& out, uint64_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) out[at + k] = static_cast<uint8_t>(v >> (8 * k));
}
void putF32(std::vector<uint8_t>& out, uint64_t at, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  putU32(out, at, bits);
}

std::string shapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "layers.3.k_proj (layer 3 key projection)": how the writer names a tensor in errors.
std::string named(const TensorSpec& spec) { return spec.key + " (" + spec.label + ")"; }

// The float tensor for `spec`, checked for presence, shape, size and finite values.
const FloatTensor& tensorFor(const FloatModel& model, const TensorSpec& spec) {
  auto it = model.tensors.find(spec.key);
  if (it == model.tensors.end()) throw Error("missing tensor " + named(spec));
  const FloatTensor& t = it->second;
  if (t.shape != spec.shape)
    throw Error("tensor " + named(spec) + ": shape " + shapeText(t.shape) + " but the geometry needs " +
                shapeText(spec.shape));
  const uint64_t count = elementCount(spec.shape, spec.label);
  if (t.data.size() != count)
    throw Error("tensor " + named(spec) + ": " + std::to_string(t.data.size()) + " values but shape " +
                shapeText(t.shape) + " holds " + std::to_string(count));
  for (size_t i = 0; i < t.data.size(); ++i)
    if (!std::isfinite(t.data[i]))
      throw Error("tensor " + named(spec) + ": value " + std::to_string(i) + " is not finite");
  return t;
}

// Writes `values` as fp16 at `at`; Error if one of them overflows fp16 to infinity.
void writeHalves(std::vector<uint8_t>& out, uint64_t at, const std::vector<float>& values,
                 const TensorSpec& spec) {
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = floatToHalf(values[i]);
    if ((h & 0x7C00) == 0x7C00)
      throw Error("tensor " + named(spec) + ": value " + std::to_string(i) + " (" +
                  std::to_string(values[i]) + ") overflows fp16");
    out[at + 2 * i] = static_cast<uint8_t>(h);
    out[at + 2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

// The codebooks are a fixed computation (400,000 samples, 200 Lloyd iterations): do it once.
const std::array<float, kCodebookLen>& codebooks() {
  static const std::array<float, kCodebookLen> cb = computeCodebooks();
  return cb;
}

}  // namespace

std::vector<uint8_t> writeArchive(const FloatModel& model, const PackOptions& options) {
  Geometry g = model.geo;
  validateGeometry(g);  // before any size is computed from it
  const std::vector<TensorSpec> layout = canonicalLayout(g, model.headCodes, options.tokenizer.has_value());
  g.num_tensors = static_cast<uint32_t>(layout.size());

  std::vector<uint8_t> tokenizer;
  if (options.tokenizer) {
    if (options.tokenizer->pieces.size() > g.vocab)
      throw Error("tokenizer has " + std::to_string(options.tokenizer->pieces.size()) +
                  " pieces but the vocabulary is " + std::to_string(g.vocab) +
                  ": encoded ids would pass the embedding");
    tokenizer = tokenizerBlob(*options.tokenizer);
  }
  for (const TensorSpec& spec : layout)
    if (spec.dtype == DType::CQ) {
      uint32_t bits = options.bits.bitsFor(spec.bitsName);
      if (bits < 2 || bits > 5)
        throw Error("bits map gives " + std::to_string(bits) + " bits for " + named(spec) +
                    " (expected 2, 3, 4 or 5)");
    }
  const std::vector<BlobPlacement> place = placeBlobs(layout, options.bits, tokenizer.size());
  const uint64_t size = place.back().offset + place.back().length;
  std::vector<uint8_t> out(static_cast<size_t>(size), 0);

  // Header: 29 u32 fields, then rope_theta as f32.
  const uint32_t fields[29] = {kTagNeedle2, g.num_tensors, g.codebook_len, g.kv_window, g.kv_bits,
                               g.vocab, g.d_model, g.num_heads, g.num_kv_heads, g.num_layers, g.head_dim,
                               g.max_seq_len, g.hada_n, g.mhc_lanes, g.engram_slots, g.engram_sub_dim,
                               g.num_engram_tables, g.engram_conv_taps, g.engram_conv_dilation,
                               g.num_engram_orders, g.engram_orders[0], g.engram_orders[1],
                               g.engram_orders[2], g.engram_orders[3], g.num_engram_sites,
                               g.engram_sites[0], g.engram_sites[1], g.engram_sites[2], g.engram_sites[3]};
  for (uint32_t k = 0; k < 29; ++k) putU32(out, 4 * k, fields[k]);
  putF32(out, 116, g.rope_theta);

  const std::array<float, kCodebookLen>& cb = codebooks();
  for (uint32_t k = 0; k < kCodebookLen; ++k) putF32(out, kCodebookOffset + 4 * k, cb[k]);

  for (size_t i = 0; i < layout.size(); ++i) {
    const TensorSpec& spec = layout[i];
    const BlobPlacement& p = place[i];

    // Directory record (44 bytes).
    const uint64_t rec = kDirectoryOffset + uint64_t{kRecordBytes} * i;
    out[rec] = static_cast<uint8_t>(spec.dtype);
    out[rec + 1] = static_cast<uint8_t>(spec.shape.size());
    for (size_t k = 0; k < spec.shape.size(); ++k) putU32(out, rec + 4 + 4 * k, static_cast<uint32_t>(spec.shape[k]));
    putU64(out, rec + 20, p.offset);
    putU64(out, rec + 28, p.length);
    putU32(out, rec + 36, p.group);
    putU32(out, rec + 40, p.bits);

    // Blob.
    if (spec.dtype == DType::RAW) {
      std::memcpy(out.data() + p.offset, tokenizer.data(), tokenizer.size());
    } else if (spec.key == "heads.manifest") {
      // The codes come from headCodes; a manifest tensor, if given too, must agree with them.
      std::vector<float> codes(model.headCodes.begin(), model.headCodes.end());
      auto it = model.tensors.find(spec.key);
      if (it != model.tensors.end() && it->second.data != codes)
        throw Error("tensor " + named(spec) + " disagrees with the model's head codes");
      writeHalves(out, p.offset, codes, spec);
    } else if (spec.dtype == DType::FP16) {
      writeHalves(out, p.offset, tensorFor(model, spec).data, spec);
    } else {
      const FloatTensor& t = tensorFor(model, spec);
      std::vector<uint8_t> blob = quantizeCq(t.data.data(), static_cast<uint32_t>(spec.shape[0]),
                                             static_cast<uint32_t>(spec.shape[1]), p.bits, p.group, cb);
      if (blob.size() != p.length)
        throw Error("internal: quantizeCq gave " + std::to_string(blob.size()) + " bytes for " +
                    named(spec) + ", the layout expects " + std::to_string(p.length));
      std::memcpy(out.data() + p.offset, blob.data(), blob.size());
    }
  }
  return out;
}

}  // namespace needle
