// needle-info: everything a Needle 2 archive says about itself, after the full load-time validation.
#include <cstdio>
#include <string>
#include <vector>

#include "archive.hpp"
#include "cli.hpp"
#include "tokenizer.hpp"

using namespace needle;

namespace {

const char* kUsage =
    "usage: needle-info FILE [--json]\n"
    "\n"
    "Validates a Needle 2 archive (.cact) as needlework loads it and prints the tag, every header\n"
    "field with its byte offset, the codebooks, a tokenizer summary and one line per directory record\n"
    "(index, label, key, kind, shape, bits, blob offset, blob bytes). --json prints the same as JSON.\n"
    "Exit status 1 with the reason when the archive does not load.\n";

struct Field {
  uint32_t offset;
  std::string name;
  std::string value;
};

std::vector<Field> headerFields(const Geometry& g) {
  auto u = [](uint32_t v) { return std::to_string(v); };
  char theta[32];
  std::snprintf(theta, sizeof theta, "%.9g", g.rope_theta);
  std::vector<Field> f = {
      {4, "num_tensors", u(g.num_tensors)},         {8, "codebook_len", u(g.codebook_len)},
      {12, "kv_window", u(g.kv_window)},            {16, "kv_bits", u(g.kv_bits)},
      {20, "vocab", u(g.vocab)},                    {24, "d_model", u(g.d_model)},
      {28, "num_heads", u(g.num_heads)},            {32, "num_kv_heads", u(g.num_kv_heads)},
      {36, "num_layers", u(g.num_layers)},          {40, "head_dim", u(g.head_dim)},
      {44, "max_seq_len", u(g.max_seq_len)},        {48, "hada_n", u(g.hada_n)},
      {52, "mhc_lanes", u(g.mhc_lanes)},            {56, "engram_slots", u(g.engram_slots)},
      {60, "engram_sub_dim", u(g.engram_sub_dim)},  {64, "num_engram_tables", u(g.num_engram_tables)},
      {68, "engram_conv_taps", u(g.engram_conv_taps)},
      {72, "engram_conv_dilation", u(g.engram_conv_dilation)},
      {76, "num_engram_orders", u(g.num_engram_orders)}};
  for (uint32_t i = 0; i < kMaxOrders; ++i)
    f.push_back({80 + 4 * i, "engram_orders[" + u(i) + "]", u(g.engram_orders[i])});
  f.push_back({96, "num_engram_sites", u(g.num_engram_sites)});
  for (uint32_t s = 0; s < kMaxSites; ++s)
    f.push_back({100 + 4 * s, "engram_sites[" + u(s) + "]", u(g.engram_sites[s])});
  f.push_back({116, "rope_theta", theta});
  return f;
}

std::string shapeText(const Record& r, const char* open, const char* close) {
  std::string s = open;
  for (uint32_t k = 0; k < r.ndim; ++k) s += (k ? ", " : "") + std::to_string(r.shape[k]);
  return s + close;
}

std::string bitsText(const Record& r) {
  if (r.dtype != DType::CQ) return "-";
  return r.bits == 5 ? "1.58" : std::to_string(r.bits);
}

std::string floatText(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  return buf;
}

// JSON string literal: quotes, backslashes and control characters escaped; UTF-8 passed through.
std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char* pieceTypeName(PieceType t) {
  switch (t) {
    case PieceType::Normal: return "normal";
    case PieceType::Unknown: return "unknown";
    case PieceType::Control: return "control";
    case PieceType::UserDefined: return "user_defined";
    case PieceType::Byte: return "byte";
  }
  return "type?";
}

struct TokenizerSummary {
  bool present = false;
  TokenizerSpec spec;
  uint32_t counts[5] = {};
  std::vector<uint32_t> special;  // control, unknown and user-defined ids, in id order
  int64_t firstByte = -1, lastByte = -1;
};

TokenizerSummary summarise(const Model& m) {
  TokenizerSummary t;
  if (m.tokenizer.empty()) return t;
  t.present = true;
  t.spec = Tokenizer::fromBlob(m.tokenizer).spec();
  for (uint32_t id = 0; id < t.spec.pieces.size(); ++id) {
    PieceType type = t.spec.pieces[id].type;
    if (static_cast<uint8_t>(type) < 5) ++t.counts[static_cast<uint8_t>(type)];
    if (type == PieceType::Control || type == PieceType::Unknown || type == PieceType::UserDefined)
      t.special.push_back(id);
    if (type == PieceType::Byte) {
      if (t.firstByte < 0) t.firstByte = id;
      t.lastByte = id;
    }
  }
  return t;
}

void printText(const std::string& path, size_t fileSize, const Model& m) {
  const Geometry& g = m.geo;
  std::printf("%s: Needle 2 archive, %zu bytes (blobs end at %llu)\n", path.c_str(), fileSize,
              static_cast<unsigned long long>(m.dataEnd));
  std::printf("tag 0x%08X\n\nheader (120 bytes):\n", kTagNeedle2);
  for (const Field& f : headerFields(g)) std::printf("  %3u  %-22s %s\n", f.offset, f.name.c_str(), f.value.c_str());

  std::printf("\ncodebooks (offset %u, %u floats):\n", kCodebookOffset, kCodebookLen);
  const char* names[3] = {"cb2", "cb3", "cb4"};
  const uint32_t starts[3] = {0, 4, 12}, lens[3] = {4, 8, 16};
  for (int b = 0; b < 3; ++b) {
    std::printf("  %s:", names[b]);
    for (uint32_t k = 0; k < lens[b]; ++k) std::printf(" %s", floatText(m.codebook[starts[b] + k]).c_str());
    std::printf("\n");
  }

  TokenizerSummary t = summarise(m);
  if (!t.present) {
    std::printf("\ntokenizer: none\n");
  } else {
    const TokenizerSpec& s = t.spec;
    std::printf("\ntokenizer: %zu pieces; pad %u, eos %u, bos %u, unk %u; add_dummy_prefix %d, byte_fallback %d\n",
                s.pieces.size(), s.pad_id, s.eos_id, s.bos_id, s.unk_id, s.add_dummy_prefix ? 1 : 0,
                s.byte_fallback ? 1 : 0);
    std::printf("  %u normal, %u unknown, %u control, %u user-defined, %u byte", t.counts[0], t.counts[1],
                t.counts[2], t.counts[3], t.counts[4]);
    if (t.firstByte >= 0) std::printf(" (ids %lld..%lld)", static_cast<long long>(t.firstByte),
                                      static_cast<long long>(t.lastByte));
    std::printf("\n  special:");
    for (uint32_t id : t.special) std::printf(" %u=%s", id, s.pieces[id].surface.c_str());
    std::printf("\n");
  }

  std::printf("\nrecords (directory at %u, %zu x %u bytes):\n", kDirectoryOffset, m.records.size(), kRecordBytes);
  std::printf("  %5s  %-34s %-22s %-4s %-16s %4s %12s %10s\n", "index", "label", "key", "kind", "shape",
              "bits", "offset", "bytes");
  for (size_t i = 0; i < m.records.size(); ++i) {
    const Record& r = m.records[i];
    const TensorSpec& spec = m.layout[i];
    std::printf("  %5zu  %-34s %-22s %-4s %-16s %4s %12llu %10llu\n", i, spec.label.c_str(), spec.key.c_str(),
                dtypeName(r.dtype), shapeText(r, "[", "]").c_str(), bitsText(r).c_str(),
                static_cast<unsigned long long>(r.offset), static_cast<unsigned long long>(r.length));
  }
}

void printJson(const std::string& path, size_t fileSize, const Model& m) {
  std::printf("{\n  \"file\": %s,\n  \"bytes\": %zu,\n  \"data_end\": %llu,\n  \"tag\": \"0x%08X\",\n",
              jsonString(path).c_str(), fileSize, static_cast<unsigned long long>(m.dataEnd), kTagNeedle2);
  std::printf("  \"header\": [");
  std::vector<Field> fields = headerFields(m.geo);
  for (size_t i = 0; i < fields.size(); ++i)
    std::printf("%s\n    {\"offset\": %u, \"name\": %s, \"value\": %s}", i ? "," : "", fields[i].offset,
                jsonString(fields[i].name).c_str(), fields[i].value.c_str());
  std::printf("\n  ],\n  \"codebooks\": {");
  const char* names[3] = {"cb2", "cb3", "cb4"};
  const uint32_t starts[3] = {0, 4, 12}, lens[3] = {4, 8, 16};
  for (int b = 0; b < 3; ++b) {
    std::printf("%s\"%s\": [", b ? ", " : "", names[b]);
    for (uint32_t k = 0; k < lens[b]; ++k) std::printf("%s%s", k ? ", " : "", floatText(m.codebook[starts[b] + k]).c_str());
    std::printf("]");
  }
  std::printf("},\n  \"tokenizer\": ");
  TokenizerSummary t = summarise(m);
  if (!t.present) {
    std::printf("null");
  } else {
    const TokenizerSpec& s = t.spec;
    std::printf("{\"pieces\": %zu, \"pad_id\": %u, \"eos_id\": %u, \"bos_id\": %u, \"unk_id\": %u, "
                "\"add_dummy_prefix\": %s, \"byte_fallback\": %s, \"counts\": {",
                s.pieces.size(), s.pad_id, s.eos_id, s.bos_id, s.unk_id, s.add_dummy_prefix ? "true" : "false",
                s.byte_fallback ? "true" : "false");
    for (int k = 0; k < 5; ++k)
      std::printf("%s\"%s\": %u", k ? ", " : "", pieceTypeName(static_cast<PieceType>(k)), t.counts[k]);
    std::printf("}, \"first_byte_id\": %lld, \"last_byte_id\": %lld, \"special\": [",
                static_cast<long long>(t.firstByte), static_cast<long long>(t.lastByte));
    for (size_t i = 0; i < t.special.size(); ++i)
      std::printf("%s{\"id\": %u, \"piece\": %s, \"type\": \"%s\"}", i ? ", " : "", t.special[i],
                  jsonString(s.pieces[t.special[i]].surface).c_str(), pieceTypeName(s.pieces[t.special[i]].type));
    std::printf("]}");
  }
  std::printf(",\n  \"records\": [");
  for (size_t i = 0; i < m.records.size(); ++i) {
    const Record& r = m.records[i];
    const TensorSpec& spec = m.layout[i];
    std::printf("%s\n    {\"index\": %zu, \"label\": %s, \"key\": %s, \"kind\": \"%s\", \"shape\": %s, "
                "\"bits\": %u, \"group\": %u, \"offset\": %llu, \"bytes\": %llu}",
                i ? "," : "", i, jsonString(spec.label).c_str(), jsonString(spec.key).c_str(), dtypeName(r.dtype),
                shapeText(r, "[", "]").c_str(), r.bits, r.group, static_cast<unsigned long long>(r.offset),
                static_cast<unsigned long long>(r.length));
  }
  std::printf("\n  ]\n}\n");
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run("needle-info", kUsage, argc, argv, [](cli::Args& args) {
    const bool json = args.flag("--json");
    std::vector<std::string> files = args.positionals();
    args.finish();
    if (files.size() != 1) throw cli::UsageError("expected one archive FILE");
    const std::vector<uint8_t> bytes = cli::readFile(files[0]);
    Model model;
    try {
      model = readArchive(ByteView(bytes.data(), bytes.size()));
    } catch (const Error& e) {
      throw Error(files[0] + ": " + e.what());
    }
    if (json) printJson(files[0], bytes.size(), model);
    else printText(files[0], bytes.size(), model);
    return 0;
  });
}
