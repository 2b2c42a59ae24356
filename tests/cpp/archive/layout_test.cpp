// The canonical layout, the bits map and blob placement, checked against the real Needle 2 file's
// published figures (design page 1.3-1.4 and 5) without generating its 43M weights.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "bytes.hpp"
#include "layout.hpp"

using namespace needle;

namespace {

const std::vector<uint32_t> kRealHeads = {1, 2};  // contrastive, confidence

size_t indexOf(const std::vector<TensorSpec>& layout, const std::string& key) {
  for (size_t i = 0; i < layout.size(); ++i)
    if (layout[i].key == key) return i;
  FAIL("no record " << key);
  return 0;
}

}  // namespace

TEST_CASE("layout: base with heads and tokenizer is the real 405-record file", "[layout]") {
  const Geometry g = presetGeometry("base");
  const auto layout = canonicalLayout(g, kRealHeads, true);
  REQUIRE(layout.size() == 405);
  CHECK(coreRecordCount(g) == 1 + 14 * 27 + 9 + 4 * 2 + 1);

  const BitsMap bits = BitsMap::parse(kRealBitsMap);
  std::map<std::string, int> kinds;
  for (const TensorSpec& s : layout) {
    if (s.dtype == DType::CQ) kinds["CQ" + std::to_string(bits.bitsFor(s.bitsName))]++;
    else kinds[dtypeName(s.dtype)]++;
  }
  CHECK(kinds["CQ2"] == 141);
  CHECK(kinds["CQ4"] == 4);
  CHECK(kinds["FP16"] == 259);
  CHECK(kinds["RAW"] == 1);
  CHECK(kinds.size() == 4);

  // The index bases of the real file.
  CHECK(layout[0].key == "embedding");
  for (uint32_t i = 0; i < 27; ++i) {
    CHECK(layout[1 + 14 * i].key == "layers." + std::to_string(i) + ".norm_in");
    CHECK(layout[1 + 14 * i + 13].key == "layers." + std::to_string(i) + ".d3");
  }
  CHECK(layout[379].key == "mhc.a_pre");
  CHECK(layout[387].key == "mhc.phi_res");
  CHECK(layout[388].key == "engram.0.tables");
  CHECK(layout[395].key == "engram.1.taps");
  CHECK(layout[396].key == "final_norm");
  CHECK(layout[397].key == "heads.manifest");
  CHECK(layout[398].key == "heads.0.probes");
  CHECK(layout[403].key == "heads.1.bias");
  CHECK(layout[404].key == "tokenizer");

  // The 4-bit CQ records under the real map: the embedding and the three phi.
  for (size_t i : {size_t{0}, size_t{385}, size_t{386}, size_t{387}}) {
    CHECK(layout[i].dtype == DType::CQ);
    CHECK(bits.bitsFor(layout[i].bitsName) == 4);
  }
}

TEST_CASE("layout: keys, labels, bits names and shapes", "[layout]") {
  const Geometry g = presetGeometry("base");
  const auto layout = canonicalLayout(g, kRealHeads, true);
  struct Expect {
    const char* key;
    const char* label;
    const char* bitsName;
    DType dtype;
    std::vector<uint64_t> shape;
  };
  const Expect expected[] = {
      {"embedding", "embedding", "embedding", DType::CQ, {8192, 512}},
      {"layers.3.norm_in", "layer 3 input norm", "", DType::FP16, {512}},
      {"layers.3.q_proj", "layer 3 query projection", "attn.q_proj", DType::CQ, {512, 512}},
      {"layers.3.k_proj", "layer 3 key projection", "attn.k_proj", DType::CQ, {256, 512}},
      {"layers.3.v_proj", "layer 3 value projection", "attn.v_proj", DType::CQ, {256, 512}},
      {"layers.3.q_norm", "layer 3 query norm", "", DType::FP16, {64}},
      {"layers.3.k_norm", "layer 3 key norm", "", DType::FP16, {64}},
      {"layers.3.gate_proj", "layer 3 output gate projection", "attn.gate_proj", DType::CQ, {512, 512}},
      {"layers.3.out_proj", "layer 3 output projection", "attn.out_proj", DType::CQ, {512, 512}},
      {"layers.3.post_norm", "layer 3 post-attention norm", "", DType::FP16, {512}},
      {"layers.3.attn_gate", "layer 3 attention gate", "", DType::FP16, {1}},
      {"layers.3.pre_hada", "layer 3 MLP input norm", "", DType::FP16, {512}},
      {"layers.3.d1", "layer 3 MLP diagonal d1", "", DType::FP16, {512}},
      {"layers.26.d3", "layer 26 MLP diagonal d3", "", DType::FP16, {512}},
      {"mhc.a_pre", "mHC pre-mix scale", "", DType::FP16, {27}},
      {"mhc.b_post", "mHC post-mix bias", "", DType::FP16, {27, 4}},
      {"mhc.b_res", "mHC residual-mix bias", "", DType::FP16, {27, 4, 4}},
      {"mhc.phi_pre", "mHC pre-mix projection", "mhc_phi_pre", DType::CQ, {108, 2048}},
      {"mhc.phi_post", "mHC post-mix projection", "mhc_phi_post", DType::CQ, {108, 2048}},
      {"mhc.phi_res", "mHC residual-mix projection", "mhc_phi_res", DType::CQ, {432, 2048}},
      {"engram.1.tables", "engram site 1 tables", "engram1.tables", DType::CQ, {32768, 128}},
      {"engram.1.key_proj", "engram site 1 key projection", "engram1.key_proj", DType::CQ, {512, 512}},
      {"engram.1.value_proj", "engram site 1 value projection", "engram1.value_proj", DType::CQ, {512, 512}},
      {"engram.1.taps", "engram site 1 taps", "", DType::FP16, {4, 512}},
      {"final_norm", "final norm", "", DType::FP16, {512}},
      {"heads.manifest", "probe head manifest", "", DType::FP16, {2}},
      {"heads.0.probes", "probe head 0 probes", "", DType::FP16, {4, 512}},
      {"heads.0.proj", "probe head 0 projection", "", DType::FP16, {128, 2048}},
      {"heads.0.bias", "probe head 0 bias", "", DType::FP16, {128}},
      {"heads.1.probes", "probe head 1 probes", "", DType::FP16, {8, 512}},
      {"heads.1.proj", "probe head 1 projection", "", DType::FP16, {1, 4096}},
      {"heads.1.bias", "probe head 1 bias", "", DType::FP16, {1}},
      {"tokenizer", "tokenizer", "", DType::RAW, {}},
  };
  for (const Expect& e : expected) {
    INFO(e.key);
    const TensorSpec& s = layout[indexOf(layout, e.key)];
    CHECK(s.label == e.label);
    CHECK(s.bitsName == e.bitsName);
    CHECK(s.dtype == e.dtype);
    CHECK(s.shape == e.shape);
  }
  CHECK_THROWS_WITH(canonicalLayout(g, {1, 3}, false),
                    Catch::Contains("probe head 1: code 3 is neither 1 (contrastive) nor 2 (confidence)"));
  CHECK(canonicalLayout(g, {}, false).size() == coreRecordCount(g));
  CHECK(canonicalLayout(presetGeometry("tiny"), {}, false).size() == 1 + 14 * 4 + 9 + 8 + 1);
}

TEST_CASE("layout: parameter counts match the design page", "[layout]") {
  const Geometry g = presetGeometry("base");
  uint64_t model = 0, heads = 0;
  for (const TensorSpec& s : canonicalLayout(g, kRealHeads, true)) {
    if (s.dtype == DType::RAW) continue;
    (s.key.rfind("heads.", 0) == 0 ? heads : model) += elementCount(s.shape, s.label);
  }
  CHECK(model == 43361908);
  CHECK(heads == 272515);
}

TEST_CASE("placement: the real file's offsets", "[layout]") {
  const Geometry g = presetGeometry("base");
  const auto layout = canonicalLayout(g, kRealHeads, true);
  const auto place = placeBlobs(layout, BitsMap::parse(kRealBitsMap), 115215);
  CHECK(kDirectoryOffset + kRecordBytes * layout.size() == 18052);
  CHECK(place[0].offset == 18112);
  CHECK(place[0].length == 8192 * 512 / 2 + 8192 * 4 * 2);  // 4-bit embedding + norms
  CHECK(place[0].bits == 4);
  CHECK(place[0].group == 128);
  CHECK(place[404].offset == 13622592);  // the tokenizer blob: everything before it as published
  CHECK(place[404].offset + place[404].length == 13737807);  // the real file with its 115,215-byte blob
  for (size_t i = 1; i < place.size(); ++i) {
    CHECK(place[i].offset % 64 == 0);
    CHECK(place[i].offset == align64(place[i - 1].offset + place[i - 1].length));
  }
  CHECK(place[1].group == 0);
  CHECK(place[1].bits == 0);
  CHECK(place[1].length == 1024);  // norm_in: 512 fp16
}

TEST_CASE("placement: uniform widths without heads, up to the tokenizer blob", "[layout]") {
  // The design page's W2/W3/W4 figures are where the tokenizer blob would start in a file without
  // heads: the directory counts the tokenizer record (398 records), the sum stops before its blob.
  const auto layout = canonicalLayout(presetGeometry("base"), {}, true);
  REQUIRE(layout.size() == 398);
  auto beforeTokenizer = [&](const char* map) { return placeBlobs(layout, BitsMap::parse(map), 0).back().offset; };
  CHECK(beforeTokenizer("default=2") == 11696768);
  CHECK(beforeTokenizer("default=3") == 17105536);
  CHECK(beforeTokenizer("default=4") == 22514304);
}

TEST_CASE("CQ blob sizes", "[layout]") {
  CHECK(cqBlobBytes(256, 512, 128, 2, "t") == 256 * 128 + 256 * 4 * 2);
  CHECK(cqBlobBytes(256, 512, 128, 3, "t") == 256 * 192 + 256 * 4 * 2);
  CHECK(cqBlobBytes(256, 512, 128, 4, "t") == 256 * 256 + 256 * 4 * 2);
  CHECK(cqBlobBytes(256, 512, 128, 5, "t") == 256 * 128 + 256 * 4 * 2);  // ternary: 2-bit crumbs
  CHECK(cqBlobBytes(3, 64, 128, 2, "t") == 3 * 32 + 3 * 2);              // padded to one group
  CHECK(cqBlobBytes(1, 129, 128, 4, "t") == 128 + 4);
  CHECK_THROWS_AS(cqBlobBytes(uint64_t{1} << 40, uint64_t{1} << 20, 128, 4, "huge"), Error);
}

TEST_CASE("bits map: parse and longest prefix", "[layout]") {
  BitsMap real = BitsMap::parse(kRealBitsMap);
  CHECK(real.defaultBits == 2);
  CHECK(real.bitsFor("embedding") == 4);
  CHECK(real.bitsFor("mhc_phi_res") == 4);
  CHECK(real.bitsFor("attn.q_proj") == 2);
  CHECK(real.bitsFor("engram0.tables") == 2);

  BitsMap m = BitsMap::parse(" attn=3, attn.k_proj=4 ,attn.k=2,engram=1.58,default=4");
  CHECK(m.bitsFor("attn.k_proj") == 4);  // longest prefix wins, whatever the order
  CHECK(m.bitsFor("attn.q_proj") == 3);
  CHECK(m.bitsFor("engram1.value_proj") == 5);
  CHECK(m.bitsFor("embedding") == 4);
  CHECK(BitsMap::parse("embedding=5").bitsFor("embedding") == 5);
  CHECK(BitsMap::parse("embedding=2").defaultBits == 4);  // no default given: 4 (W4A8)
  CHECK(BitsMap::parse("3").bitsFor("anything") == 3);    // a bare width is the default

  for (const char* bad : {"", "embedding", "embedding=", "embedding=6", "embedding=1", "=4", "a=4,,b=2",
                          "default=2,default=4", "a=4,a=2", "a=4,", "a=four", "a=1.5", "2,default=4"}) {
    INFO(bad);
    CHECK_THROWS_AS(BitsMap::parse(bad), Error);
  }
  CHECK_THROWS_WITH(BitsMap::parse("embedding=6"), Catch::Contains("width '6'"));
}

TEST_CASE("dtype names", "[layout]") {
  CHECK(std::string(dtypeName(DType::FP16)) == "FP16");
  CHECK(std::string(dtypeName(DType::FP32)) == "FP32");
  CHECK(std::string(dtypeName(DType::CQ)) == "CQ");
  CHECK(std::string(dtypeName(DType::RAW)) == "RAW");
  CHECK(std::string(dtypeName(static_cast<DType>(9))) == "dtype?");
}
