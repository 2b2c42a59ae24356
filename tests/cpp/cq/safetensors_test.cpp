// safetensors_test.cpp: writeSafetensors -> readSafetensors round trips, files from other writers
// (F16, BF16, scalar shapes, no metadata), and hostile files that must give Error, never a crash.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "bytes.hpp"
#include "fp16.hpp"
#include "geometry.hpp"
#include "layout.hpp"
#include "writer.hpp"

using namespace needle;
namespace fs = std::filesystem;

namespace {

// A per-process scratch directory, removed when the test program exits.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("needle-cq-tests-" + std::to_string(::getpid()));
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// A scratch file for one test.
std::string scratch(const std::string& name) {
  static ScratchDir dir;
  fs::create_directories(dir.path);
  return (dir.path / name).string();
}

void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// 8-byte length, header text, data.
std::vector<uint8_t> fileOf(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// readSafetensors of these bytes; the Error's message, or "" when it loaded.
std::string loadError(const std::vector<uint8_t>& bytes, const std::optional<Geometry>& fallback = std::nullopt) {
  const std::string path = scratch("hostile.safetensors");
  writeBytes(path, bytes);
  try {
    readSafetensors(path, fallback);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool sameModel(const FloatModel& a, const FloatModel& b) {
  if (std::memcmp(&a.geo, &b.geo, sizeof(Geometry)) != 0 || a.headCodes != b.headCodes) return false;
  if (a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [key, t] : a.tensors) {
    auto it = b.tensors.find(key);
    if (it == b.tensors.end() || it->second.shape != t.shape || it->second.data.size() != t.data.size() ||
        std::memcmp(t.data.data(), it->second.data.data(), t.data.size() * 4) != 0)
      return false;
  }
  return true;
}

// A file as another writer might produce it: spaces, tensors in reverse order, no metadata, some
// tensors F16 or BF16, attention gates with shape []. `expected` gets the values as they will read.
std::vector<uint8_t> foreignFile(const FloatModel& model, FloatModel& expected) {
  expected = model;
  std::string header = "{ ";
  std::vector<uint8_t> data;
  const std::vector<TensorSpec> layout = canonicalLayout(model.geo, model.headCodes, false);
  for (auto spec = layout.rbegin(); spec != layout.rend(); ++spec) {
    const std::vector<float>& values = model.tensors.at(spec->key).data;
    std::vector<float>& read = expected.tensors.at(spec->key).data;
    const bool half = spec->key.find("norm") != std::string::npos;
    const bool brain = spec->key == "embedding";
    const uint64_t begin = data.size();
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      if (half) {
        const uint16_t h = floatToHalf(values[i]);
        read[i] = halfToFloat(h);
        data.push_back(static_cast<uint8_t>(h));
        data.push_back(static_cast<uint8_t>(h >> 8));
      } else if (brain) {
        const uint16_t top = static_cast<uint16_t>(bits >> 16);  // truncation: any bf16 is fine here
        const uint32_t widened = uint32_t{top} << 16;
        std::memcpy(&read[i], &widened, 4);
        data.push_back(static_cast<uint8_t>(top));
        data.push_back(static_cast<uint8_t>(top >> 8));
      } else {
        for (int b = 0; b < 4; ++b) data.push_back(static_cast<uint8_t>(bits >> (8 * b)));
      }
    }
    std::string shape = "[";
    if (spec->key.find("attn_gate") == std::string::npos)
      for (size_t d = 0; d < spec->shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(spec->shape[d]);
    shape += "]";
    if (header.size() > 2) header += " ,\n ";
    header += "\"" + spec->key + "\" : { \"data_offsets\" : [ " + std::to_string(begin) + " , " +
              std::to_string(data.size()) + " ] , \"shape\" : " + shape + " , \"dtype\" : \"" +
              (half ? "F16" : brain ? "BF16" : "F32") + "\" }";
  }
  header += " }";
  return fileOf(header, data);
}

}  // namespace

TEST_CASE("writeSafetensors then readSafetensors gives back the same model", "[cq][safetensors]") {
  for (bool heads : {true, false}) {
    INFO("heads " << heads);
    const FloatModel model = randomModel(presetGeometry("tiny"), 5, heads);
    const std::string path = scratch("roundtrip.safetensors");
    writeSafetensors(model, path);
    const FloatModel back = readSafetensors(path, std::nullopt);
    CHECK(sameModel(model, back));
    // The geometry came from the metadata: a wrong fallback is ignored.
    const FloatModel again = readSafetensors(path, presetGeometry("small"));
    CHECK(sameModel(model, again));

    const std::vector<uint8_t> bytes = readBytes(path);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t{bytes[i]} << (8 * i);
    CHECK((8 + n) % 8 == 0);
    const std::string header(bytes.begin() + 8, bytes.begin() + 8 + n);
    CHECK(header.find("\"d_model\":\"128\"") != std::string::npos);
    CHECK(header.find("\"engram_sites\":\"1,3\"") != std::string::npos);
    CHECK(header.find("\"rope_theta\":\"10000\"") != std::string::npos);
    CHECK(header.find(heads ? "\"head_codes\":\"1,2\"" : "\"head_codes\":\"\"") != std::string::npos);
    // Tensors in layout order: the embedding's data first.
    CHECK(header.find("\"embedding\":{\"dtype\":\"F32\",\"shape\":[512,128],\"data_offsets\":[0,262144]}") !=
          std::string::npos);
  }
}

TEST_CASE("readSafetensors takes F16, BF16, [] shapes, any order, and a fallback geometry",
          "[cq][safetensors]") {
  const Geometry g = presetGeometry("tiny");
  FloatModel expected;
  const std::vector<uint8_t> file = foreignFile(randomModel(g, 9, false), expected);
  const std::string path = scratch("foreign.safetensors");
  writeBytes(path, file);
  CHECK(sameModel(readSafetensors(path, g), expected));
  CHECK_THROWS_WITH(readSafetensors(path, std::nullopt), Catch::Contains("no geometry"));
  // A manifest tensor alone names the heads.
  const FloatModel withHeads = randomModel(g, 9, true);
  writeBytes(path, foreignFile(withHeads, expected));
  const FloatModel back = readSafetensors(path, g);
  CHECK(back.headCodes == std::vector<uint32_t>{1, 2});
  CHECK(sameModel(back, expected));
}

TEST_CASE("hostile safetensors headers give Error", "[cq][safetensors]") {
  CHECK_THAT(loadError({1, 2, 3}), Catch::Contains("shorter than the 8-byte"));
  CHECK_THAT(loadError({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'}), Catch::Contains("runs past the end"));
  CHECK_THAT(loadError({3, 0, 0, 0, 0, 0, 0, 0, '{', '}'}), Catch::Contains("runs past the end"));
  const char* badJson[] = {
      "",                                    // empty
      "{",                                   // truncated
      "{\"a\":1,}",                          // trailing comma
      "{\"a\" 1}",                           // missing colon
      "{\"a\":\"unterminated}",              // unterminated string
      "{\"a\":\"\\x\"}",                     // unknown escape
      "{\"a\":\"\\ud800\"}",                 // lone surrogate
      "{\"a\":\"tab\there\"}",               // raw control character
      "{\"a\":\"\xff\"}",                    // invalid UTF-8
      "{\"a\":\"\xc0\xaf\"}",                // overlong UTF-8
      "{\"a\":1,\"a\":2}",                   // duplicate member
      "{} x",                                // text after the value
      "{\"a\":tru}",                         // bad literal
      "{\"a\":-}",                           // bad number
      "{\"a\":01}",                          // leading zero
      "{\"a\":1.}",                          // bad fraction
  };
  for (const char* text : badJson) {
    INFO(text);
    CHECK_THAT(loadError(fileOf(text)), Catch::Contains("header JSON at file offset"));
  }
  CHECK_THAT(loadError(fileOf(std::string(100000, '['))), Catch::Contains("nesting deeper"));
  CHECK_THAT(loadError(fileOf("[]")), Catch::Contains("not an object"));

  // Tensor entries.
  auto entry = [](const std::string& body, const std::vector<uint8_t>& data = std::vector<uint8_t>(16)) {
    return loadError(fileOf("{\"x\":" + body + "}", data), presetGeometry("tiny"));
  };
  CHECK_THAT(entry("[]"), Catch::Contains("expected an object"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4]}"), Catch::Contains("needs \"dtype\""));
  CHECK_THAT(entry("{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}"),
             Catch::Contains("dtype \"I32\" is not F32, F16 or BF16"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,1099511627776]}"),
             Catch::Contains("lie outside the 16 data bytes"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,8]}"), Catch::Contains("lie outside"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}"),
             Catch::Contains("needs 16 bytes, data_offsets give 12"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,16]}"),
             Catch::Contains("expected a non-negative integer"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16.0]}"),
             Catch::Contains("expected a non-negative integer"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,16]}"),
             Catch::Contains("too large"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4000000000000,4000000000000],\"data_offsets\":[0,16]}"),
             Catch::Contains("overflows"));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"extra\":1}"),
             Catch::Contains("unknown field \"extra\""));
  CHECK_THAT(entry("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}"),
             Catch::Contains("missing tensor \"embedding\" (embedding)"));

  // Metadata.
  auto meta = [](const std::string& body) { return loadError(fileOf("{\"__metadata__\":" + body + "}")); };
  CHECK_THAT(meta("[]"), Catch::Contains("__metadata__ at file offset 24 is not an object"));
  CHECK_THAT(meta("{\"d_model\":128}"), Catch::Contains("is not a string"));
  CHECK_THAT(meta("{\"d_model\":\"128\"}"), Catch::Contains("no \"kv_window\""));
  CHECK_THAT(loadError(fileOf("{}")), Catch::Contains("no geometry"));
}

TEST_CASE("safetensors files that do not match the geometry give Error", "[cq][safetensors]") {
  const Geometry g = presetGeometry("tiny");
  const std::string path = scratch("mismatch.safetensors");
  // The metadata the writer produces, edited in the file: a bad theta, a wrong list, a bad geometry.
  const FloatModel model = randomModel(g, 3, true);
  writeSafetensors(model, path);
  const std::vector<uint8_t> good = readBytes(path);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::vector<uint8_t> bytes = good;
    std::string text(bytes.begin(), bytes.end());
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(from.size() == to.size());  // keep the header length
    std::copy(to.begin(), to.end(), bytes.begin() + at);
    return loadError(bytes);
  };
  CHECK_THAT(edited("\"rope_theta\":\"10000\"", "\"rope_theta\":\"1e0x0\""), Catch::Contains("rope_theta"));
  CHECK_THAT(edited("\"engram_sites\":\"1,3\"", "\"engram_sites\":\"1,x\""), Catch::Contains("engram_sites"));
  CHECK_THAT(edited("\"engram_sites\":\"1,3\"", "\"engram_sites\":\"1 3\""), Catch::Contains("engram_sites"));
  CHECK_THAT(edited("\"hada_n\":\"128\"", "\"hada_n\":\"100\""), Catch::Contains("hada_n"));
  CHECK_THAT(edited("\"head_codes\":\"1,2\"", "\"head_codes\":\"2,1\""),
             Catch::Contains("disagrees with __metadata__ \"head_codes\""));
  CHECK_THAT(edited("\"dtype\":\"F32\"", "\"dtype\":\"F64\""), Catch::Contains("dtype \"F64\""));

  FloatModel missing = model;
  missing.tensors.erase("layers.1.k_proj");
  CHECK_THROWS_WITH(writeSafetensors(missing, path), Catch::Contains("missing tensor \"layers.1.k_proj\""));
  FloatModel extra = model;
  extra.tensors["foo"] = FloatTensor{{1}, {0.0f}};
  CHECK_THROWS_WITH(writeSafetensors(extra, path), Catch::Contains("\"foo\" is not part of"));

  // Read side: a file from the writer with a tensor renamed (missing + extra), or a different shape.
  CHECK_THAT(edited("\"layers.1.k_proj\"", "\"layers.1.k_prox\""),
             Catch::Contains("missing tensor \"layers.1.k_proj\" (layer 1 key projection)"));
  CHECK_THAT(edited("\"shape\":[512,128]", "\"shape\":[128,512]"),
             Catch::Contains("has shape [128, 512], the geometry needs [512, 128]"));
}

TEST_CASE("truncated or corrupted safetensors files never crash", "[cq][safetensors]") {
  const FloatModel model = randomModel(presetGeometry("tiny"), 4, true);
  const std::string path = scratch("truncate.safetensors");
  writeSafetensors(model, path);
  const std::vector<uint8_t> good = readBytes(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{good[i]} << (8 * i);
  // Every cut inside the header and a few inside the data: an Error each time.
  for (uint64_t cut = 0; cut < good.size(); cut += (cut < 8 + n ? 37 : good.size() / 7)) {
    INFO("cut at " << cut);
    CHECK(!loadError(std::vector<uint8_t>(good.begin(), good.begin() + cut)).empty());
  }
  // Single corrupted header bytes: an Error or a model, but never undefined behaviour.
  for (uint64_t at = 8; at < 8 + n; at += 211) {
    std::vector<uint8_t> bytes = good;
    bytes[at] ^= 0x5A;
    loadError(bytes);
  }
  CHECK_THAT(loadError(good), Catch::Equals(""));
  CHECK_THROWS_WITH(readSafetensors(scratch("does-not-exist.safetensors"), std::nullopt),
                    Catch::Contains("cannot open"));
}
