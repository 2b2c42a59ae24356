// dump.cpp: writes the parity ladder dump (docs/dump-format.md) as one JSON object.
#include "dump.hpp"

#include <cmath>
#include <cstdio>

namespace needle {

namespace {

// Appends `,` between items of a JSON array or object.
struct Joiner {
  std::string& out;
  bool first = true;
  void next() {
    if (!first) out += ',';
    first = false;
  }
};

void appendFloats(std::string& out, const std::vector<float>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += jsonFloat(values[i]);
  }
  out += ']';
}

void appendIds(std::string& out, const std::vector<uint32_t>& ids) {
  out += '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
}

void appendGeometry(std::string& out, const Geometry& g) {
  Joiner j{out};
  out += '{';
  auto field = [&](const char* name, uint32_t value) {
    j.next();
    out += jsonString(name) + ':' + std::to_string(value);
  };
  auto array = [&](const char* name, const uint32_t* values, uint32_t n) {
    j.next();
    out += jsonString(name) + ':';
    appendIds(out, std::vector<uint32_t>(values, values + n));
  };
  field("num_tensors", g.num_tensors);
  field("codebook_len", g.codebook_len);
  field("kv_window", g.kv_window);
  field("kv_bits", g.kv_bits);
  field("vocab", g.vocab);
  field("d_model", g.d_model);
  field("num_heads", g.num_heads);
  field("num_kv_heads", g.num_kv_heads);
  field("num_layers", g.num_layers);
  field("head_dim", g.head_dim);
  field("max_seq_len", g.max_seq_len);
  field("hada_n", g.hada_n);
  field("mhc_lanes", g.mhc_lanes);
  field("engram_slots", g.engram_slots);
  field("engram_sub_dim", g.engram_sub_dim);
  field("num_engram_tables", g.num_engram_tables);
  field("engram_conv_taps", g.engram_conv_taps);
  field("engram_conv_dilation", g.engram_conv_dilation);
  field("num_engram_orders", g.num_engram_orders);
  array("engram_orders", g.engram_orders, kMaxOrders);  // zero-padded, as stored
  field("num_engram_sites", g.num_engram_sites);
  array("engram_sites", g.engram_sites, kMaxSites);
  j.next();
  out += "\"rope_theta\":" + jsonFloat(g.rope_theta);
  out += '}';
}

}  // namespace

std::vector<float> dumpMatvecInput(uint32_t cols) {
  std::vector<float> x(cols);
  for (uint32_t i = 0; i < cols; ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + 0.11f);
  return x;
}

std::string jsonFloat(float value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(value));
  return buf;
}

std::string jsonString(const std::string& utf8) {
  std::string out = "\"";
  for (unsigned char c : utf8) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 bytes pass through: JSON text is UTF-8
        }
    }
  }
  return out + "\"";
}

std::string dumpJson(const Dump& dump) {
  const ReferenceOptions& o = dump.options;
  std::string out = "{\n\"format\":\"needle-dump/1\",\n\"archive\":" + jsonString(dump.archive) + ",\n";
  out += "\"options\":{\"kv\":" + std::string(o.kvInt8 ? "\"int8\"" : "\"f32\"") +
         ",\"act\":" + (o.a8 ? "\"a8\"" : "\"f32\"") + ",\"sink\":" + std::to_string(o.sink) + "},\n";
  out += "\"geometry\":";
  appendGeometry(out, dump.geometry);
  out += ",\n\"ids\":";
  appendIds(out, dump.ids);

  out += ",\n\"dequant_row\":{\"tensor\":" + jsonString(dump.dequantTensor) +
         ",\"row\":" + std::to_string(dump.dequantRow) + ",\"values\":";
  appendFloats(out, dump.dequantValues);
  out += "},\n\"matvec\":{\"tensor\":" + jsonString(dump.matvecTensor) + ",\"input\":";
  appendFloats(out, dump.matvecInput);
  out += ",\"output\":";
  appendFloats(out, dump.matvecOutput);
  out += "},\n";

  const Trace& t = dump.position0;
  out += "\"position0\":{\"embedding\":";
  appendFloats(out, t.embedding);
  out += ",\n\"engram\":[";
  for (size_t s = 0; s < t.engramE.size(); ++s) {
    if (s) out += ',';
    const uint32_t layer = s < kMaxSites ? dump.geometry.engram_sites[s] : 0;
    out += "\n{\"site\":" + std::to_string(s) + ",\"layer\":" + std::to_string(layer) + ",\"e\":";
    appendFloats(out, t.engramE[s]);
    out += ",\"k\":";
    appendFloats(out, s < t.engramK.size() ? t.engramK[s] : std::vector<float>{});
    out += ",\"v\":";
    appendFloats(out, s < t.engramV.size() ? t.engramV[s] : std::vector<float>{});
    out += '}';
  }
  out += "],\n\"layers\":[";
  for (size_t i = 0; i < t.laneIn.size(); ++i) {
    if (i) out += ',';
    out += "\n{\"in\":";
    appendFloats(out, t.laneIn[i]);
    out += ",\"out\":";
    appendFloats(out, i < t.laneOut.size() ? t.laneOut[i] : std::vector<float>{});
    out += '}';
  }
  out += "]},\n\"logits\":[";
  for (size_t r = 0; r < dump.logits.size(); ++r) {
    if (r) out += ',';
    out += '\n';
    appendFloats(out, dump.logits[r]);
  }
  out += "],\n\"generated\":";
  appendIds(out, dump.generated);
  out += "\n}\n";
  return out;
}

}  // namespace needle
