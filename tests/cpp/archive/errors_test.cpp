// Hostile archives: wrong tags, broken header, directory and records, truncation at every point, random
// byte flips. Every one must end in a needle::Error (never a crash: the sanitizer build runs these).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "fixtures.hpp"
#include "fp16.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define NEEDLE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NEEDLE_ASAN 1
#endif
#endif
#ifdef NEEDLE_ASAN
#include <sanitizer/asan_interface.h>
#endif

using namespace needle;
using namespace needle::test;

namespace {

// The first `size` bytes of `bytes` in a fresh heap block of exactly that size, so that AddressSanitizer
// reports any read past the end of the view.
struct ExactCopy {
  std::unique_ptr<uint8_t[]> data;
  size_t size;
  ExactCopy(const std::vector<uint8_t>& bytes, size_t n) : data(new uint8_t[n ? n : 1]), size(n) {
    if (n) std::memcpy(data.get(), bytes.data(), n);
  }
  ByteView view() const { return ByteView(data.get(), size); }
};

// Loads `view`; true if it threw needle::Error, false if it loaded. Any other exception fails the test.
bool rejects(ByteView view) {
  try {
    readArchive(view);
  } catch (const Error&) {
    return true;
  }
  return false;
}

// Every CQ view of a loaded model lies inside the archive view.
void requireViewsInside(const Model& m, ByteView view) {
  auto inside = [&](const CqMatrix& q) {
    const uint8_t* begin = view.data();
    const uint8_t* end = begin + view.size();
    REQUIRE(q.packed >= begin);
    REQUIRE(q.norms >= q.packed);
    REQUIRE(static_cast<size_t>(end - q.norms) >= size_t{q.rows} * q.groups() * 2);
    REQUIRE(static_cast<size_t>(q.norms - q.packed) == size_t{q.rows} * q.rowBytes);
  };
  inside(m.embedding);
  for (const Layer& L : m.layers) {
    inside(L.q_proj);
    inside(L.k_proj);
    inside(L.v_proj);
    inside(L.gate_proj);
    inside(L.out_proj);
  }
  inside(m.mhc.phi_pre);
  inside(m.mhc.phi_post);
  inside(m.mhc.phi_res);
  for (const EngramSite& s : m.engram) {
    inside(s.tables);
    inside(s.key_proj);
    inside(s.value_proj);
  }
}

}  // namespace

TEST_CASE("tags: Needle 1, Needle 3 and strangers get their own messages", "[archive][errors]") {
  std::vector<uint8_t> bytes = tinyArchive(false, false);
  CHECK(loadError(bytes).empty());
  putU32(bytes, 0, kTagNeedle3);
  CHECK_THAT(loadError(bytes), Catch::StartsWith("this is a Needle 3 archive; needlework reads Needle 2"));
  putU32(bytes, 0, kTagNeedle1);
  CHECK_THAT(loadError(bytes), Catch::StartsWith("this is a Needle 1 archive"));
  CHECK_THAT(loadError(bytes), Catch::Contains("needlework reads Needle 2"));
  putU32(bytes, 0, 0x46554747);  // "GGUF"
  CHECK_THAT(loadError(bytes), Catch::Contains("not a Needle archive: tag 0x46554747 at offset 0"));

  // A Needle 3 tag on a file too short for our header still gets the Needle 3 message.
  std::vector<uint8_t> shortFile = {0x84, 0x2A, 0xE1, 0x05, 0, 0};
  CHECK_THAT(loadError(shortFile), Catch::StartsWith("this is a Needle 3 archive"));
  CHECK_THAT(loadError({}), Catch::Contains("archive tag: bytes [0, 4) lie outside the archive (size 0)"));
  CHECK_THAT(loadError({0x83, 0x2A}), Catch::Contains("archive tag"));
  CHECK_THAT(loadError({0x83, 0x2A, 0xE1, 0x05, 1, 2, 3}), Catch::Contains("header: bytes [0, 120)"));
}

TEST_CASE("header: geometry and codebook errors name the field and offset", "[archive][errors]") {
  const std::vector<uint8_t>& good = tinyArchive(false, false);
  std::vector<uint8_t> bytes = good;
  putU32(bytes, 40, 48);
  CHECK_THAT(loadError(bytes), Catch::Contains("header field head_dim (offset 40): 48 x 2 heads != d_model 128"));
  bytes = good;
  putU32(bytes, 8, 29);
  CHECK_THAT(loadError(bytes), Catch::Contains("header field codebook_len (offset 8)"));
  bytes = good;
  putF32(bytes, 116, NAN);
  CHECK_THAT(loadError(bytes), Catch::Contains("header field rope_theta (offset 116)"));
  bytes = good;
  putU32(bytes, 104, 4);  // site 1 at layer 4 of a 4-layer model
  CHECK_THAT(loadError(bytes), Catch::Contains("header field engram_sites[1] (offset 104)"));
  bytes = good;
  putF32(bytes, 120 + 4 * 5, INFINITY);
  CHECK_THAT(loadError(bytes), Catch::Contains("codebook entry cb3[1] (offset 140) is not finite"));
}

TEST_CASE("directory: counts and record fields", "[archive][errors]") {
  const std::vector<uint8_t>& good = tinyArchive(false, false);
  const Geometry g = presetGeometry("tiny");
  const uint32_t core = coreRecordCount(g);
  std::vector<uint8_t> bytes;

  bytes = good;
  putU32(bytes, 4, core - 1);
  CHECK_THAT(loadError(bytes), Catch::Contains("header field num_tensors (offset 4): 74 records but the geometry needs at least 75"));
  bytes = good;
  putU32(bytes, 4, 0xFFFFFFFF);  // never sized from this: the directory would pass the end
  CHECK_THAT(loadError(bytes), Catch::Contains("directory of 4294967295 records"));
  bytes = good;
  putU32(bytes, 4, core + 2);  // two extra records: neither a tokenizer nor a set of heads
  CHECK_THAT(loadError(bytes), Catch::Contains("probe heads take 1 manifest + 3 records per head"));

  const size_t k3 = 1 + 14 * 3 + 2;  // layer 3 key projection
  const std::string where = "layer 3 key projection (record 45, directory offset 2212)";
  bytes = good;
  putU32(bytes, recordAt(k3) + 4, 128);  // [64, 128] -> [128, 128]
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": shape [128, 128] but the geometry needs [64, 128]"));
  bytes = good;
  putU8(bytes, recordAt(k3) + 1, 3);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": shape [64, 128, 0] but the geometry needs [64, 128]"));
  bytes = good;
  putU32(bytes, recordAt(k3) + 12, 1);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": unused shape entry 2 is 1, expected 0"));
  bytes = good;
  putU8(bytes, recordAt(k3) + 1, 5);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": ndim 5 is more than 4"));
  bytes = good;
  putU8(bytes, recordAt(k3), 9);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": dtype 9 is not 1 FP16, 2 FP32, 3 CQ or 4 RAW"));
  bytes = good;
  putU8(bytes, recordAt(k3), 1);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": dtype FP16 but the layout needs CQ"));
  bytes = good;
  putU16(bytes, recordAt(k3) + 2, 7);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": the u16 at record byte 2 is 7, expected 0"));
  bytes = good;
  putU32(bytes, recordAt(k3) + 36, 100);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": CQ group 100 is not a power of two"));
  bytes = good;
  putU32(bytes, recordAt(k3) + 36, 16);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": CQ group 16"));
  bytes = good;
  putU32(bytes, recordAt(k3) + 40, 6);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": CQ bits 6 is not 2, 3, 4 or 5"));
  bytes = good;
  putU32(bytes, recordAt(k3) + 40, 4);  // 4 bits needs a longer blob than the 2-bit one written
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": blob length 2176 but packed rows + fp16 norms of a [64, 128] matrix at 4 bits, group 128 need 4224"));
  bytes = good;
  putU64(bytes, recordAt(k3) + 28, getU64(bytes, recordAt(k3) + 28) + 1);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": blob length 2177 but packed rows + fp16 norms of a [64, 128] matrix at 2 bits, group 128 need 2176"));
  bytes = good;
  putU64(bytes, recordAt(k3) + 20, bytes.size() - 100);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": blob: bytes ["));
  CHECK_THAT(loadError(bytes), Catch::Contains("lie outside the archive (size " + std::to_string(bytes.size()) + ")"));
  bytes = good;
  putU64(bytes, recordAt(k3) + 20, ~uint64_t{0} - 5);  // offset + length wraps around 64 bits
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": blob"));
  bytes = good;
  putU64(bytes, recordAt(k3) + 20, 64);
  CHECK_THAT(loadError(bytes), Catch::Contains(where + ": blob offset 64 lies inside the header or directory"));

  const size_t normIn = 1 + 14 * 2;  // layer 2 input norm (FP16)
  bytes = good;
  putU32(bytes, recordAt(normIn) + 36, 128);
  CHECK_THAT(loadError(bytes), Catch::Contains("layer 2 input norm (record 29, directory offset 1508): group 128 and bits 0 must both be 0 for a FP16 record"));
  bytes = good;
  putU8(bytes, recordAt(normIn), 4);
  CHECK_THAT(loadError(bytes), Catch::Contains("layer 2 input norm (record 29, directory offset 1508): dtype RAW but the layout needs FP16"));
  bytes = good;
  putU8(bytes, recordAt(core - 1), 4);  // final norm marked RAW: a "tokenizer" with no room for it
  CHECK_THAT(loadError(bytes), Catch::Contains("final norm (record 74, directory offset 3488): dtype RAW but the layout needs FP16"));
}

TEST_CASE("heads and tokenizer records", "[archive][errors]") {
  const std::vector<uint8_t>& good = tinyArchive(true, true);
  const Model m = readArchive(viewOf(good));
  const uint32_t core = coreRecordCount(m.geo);
  REQUIRE(m.layout[core].key == "heads.manifest");
  std::vector<uint8_t> bytes = good;
  putU16(bytes, m.records[core].offset, floatToHalf(3.0f));
  CHECK_THAT(loadError(bytes), Catch::Contains("probe head manifest (record 75, directory offset 3532): entry 0 is 3.0"));
  CHECK_THAT(loadError(bytes), Catch::Contains("expected 1 (contrastive) or 2 (confidence)"));
  bytes = good;
  putU16(bytes, m.records[core].offset, floatToHalf(1.5f));
  CHECK_THAT(loadError(bytes), Catch::Contains("entry 0 is 1.5"));

  // Swapping the codes swaps the expected shapes: the contrastive head's probes are not [8, 128].
  if (m.heads.size() == 2 && m.heads[0].kind != m.heads[1].kind) {
    bytes = good;
    putU16(bytes, m.records[core].offset, floatToHalf(static_cast<float>(m.heads[1].kind)));
    putU16(bytes, m.records[core].offset + 2, floatToHalf(static_cast<float>(m.heads[0].kind)));
    CHECK_THAT(loadError(bytes), Catch::Contains("probe head 0 probes (record 76, directory offset 3576): shape"));
  }

  // A tokenizer blob that does not parse is a load error that names the record.
  const size_t tok = m.records.size() - 1;
  bytes = good;
  putU64(bytes, recordAt(tok) + 28, 10);
  CHECK_THAT(loadError(bytes), Catch::StartsWith("tokenizer (record " + std::to_string(tok) + ", directory offset"));
  // A header vocabulary that disagrees with the embedding record.
  bytes = good;
  putU32(bytes, 20, 100);
  CHECK_THAT(loadError(bytes), Catch::Contains("embedding (record 0, directory offset 232): shape [512, 128] but the geometry needs [100, 128]"));
}

TEST_CASE("tokenizer with more pieces than the vocabulary", "[archive][errors]") {
  // Pack a vocab-280 model with the 280-piece tokenizer, then shrink the header vocab and the
  // embedding record to 279 rows: everything else stays valid, so only the piece count can object.
  Geometry g = presetGeometry("tiny");
  g.vocab = 280;
  std::vector<uint8_t> bytes = writeArchive(randomModel(g, 3, false), packOptions(kRealBitsMap, true));
  REQUIRE(loadError(bytes).empty());
  putU32(bytes, 20, 279);
  putU32(bytes, recordAt(0) + 4, 279);
  putU64(bytes, recordAt(0) + 28, cqBlobBytes(279, 128, 128, 4, "embedding"));
  CHECK_THAT(loadError(bytes), Catch::Contains("tokenizer (record 75, directory offset 3532): 280 pieces but header field vocab (offset 20) is 279"));
}

TEST_CASE("truncation: every cut of a tiny archive is an Error", "[archive][errors]") {
  const std::vector<uint8_t>& bytes = tinyArchive(false, false);
  const Model full = readArchive(viewOf(bytes));
  INFO("archive of " << bytes.size() << " bytes");
  CHECK(bytes.size() > 100000);
  CHECK(bytes.size() < 250000);
  const auto start = std::chrono::steady_clock::now();

  // The cuts: every length through the header, codebooks, directory and the start of the first blob;
  // every blob's first and last bytes (+-2); and a stride through the blobs in between. Inside one blob
  // every cut fails at the same check of the same record, so the stride loses no path; it keeps the
  // test at about a second (a full parse with its layout costs ~20 us).
#ifdef NEEDLE_ASAN
  // The sanitizer build (Debug) parses ~30 times slower: every cut through the header, codebooks and
  // first records, then every 5th through the directory and every 61st through the blobs.
  const size_t everyUpTo = recordAt(4), directoryStride = 5, stride = 61;
#else
  const size_t everyUpTo = SIZE_MAX, directoryStride = 1, stride = 3;
#endif
  const size_t firstBlob = full.records[0].offset;
  std::vector<size_t> cuts;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const bool inDirectory = n <= firstBlob + 64;
    if (inDirectory ? (n <= everyUpTo || n % directoryStride == 0) : n % stride == 0) cuts.push_back(n);
  }
  for (const Record& r : full.records)
    for (int64_t d = -2; d <= 2; ++d) {
      const int64_t a = static_cast<int64_t>(r.offset) + d, b = static_cast<int64_t>(r.offset + r.length) + d;
      if (a >= 0 && a < static_cast<int64_t>(bytes.size())) cuts.push_back(static_cast<size_t>(a));
      if (b >= 0 && b < static_cast<int64_t>(bytes.size())) cuts.push_back(static_cast<size_t>(b));
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  // Each cut as a view of the first n bytes of one buffer. Under AddressSanitizer everything past the
  // view is poisoned, so a read beyond it is reported as an error even though the memory exists.
  std::vector<uint8_t> buffer(bytes);
#ifdef NEEDLE_ASAN
  ASAN_POISON_MEMORY_REGION(buffer.data(), buffer.size());
#endif
  size_t failures = 0;
  for (size_t n : cuts) {
#ifdef NEEDLE_ASAN
    ASAN_UNPOISON_MEMORY_REGION(buffer.data(), n);  // ascending cuts: [0, n) readable, the rest not
#endif
    if (!rejects(ByteView(buffer.data(), n)) && ++failures < 5) FAIL_CHECK("a cut at " << n << " loaded");
  }
#ifdef NEEDLE_ASAN
  ASAN_UNPOISON_MEMORY_REGION(buffer.data(), buffer.size());
#endif
  CHECK(failures == 0);

  // The same on fresh exact-size heap copies (a read past the end is a heap overflow for ASan): every
  // blob boundary, every 7th cut through the directory and a wide stride through the blobs.
  size_t copies = 0;
  for (size_t n : cuts) {
    const bool boundary = std::any_of(full.records.begin(), full.records.end(), [&](const Record& r) {
      return n == r.offset || n == r.offset + 1 || n + 1 == r.offset + r.length;
    });
    if (!boundary && n % (n <= firstBlob ? 7 : stride * 61) != 0) continue;
    ExactCopy copy(bytes, n);
    if (!rejects(copy.view())) FAIL_CHECK("a copy cut at " << n << " loaded");
    ++copies;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("truncation: " << cuts.size() << " cuts + " << copies << " exact copies of a " << bytes.size()
                      << "-byte archive in " << seconds << " s");
  ExactCopy whole(bytes, bytes.size());
  CHECK_FALSE(rejects(whole.view()));
}

TEST_CASE("byte flips: load or throw Error, never crash", "[archive][errors]") {
  for (bool rich : {false, true}) {
    const std::vector<uint8_t>& good = tinyArchive(rich, rich);
    const Model m = readArchive(viewOf(good));
    const size_t dirEnd = recordAt(m.records.size());
    std::mt19937_64 rng(rich ? 2024 : 42);
    size_t loaded = 0, rejected = 0;
    ExactCopy copy(good, good.size());
#ifdef NEEDLE_ASAN
    const int trials = 400;  // the sanitizer build (Debug) parses ~30 times slower
#else
    const int trials = 1500;
#endif
    for (int trial = 0; trial < trials; ++trial) {
      std::memcpy(copy.data.get(), good.data(), good.size());
      // Half of the flips hit the header and directory, where they matter most.
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        const size_t at = (trial % 2 == 0) ? rng() % dirEnd : rng() % good.size();
        copy.data[at] ^= static_cast<uint8_t>(1 + rng() % 255);
      }
      try {
        const Model loadedModel = readArchive(copy.view());
        requireViewsInside(loadedModel, copy.view());
        ++loaded;
      } catch (const Error&) {
        ++rejected;
      }
    }
    INFO((rich ? "with heads and tokenizer" : "plain") << ": " << loaded << " loaded, " << rejected << " rejected");
    CHECK(rejected > trials * 7 / 20);  // nearly every flip in the header or directory is caught
    CHECK(loaded > trials * 7 / 20);    // flips inside weight blobs load
  }
}
