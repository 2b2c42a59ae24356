// safetensors.cpp: float weights from and to the safetensors format (docs/cq.md, "safetensors").
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the tensor
// data. The JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data), plus an optional "__metadata__" map of strings. Our tensor names are
// TensorSpec::key; the geometry travels in the metadata under the header field names.
//
// The file is untrusted: the shared JSON reader (host/json.hpp) is strict and bounded (nesting
// depth, sizes), every offset is checked against the file, and every failure is an Error that names
// the file, the tensor and the byte offset.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "fp16.hpp"
#include "json.hpp"
#include "writer.hpp"

namespace needle {

namespace {

using json::Value;

// A JSON number that must be a non-negative integer no larger than kMaxSafeInteger.
uint64_t jsonUint(const Value& v, const std::string& what) {
  const bool digitsOnly = v.kind == Value::Kind::Number && !v.text.empty() &&
                          v.text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t value = 0;
  if (digitsOnly) {
    auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), value);
    if (ec != std::errc() || end != v.text.data() + v.text.size() || value > kMaxSafeInteger)
      throw Error(what + " at file offset " + std::to_string(v.offset) + ": " + v.text + " is too large");
    return value;
  }
  throw Error(what + " at file offset " + std::to_string(v.offset) + ": expected a non-negative integer");
}

// ---------------------------------------------------------------------------------------------
// Metadata: the geometry under the header's field names
// ---------------------------------------------------------------------------------------------

struct ScalarField {
  const char* name;
  uint32_t Geometry::*member;
};
// Every u32 header field except num_tensors (which the archive writer derives from the layout).
constexpr ScalarField kScalarFields[] = {
    {"codebook_len", &Geometry::codebook_len},
    {"kv_window", &Geometry::kv_window},
    {"kv_bits", &Geometry::kv_bits},
    {"vocab", &Geometry::vocab},
    {"d_model", &Geometry::d_model},
    {"num_heads", &Geometry::num_heads},
    {"num_kv_heads", &Geometry::num_kv_heads},
    {"num_layers", &Geometry::num_layers},
    {"head_dim", &Geometry::head_dim},
    {"max_seq_len", &Geometry::max_seq_len},
    {"hada_n", &Geometry::hada_n},
    {"mhc_lanes", &Geometry::mhc_lanes},
    {"engram_slots", &Geometry::engram_slots},
    {"engram_sub_dim", &Geometry::engram_sub_dim},
    {"num_engram_tables", &Geometry::num_engram_tables},
    {"engram_conv_taps", &Geometry::engram_conv_taps},
    {"engram_conv_dilation", &Geometry::engram_conv_dilation},
    {"num_engram_orders", &Geometry::num_engram_orders},
    {"num_engram_sites", &Geometry::num_engram_sites},
};

bool isGeometryKey(const std::string& key) {
  if (key == "num_tensors" || key == "engram_orders" || key == "engram_sites" || key == "rope_theta") return true;
  for (const ScalarField& f : kScalarFields)
    if (key == f.name) return true;
  return false;
}

uint32_t parseU32(const std::string& text, const std::string& what) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw Error(what + ": '" + text + "' is not an unsigned 32-bit integer");
  return value;
}

// "2,3" -> {2, 3}; "" -> {}.
std::vector<uint32_t> parseU32List(const std::string& text, const std::string& what) {
  std::vector<uint32_t> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(parseU32(text.substr(start, comma - start), what));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string joinU32(const uint32_t* values, uint32_t count) {
  std::string out;
  for (uint32_t i = 0; i < count; ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out;
}

std::string shortestFloat(float value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

// The geometry stored in the metadata. Every field is required once any one is present.
Geometry geometryFromMetadata(const std::map<std::string, std::string>& meta, const std::string& what) {
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = meta.find(key);
    if (it == meta.end()) throw Error(what + ": __metadata__ has geometry but no \"" + key + "\"");
    return it->second;
  };
  Geometry g;
  for (const ScalarField& f : kScalarFields) {
    if (std::string(f.name) == "codebook_len" && !meta.count(f.name)) continue;  // optional: always 28
    g.*(f.member) = parseU32(get(f.name), what + ": __metadata__ \"" + f.name + "\"");
  }
  auto list = [&](const char* key, uint32_t count, uint32_t* into, uint32_t capacity) {
    const std::vector<uint32_t> values = parseU32List(get(key), what + ": __metadata__ \"" + key + "\"");
    if (values.size() != count || count > capacity)
      throw Error(what + ": __metadata__ \"" + key + "\" lists " + std::to_string(values.size()) +
                  " values, but its count field says " + std::to_string(count) + " (at most " +
                  std::to_string(capacity) + ")");
    for (size_t i = 0; i < values.size(); ++i) into[i] = values[i];
  };
  list("engram_orders", g.num_engram_orders, g.engram_orders, kMaxOrders);
  list("engram_sites", g.num_engram_sites, g.engram_sites, kMaxSites);
  const std::string& theta = get("rope_theta");
  float value = 0;
  auto [end, ec] = std::from_chars(theta.data(), theta.data() + theta.size(), value);
  if (theta.empty() || ec != std::errc() || end != theta.data() + theta.size() || !std::isfinite(value))
    throw Error(what + ": __metadata__ \"rope_theta\": '" + theta + "' is not a finite number");
  g.rope_theta = value;
  return g;
}

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------

struct StoredTensor {
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
  uint64_t offset = 0;          // file offset of the tensor's header entry, for errors
};

uint32_t dtypeSize(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

uint64_t product(const std::vector<uint64_t>& shape, const std::string& what) {
  uint64_t n = 1;
  for (uint64_t dim : shape) n = checkedMul(n, dim, what);
  return n;
}

// "[512, 128]" for messages; "[512,128]" (compact) for the JSON we write.
std::string shapeText(const std::vector<uint64_t>& shape, bool compact = false) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += compact ? "," : ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// Stored shape == canonical shape, where a one-element tensor may also be written as [] or [1].
bool shapeMatches(const std::vector<uint64_t>& stored, const std::vector<uint64_t>& canonical) {
  if (stored == canonical) return true;
  const auto isScalar = [](const std::vector<uint64_t>& s) { return s.empty() || s == std::vector<uint64_t>{1}; };
  return isScalar(stored) && isScalar(canonical);
}

// One entry {"dtype": ..., "shape": [...], "data_offsets": [b, e]} of the header.
StoredTensor parseTensorEntry(const std::string& name, const Value& v, const std::string& what) {
  const std::string where = what + ": tensor \"" + name + "\"";
  if (v.kind != Value::Kind::Object)
    throw Error(where + " at file offset " + std::to_string(v.offset) + ": expected an object");
  StoredTensor t;
  t.offset = v.offset;
  bool sawDtype = false, sawShape = false, sawOffsets = false;
  for (const auto& [key, value] : v.members) {
    if (key == "dtype") {
      if (value.kind != Value::Kind::String)
        throw Error(where + ": \"dtype\" at file offset " + std::to_string(value.offset) + " is not a string");
      t.dtype = value.text;
      sawDtype = true;
    } else if (key == "shape") {
      if (value.kind != Value::Kind::Array)
        throw Error(where + ": \"shape\" at file offset " + std::to_string(value.offset) + " is not an array");
      for (const Value& dim : value.items) t.shape.push_back(jsonUint(dim, where + " shape"));
      sawShape = true;
    } else if (key == "data_offsets") {
      if (value.kind != Value::Kind::Array || value.items.size() != 2)
        throw Error(where + ": \"data_offsets\" at file offset " + std::to_string(value.offset) +
                    " is not an array of two integers");
      t.begin = jsonUint(value.items[0], where + " data_offsets");
      t.end = jsonUint(value.items[1], where + " data_offsets");
      sawOffsets = true;
    } else {
      throw Error(where + ": unknown field \"" + key + "\"");
    }
  }
  if (!sawDtype || !sawShape || !sawOffsets)
    throw Error(where + " at file offset " + std::to_string(v.offset) +
                ": needs \"dtype\", \"shape\" and \"data_offsets\"");
  return t;
}

// The tensor's values widened to f32 (F32, F16 or BF16, little-endian).
std::vector<float> decodeTensor(const StoredTensor& t, const uint8_t* data, uint64_t count) {
  std::vector<float> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* at = data + t.begin + i * dtypeSize(t.dtype);
    if (t.dtype == "F32") {
      const uint32_t bits = uint32_t{at[0]} | (uint32_t{at[1]} << 8) | (uint32_t{at[2]} << 16) |
                            (uint32_t{at[3]} << 24);
      std::memcpy(&out[i], &bits, 4);
    } else {
      const uint16_t half = static_cast<uint16_t>(at[0] | (at[1] << 8));
      if (t.dtype == "F16") {
        out[i] = halfToFloat(half);
      } else {  // BF16: the top half of an f32
        const uint32_t bits = uint32_t{half} << 16;
        std::memcpy(&out[i], &bits, 4);
      }
    }
  }
  return out;
}

std::vector<uint8_t> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(path + ": cannot open for reading");
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error(path + ": cannot tell the file's size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) throw Error(path + ": read failed");
  return bytes;
}

}  // namespace

FloatModel readSafetensors(const std::string& path, const std::optional<Geometry>& fallback) {
  const std::string what = "safetensors file " + path;
  const std::vector<uint8_t> bytes = readWholeFile(path);
  if (bytes.size() < 8)
    throw Error(what + ": " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  const uint64_t headerLength = ByteView(bytes.data(), bytes.size()).u64(0, what + ": header length");
  if (headerLength > bytes.size() - 8)
    throw Error(what + ": header length " + std::to_string(headerLength) + " at file offset 0 runs past the end" +
                " of the file (size " + std::to_string(bytes.size()) + ")");
  const uint64_t dataStart = 8 + headerLength;
  const uint64_t dataSize = bytes.size() - dataStart;

  // The header is machine-written: errors give file offsets. Its JSON nests 3 deep.
  json::ParseOptions options;
  options.source = what + ": header JSON";
  options.where = json::ParseOptions::Where::FileOffset;
  options.base = 8;
  options.maxDepth = 16;
  options.maxBytes = static_cast<size_t>(headerLength);
  const Value root = json::parse(
      std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(headerLength)), options);
  if (root.kind != Value::Kind::Object) throw Error(what + ": the header JSON is not an object");

  std::map<std::string, std::string> meta;
  std::map<std::string, StoredTensor> stored;
  for (const auto& [name, value] : root.members) {
    if (name == "__metadata__") {
      if (value.kind != Value::Kind::Object)
        throw Error(what + ": __metadata__ at file offset " + std::to_string(value.offset) + " is not an object");
      for (const auto& [key, entry] : value.members) {
        if (entry.kind != Value::Kind::String)
          throw Error(what + ": __metadata__ \"" + key + "\" at file offset " + std::to_string(entry.offset) +
                      " is not a string");
        meta[key] = entry.text;
      }
      continue;
    }
    StoredTensor t = parseTensorEntry(name, value, what);
    const std::string where = what + ": tensor \"" + name + "\" (entry at file offset " + std::to_string(t.offset) + ")";
    if (dtypeSize(t.dtype) == 0)
      throw Error(where + ": dtype \"" + t.dtype + "\" is not F32, F16 or BF16");
    if (t.begin > t.end || t.end > dataSize)
      throw Error(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  ") lie outside the " + std::to_string(dataSize) + " data bytes");
    const uint64_t expected = checkedMul(product(t.shape, where), dtypeSize(t.dtype), where);
    if (t.end - t.begin != expected)
      throw Error(where + ": shape " + shapeText(t.shape) + " of " + t.dtype + " needs " + std::to_string(expected) +
                  " bytes, data_offsets give " + std::to_string(t.end - t.begin));
    stored.emplace(name, std::move(t));
  }

  // Geometry: the metadata when it has any geometry field, else the caller's fallback.
  bool hasGeometry = false;
  for (const auto& entry : meta) hasGeometry = hasGeometry || isGeometryKey(entry.first);
  FloatModel model;
  if (hasGeometry) {
    model.geo = geometryFromMetadata(meta, what);
  } else if (fallback) {
    model.geo = *fallback;
  } else {
    throw Error(what + ": no geometry in __metadata__ and none given (name a preset or add the metadata)");
  }
  validateGeometry(model.geo);

  // Probe heads: "head_codes" in the metadata, else the values of a heads.manifest tensor.
  if (auto it = meta.find("head_codes"); it != meta.end())
    model.headCodes = parseU32List(it->second, what + ": __metadata__ \"head_codes\"");
  const auto manifest = stored.find("heads.manifest");
  if (manifest != stored.end()) {
    const std::vector<float> codes =
        decodeTensor(manifest->second, bytes.data() + dataStart, product(manifest->second.shape, what));
    std::vector<uint32_t> fromTensor;
    for (float c : codes) {
      if (!(c == 1.0f || c == 2.0f))
        throw Error(what + ": tensor \"heads.manifest\" holds " + std::to_string(c) +
                    ", not a head code (1 contrastive, 2 confidence)");
      fromTensor.push_back(static_cast<uint32_t>(c));
    }
    if (meta.count("head_codes") && fromTensor != model.headCodes)
      throw Error(what + ": tensor \"heads.manifest\" disagrees with __metadata__ \"head_codes\"");
    model.headCodes = fromTensor;
  }

  for (const TensorSpec& spec : canonicalLayout(model.geo, model.headCodes, false)) {
    auto it = stored.find(spec.key);
    if (it == stored.end()) throw Error(what + ": missing tensor \"" + spec.key + "\" (" + spec.label + ")");
    const StoredTensor& t = it->second;
    if (!shapeMatches(t.shape, spec.shape))
      throw Error(what + ": tensor \"" + spec.key + "\" (" + spec.label + ") has shape " + shapeText(t.shape) +
                  ", the geometry needs " + shapeText(spec.shape));
    FloatTensor& out = model.tensors[spec.key];
    out.shape = spec.shape;
    out.data = decodeTensor(t, bytes.data() + dataStart, product(spec.shape, spec.label));
    stored.erase(it);
  }
  if (!stored.empty())
    throw Error(what + ": tensor \"" + stored.begin()->first + "\" (entry at file offset " +
                std::to_string(stored.begin()->second.offset) + ") is not part of this geometry's layout");
  return model;
}

void writeSafetensors(const FloatModel& model, const std::string& path) {
  const std::vector<TensorSpec> layout = canonicalLayout(model.geo, model.headCodes, false);
  for (const auto& [key, tensor] : model.tensors) {
    bool known = false;
    for (const TensorSpec& spec : layout) known = known || spec.key == key;
    if (!known) throw Error("writeSafetensors: tensor \"" + key + "\" is not part of the geometry's layout");
  }

  // Metadata: every geometry field, then the head codes.
  std::string header = "{\"__metadata__\":{";
  auto metaEntry = [&](const std::string& key, const std::string& value) {
    if (header.back() != '{') header += ',';
    json::appendQuoted(header, key);
    header += ':';
    json::appendQuoted(header, value);
  };
  const Geometry& g = model.geo;
  for (const ScalarField& f : kScalarFields) metaEntry(f.name, std::to_string(g.*(f.member)));
  metaEntry("engram_orders", joinU32(g.engram_orders, std::min(g.num_engram_orders, kMaxOrders)));
  metaEntry("engram_sites", joinU32(g.engram_sites, std::min(g.num_engram_sites, kMaxSites)));
  metaEntry("rope_theta", shortestFloat(g.rope_theta));
  metaEntry("head_codes", joinU32(model.headCodes.data(), static_cast<uint32_t>(model.headCodes.size())));
  header += '}';

  // Tensor entries in layout order, data contiguous in the same order.
  uint64_t cursor = 0;
  std::vector<const FloatTensor*> ordered;
  for (const TensorSpec& spec : layout) {
    auto it = model.tensors.find(spec.key);
    if (it == model.tensors.end())
      throw Error("writeSafetensors: missing tensor \"" + spec.key + "\" (" + spec.label + ")");
    const FloatTensor& t = it->second;
    const uint64_t count = product(spec.shape, spec.label);
    if (!shapeMatches(t.shape, spec.shape) || t.data.size() != count)
      throw Error("writeSafetensors: tensor \"" + spec.key + "\" (" + spec.label + ") has shape " +
                  shapeText(t.shape) + " and " + std::to_string(t.data.size()) + " values, the geometry needs " +
                  shapeText(spec.shape));
    header += ',';
    json::appendQuoted(header, spec.key);
    header += ":{\"dtype\":\"F32\",\"shape\":" + shapeText(spec.shape, true) + ",\"data_offsets\":[" +
              std::to_string(cursor) + "," + std::to_string(cursor + 4 * count) + "]}";
    cursor += 4 * count;
    ordered.push_back(&t);
  }
  header += '}';
  while (header.size() % 8 != 0) header += ' ';  // the data starts 8-byte aligned, as in safetensors

  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + cursor);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (const FloatTensor* t : ordered) {
    for (float value : t->data) {
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    }
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw Error(path + ": cannot open for writing");
  file.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  file.close();
  if (!file) throw Error(path + ": write failed");
}

}  // namespace needle
