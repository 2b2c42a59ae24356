// writeArchive -> readArchive: every byte where the layout says, every value as written.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "cq.hpp"
#include "fixtures.hpp"
#include "fp16.hpp"

using namespace needle;
using namespace needle::test;

namespace {

// fp16 rounding of a float tensor: what a control tensor reads back as.
std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = halfToFloat(floatToHalf(v[i]));
  return out;
}

// Independent bit extraction for CqMatrix::index (design page 2: one LSB-first stream per row).
uint32_t streamIndex(const CqMatrix& m, uint32_t row, uint32_t col) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < m.indexBits; ++b) {
    uint64_t j = uint64_t{col} * m.indexBits + b;
    v |= ((m.packed[row * m.rowBytes + j / 8] >> (j % 8)) & 1u) << b;
  }
  return v;
}

// The checks every loaded CqMatrix must pass against its record and the archive bytes.
void checkCq(const CqMatrix& m, const Record& r, const std::vector<uint8_t>& bytes) {
  CHECK(m.rows == r.shape[0]);
  CHECK(m.cols == r.shape[1]);
  CHECK(m.group == 128);
  CHECK(m.colsPadded == (m.cols + 127) / 128 * 128);
  CHECK(m.bits == r.bits);
  CHECK(m.packed == bytes.data() + r.offset);
  CHECK(m.norms == m.packed + size_t{m.rows} * m.rowBytes);
  CHECK(size_t(m.norms - m.packed) + size_t{m.rows} * m.groups() * 2 == r.length);
}

}  // namespace

TEST_CASE("round trip: tiny archive with heads and tokenizer", "[archive]") {
  const FloatModel& fm = tinyModel(true);
  const PackOptions options = packOptions(kRealBitsMap, true);
  const std::vector<uint8_t>& bytes = tinyArchive(true, true);
  const Model m = readArchive(viewOf(bytes));
  const Geometry& g = m.geo;

  // Header and codebooks.
  CHECK(getU32(bytes, 0) == kTagNeedle2);
  CHECK(g.num_tensors == m.records.size());
  CHECK(g.vocab == 512);
  CHECK(g.d_model == 128);
  CHECK(g.num_layers == 4);
  CHECK(g.rope_theta == 10000.0f);
  const auto cb = computeCodebooks();
  for (uint32_t k = 0; k < kCodebookLen; ++k) CHECK(m.codebook[k] == cb[k]);
  CHECK(m.codebook[0] == -0.13317214f);  // cb2[0] as published

  // Layout and placement: exactly what placeBlobs promises, the file ends at the last blob, gaps are 0.
  const auto layout = canonicalLayout(g, fm.headCodes, true);
  REQUIRE(m.layout.size() == layout.size());
  REQUIRE(m.records.size() == layout.size());
  const std::vector<uint8_t> tokBlob = tokenizerBlob(*options.tokenizer);
  const auto place = placeBlobs(layout, options.bits, tokBlob.size());
  CHECK(place[0].offset == align64(kDirectoryOffset + kRecordBytes * layout.size()));
  uint64_t cursor = kDirectoryOffset + kRecordBytes * layout.size();
  for (size_t i = 0; i < layout.size(); ++i) {
    INFO("record " << i << " " << layout[i].label);
    const Record& r = m.records[i];
    CHECK(m.layout[i].key == layout[i].key);
    CHECK(r.dtype == layout[i].dtype);
    CHECK(r.ndim == layout[i].shape.size());
    for (uint32_t k = 0; k < 4; ++k) CHECK(r.shape[k] == (k < r.ndim ? layout[i].shape[k] : 0));
    CHECK(r.offset == place[i].offset);
    CHECK(r.length == place[i].length);
    CHECK(r.group == place[i].group);
    CHECK(r.bits == place[i].bits);
    for (uint64_t b = cursor; b < r.offset; ++b) REQUIRE(bytes[b] == 0);
    cursor = r.offset + r.length;
    // Blob bytes: CQ exactly as the quantizer writes them, FP16 as fp16 of the inputs.
    if (r.dtype == DType::CQ) {
      const FloatTensor& t = fm.tensors.at(layout[i].key);
      auto blob = quantizeCq(t.data.data(), r.shape[0], r.shape[1], r.bits, 128, cb);
      REQUIRE(blob.size() == r.length);
      CHECK(std::memcmp(blob.data(), bytes.data() + r.offset, blob.size()) == 0);
    }
  }
  CHECK(cursor == bytes.size());
  CHECK(m.dataEnd == bytes.size());

  // Control tensors read back as the fp16-rounded inputs.
  auto in = [&](const std::string& key) { return rounded(fm.tensors.at(key).data); };
  for (uint32_t i = 0; i < g.num_layers; ++i) {
    const std::string k = "layers." + std::to_string(i) + ".";
    const Layer& L = m.layers[i];
    CHECK(L.norm_in == in(k + "norm_in"));
    CHECK(L.q_norm == in(k + "q_norm"));
    CHECK(L.k_norm == in(k + "k_norm"));
    CHECK(L.post_norm == in(k + "post_norm"));
    CHECK(L.attn_gate == in(k + "attn_gate").at(0));
    CHECK(L.pre_hada == in(k + "pre_hada"));
    CHECK(L.d1 == in(k + "d1"));
    CHECK(L.d2 == in(k + "d2"));
    CHECK(L.d3 == in(k + "d3"));
    checkCq(L.q_proj, m.records[indexOf(layout, k + "q_proj")], bytes);
    checkCq(L.k_proj, m.records[indexOf(layout, k + "k_proj")], bytes);
    checkCq(L.v_proj, m.records[indexOf(layout, k + "v_proj")], bytes);
    checkCq(L.gate_proj, m.records[indexOf(layout, k + "gate_proj")], bytes);
    checkCq(L.out_proj, m.records[indexOf(layout, k + "out_proj")], bytes);
    CHECK(L.q_proj.bits == 2);
  }
  CHECK(m.mhc.a_pre == in("mhc.a_pre"));
  CHECK(m.mhc.a_post == in("mhc.a_post"));
  CHECK(m.mhc.a_res == in("mhc.a_res"));
  CHECK(m.mhc.b_pre == in("mhc.b_pre"));
  CHECK(m.mhc.b_post == in("mhc.b_post"));
  CHECK(m.mhc.b_res == in("mhc.b_res"));
  checkCq(m.mhc.phi_pre, m.records[indexOf(layout, "mhc.phi_pre")], bytes);
  checkCq(m.mhc.phi_res, m.records[indexOf(layout, "mhc.phi_res")], bytes);
  CHECK(m.mhc.phi_res.rows == 4 * 16);
  CHECK(m.mhc.phi_res.cols == 4 * 128);
  CHECK(m.mhc.phi_pre.bits == 4);
  REQUIRE(m.engram.size() == 2);
  CHECK(m.engram[0].layer == 1);
  CHECK(m.engram[1].layer == 3);
  CHECK(m.engram[1].taps == in("engram.1.taps"));
  checkCq(m.engram[1].tables, m.records[indexOf(layout, "engram.1.tables")], bytes);
  CHECK(m.engram[1].tables.rows == 2 * 256);
  CHECK(m.engram[1].tables.colsPadded == 128);  // sub_dim 64 padded to one group
  checkCq(m.engram[0].key_proj, m.records[indexOf(layout, "engram.0.key_proj")], bytes);
  CHECK(m.final_norm == in("final_norm"));
  checkCq(m.embedding, m.records[0], bytes);
  CHECK(m.embedding.bits == 4);
  for (uint32_t k = 0; k < 16; ++k) CHECK(m.embedding.levels[k] == cb[12 + k]);
  for (uint32_t k = 0; k < 4; ++k) CHECK(m.layers[0].q_proj.levels[k] == cb[k]);

  // Probe heads as written.
  REQUIRE(m.heads.size() == fm.headCodes.size());
  REQUIRE(!m.heads.empty());
  for (size_t h = 0; h < m.heads.size(); ++h) {
    const std::string k = "heads." + std::to_string(h) + ".";
    CHECK(static_cast<uint32_t>(m.heads[h].kind) == fm.headCodes[h]);
    CHECK(m.heads[h].probe == in(k + "probes"));
    CHECK(m.heads[h].proj == in(k + "proj"));
    CHECK(m.heads[h].bias == in(k + "bias"));
    CHECK(m.heads[h].probes == (fm.headCodes[h] == 1 ? 4u : 8u));
    CHECK(m.heads[h].out == (fm.headCodes[h] == 1 ? 128u : 1u));
  }

  // Tokenizer: the exact blob, as a view into the archive.
  REQUIRE(m.tokenizer.size() == tokBlob.size());
  CHECK(m.tokenizer.data() == bytes.data() + m.records.back().offset);
  CHECK(std::memcmp(m.tokenizer.data(), tokBlob.data(), tokBlob.size()) == 0);
}

TEST_CASE("round trip: the index accessor reads the LSB-first stream at every width", "[archive]") {
  for (const char* map : {"default=2", "default=3", "default=4", "default=1.58"}) {
    INFO(map);
    const std::vector<uint8_t> bytes = writeArchive(tinyModel(false), packOptions(map, false));
    const Model m = readArchive(viewOf(bytes));
    CHECK(m.heads.empty());
    CHECK(m.tokenizer.empty());
    const CqMatrix& q = m.layers[2].q_proj;
    for (uint32_t row = 0; row < q.rows; row += 7)
      for (uint32_t col = 0; col < q.colsPadded; ++col)
        if (q.index(row, col) != streamIndex(q, row, col)) FAIL("row " << row << " col " << col);
    if (q.bits == 5) {
      CHECK(q.indexBits == 2);
      CHECK(q.levels[0] == 0.0f);
      CHECK(q.levels[1] == 0.108187906f);
      CHECK(q.levels[2] == 0.0f);
      CHECK(q.levels[3] == -0.108187906f);
      for (uint32_t col = 0; col < q.colsPadded; ++col) CHECK(q.index(0, col) != 2);  // crumb 2 never written
    } else {
      CHECK(q.indexBits == q.bits);
    }
  }
}

TEST_CASE("round trip: index and norm on hand-packed rows", "[archive]") {
  // 2 bits: byte 0xE4 = 0b11100100 holds columns 0..3 = 0, 1, 2, 3.
  // 3 bits: 8 indices 0..7 form the 24-bit little-endian word 0xFAC688.
  // 4 bits: the even column is the low nibble.
  const uint8_t two[] = {0xE4, 0x1B};
  const uint8_t three[] = {0x88, 0xC6, 0xFA};
  const uint8_t four[] = {0x21, 0xF0};
  CqMatrix m;
  m.rows = 1;
  m.indexBits = 2;
  m.packed = two;
  for (uint32_t c = 0; c < 4; ++c) CHECK(m.index(0, c) == c);
  for (uint32_t c = 0; c < 4; ++c) CHECK(m.index(0, 4 + c) == 3 - c);
  m.indexBits = 3;
  m.packed = three;
  for (uint32_t c = 0; c < 8; ++c) CHECK(m.index(0, c) == c);
  m.indexBits = 4;
  m.packed = four;
  CHECK(m.index(0, 0) == 1);
  CHECK(m.index(0, 1) == 2);
  CHECK(m.index(0, 2) == 0);
  CHECK(m.index(0, 3) == 15);

  const uint8_t norms[] = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C};  // 1, -2, 2^-24, inf
  m.rows = 2;
  m.group = 128;
  m.colsPadded = 256;
  m.norms = norms;
  CHECK(m.norm(0, 0) == 1.0f);
  CHECK(m.norm(0, 1) == -2.0f);
  CHECK(m.norm(1, 0) == 5.96046448e-8f);
  CHECK(std::isinf(m.norm(1, 1)));
}

TEST_CASE("round trip: a view at a nonzero byte offset reads identically", "[archive]") {
  const std::vector<uint8_t>& bytes = tinyArchive(true, true);
  std::vector<uint8_t> bigger(bytes.size() + 10, 0xAB);
  std::memcpy(bigger.data() + 3, bytes.data(), bytes.size());
  const ByteView shifted(bigger.data() + 3, bytes.size());
  const Model a = readArchive(viewOf(bytes));
  const Model b = readArchive(shifted);
  REQUIRE(a.records.size() == b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    CHECK(a.records[i].offset == b.records[i].offset);  // offsets are relative to the view
    CHECK(a.records[i].length == b.records[i].length);
  }
  CHECK(b.embedding.packed == bigger.data() + 3 + a.records[0].offset);
  CHECK(b.embedding.norms - b.embedding.packed == a.embedding.norms - a.embedding.packed);
  for (uint32_t row = 0; row < a.embedding.rows; row += 31) {
    for (uint32_t col = 0; col < a.embedding.colsPadded; ++col)
      REQUIRE(a.embedding.index(row, col) == b.embedding.index(row, col));
    REQUIRE(a.embedding.norm(row, 0) == b.embedding.norm(row, 0));
  }
  CHECK(a.final_norm == b.final_norm);
  CHECK(a.mhc.b_res == b.mhc.b_res);
  CHECK(a.heads[0].proj == b.heads[0].proj);
  CHECK(b.tokenizer.data() == bigger.data() + 3 + a.records.back().offset);
  CHECK(std::memcmp(a.tokenizer.data(), b.tokenizer.data(), a.tokenizer.size()) == 0);
  // One byte short of the archive, even with readable memory behind it, is still an error.
  CHECK_THROWS_AS(readArchive(ByteView(bigger.data() + 3, bytes.size() - 1)), Error);
}

TEST_CASE("round trip: an FP32 control tensor is accepted and read exactly", "[archive]") {
  // Rewrite final_norm as FP32 in a new blob at the end: the format defines FP32 (v2 never writes it).
  std::vector<uint8_t> bytes = tinyArchive(false, false);
  const Geometry g = presetGeometry("tiny");
  const size_t index = coreRecordCount(g) - 1;
  const uint64_t at = align64(bytes.size());
  bytes.resize(at + 4 * 128, 0);
  for (uint32_t i = 0; i < 128; ++i) putF32(bytes, at + 4 * i, 0.1f * i - 3.3f);  // not fp16 values
  putU8(bytes, recordAt(index), 2);
  putU64(bytes, recordAt(index) + 20, at);
  putU64(bytes, recordAt(index) + 28, 4 * 128);
  const Model m = readArchive(viewOf(bytes));
  REQUIRE(m.final_norm.size() == 128);
  for (uint32_t i = 0; i < 128; ++i) CHECK(m.final_norm[i] == 0.1f * i - 3.3f);
  CHECK(m.records[index].dtype == DType::FP32);
  CHECK(m.dataEnd == bytes.size());
  putU64(bytes, recordAt(index) + 28, 2 * 128);  // an FP32 record needs 4 bytes per element
  CHECK_THAT(loadError(bytes), Catch::Contains("final norm (record 74, directory offset 3488): blob length 256"));
}

TEST_CASE("writer: missing or misshapen tensors are named", "[archive][writer]") {
  const PackOptions options = packOptions(kRealBitsMap, false);
  FloatModel fm = tinyModel(false);
  fm.tensors.erase("layers.3.k_proj");
  CHECK_THROWS_WITH(writeArchive(fm, options),
                    Catch::Contains("missing tensor layers.3.k_proj (layer 3 key projection)"));
  fm = tinyModel(false);
  fm.tensors["layers.2.q_norm"].shape = {32};
  CHECK_THROWS_WITH(writeArchive(fm, options),
                    Catch::Contains("tensor layers.2.q_norm (layer 2 query norm): shape [32] but the geometry needs [64]"));
  fm = tinyModel(false);
  fm.tensors["final_norm"].data.pop_back();
  CHECK_THROWS_WITH(writeArchive(fm, options), Catch::Contains("final_norm (final norm): 127 values"));
  fm = tinyModel(false);
  fm.tensors["mhc.b_pre"].data[3] = NAN;
  CHECK_THROWS_WITH(writeArchive(fm, options), Catch::Contains("mhc.b_pre (mHC pre-mix bias): value 3 is not finite"));
  fm = tinyModel(false);
  fm.tensors["layers.0.d1"].data[0] = 1e6f;
  CHECK_THROWS_WITH(writeArchive(fm, options), Catch::Contains("overflows fp16"));
  fm = tinyModel(false);
  fm.geo.head_dim = 32;
  CHECK_THROWS_WITH(writeArchive(fm, options), Catch::Contains("header field head_dim (offset 40)"));
  fm = tinyModel(false);
  fm.geo.vocab = 100;  // the 280-piece tokenizer does not fit
  CHECK_THROWS_WITH(writeArchive(fm, packOptions(kRealBitsMap, true)), Catch::Contains("280 pieces"));
}

TEST_CASE("writer: the same weights give the same bytes", "[archive][writer]") {
  const std::vector<uint8_t> again = writeArchive(tinyModel(true), packOptions(kRealBitsMap, true));
  CHECK(again == tinyArchive(true, true));
}
