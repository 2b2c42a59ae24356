// Reference::prefill and Reference::snapshot / restore: the same state and logits as stepping the
// tokens one at a time without interruption, bit for bit, with pinned sinks, a window that wraps
// after the restore, int8 and f32 KV, A8 on and off.
#include <vector>

#include <catch2/catch.hpp>

#include "archive.hpp"
#include "reference.hpp"
#include "writer.hpp"

using namespace needle;

namespace {

struct SnapshotModel {
  std::vector<uint8_t> bytes;
  Model model;
  SnapshotModel() {
    bytes = writeArchive(randomModel(presetGeometry("tiny"), 23, false), PackOptions{});
    model = readArchive(ByteView(bytes.data(), bytes.size()));
  }
};

const Model& tinyModel() {
  static const SnapshotModel built;
  return built.model;
}

std::vector<uint32_t> sequence(size_t n, uint32_t vocab, uint32_t seed) {
  std::vector<uint32_t> out(n);
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    out[i] = (state >> 8) % vocab;
    if (i % 5 == 4) out[i] = out[i - 2];  // n-grams recur, as in text
  }
  return out;
}

// The logits after every position of `ids`, stepping one at a time from a fresh session.
std::vector<std::vector<float>> stepped(const Model& m, ReferenceOptions o, const std::vector<uint32_t>& ids) {
  Reference ref(m, o);
  std::vector<std::vector<float>> out;
  for (uint32_t id : ids) out.push_back(ref.step(id, true));
  return out;
}

}  // namespace

TEST_CASE("prefill gives the state and logits of single steps, and refuses before running anything", "[reference]") {
  const Model& m = tinyModel();
  for (bool kvInt8 : {true, false}) {
    ReferenceOptions o;
    o.kvInt8 = kvInt8;
    o.a8 = true;
    o.sink = 9;
    const std::vector<uint32_t> ids = sequence(80, m.geo.vocab, 3);
    const auto want = stepped(m, o, ids);
    Reference ref(m, o);
    REQUIRE(ref.prefill(std::span<const uint32_t>(ids.data(), 50), false).empty());
    REQUIRE(ref.position() == 50);
    REQUIRE(ref.prefill(std::span<const uint32_t>(ids.data() + 50, 20), true) == want[69]);
    for (size_t i = 70; i < ids.size(); ++i) REQUIRE(ref.step(ids[i], true) == want[i]);

    Reference full(m, o);
    std::vector<uint32_t> bad = ids;
    bad[30] = m.geo.vocab;
    REQUIRE_THROWS_WITH(full.prefill(bad, true),
                        "reference prefill at position 30: token 512 is past the vocabulary (512 ids); nothing was run");
    REQUIRE(full.position() == 0);
    const std::vector<uint32_t> tooMany(m.geo.max_seq_len + 1, 1);
    REQUIRE_THROWS_WITH(full.prefill(tooMany, true),
                        "reference prefill at position 0: 257 tokens would pass max_seq_len (256); nothing was run");
    REQUIRE(full.position() == 0);
    REQUIRE(full.prefill(ids, true) == want.back());
  }
}

TEST_CASE("restoring a snapshot then stepping gives the uninterrupted session bit for bit", "[reference]") {
  const Model& m = tinyModel();
  for (bool kvInt8 : {true, false}) {
    for (bool a8 : {true, false}) {
      ReferenceOptions o;
      o.kvInt8 = kvInt8;
      o.a8 = a8;
      o.sink = 12;  // then a window of 32 that wraps several times after the snapshot
      const std::vector<uint32_t> prefix = sequence(o.sink, m.geo.vocab, 5);
      for (uint32_t seed : {7u, 8u}) {
        std::vector<uint32_t> ids = prefix;
        const std::vector<uint32_t> rest = sequence(100, m.geo.vocab, seed);
        ids.insert(ids.end(), rest.begin(), rest.end());
        const auto want = stepped(m, o, ids);

        // One session: the prefix, a snapshot, another continuation that overwrites everything, then
        // back to the snapshot and this continuation.
        Reference ref(m, o);
        ref.prefill(prefix, false);
        const Reference::Snapshot snap = ref.snapshot();
        REQUIRE(snap.position == o.sink);
        ref.prefill(sequence(150, m.geo.vocab, 99), true);
        ref.restore(snap);
        REQUIRE(ref.position() == o.sink);
        for (size_t i = o.sink; i < ids.size(); ++i) REQUIRE(ref.step(ids[i], true) == want[i]);

        // The snapshot also restores into a reset session and into a fresh one.
        ref.reset();
        ref.restore(snap);
        REQUIRE(ref.prefill(rest, true) == want.back());
        Reference fresh(m, o);
        fresh.restore(snap);
        REQUIRE(fresh.prefill(rest, true) == want.back());
      }
    }
  }
}

TEST_CASE("a snapshot restores only into a session of the same sink and KV mode", "[reference]") {
  const Model& m = tinyModel();
  ReferenceOptions o;
  o.sink = 4;
  Reference ref(m, o);
  ref.prefill(sequence(4, m.geo.vocab, 1), false);
  const Reference::Snapshot snap = ref.snapshot();
  ReferenceOptions other = o;
  other.sink = 5;
  Reference b(m, other);
  REQUIRE_THROWS_WITH(b.restore(snap), "reference restore: the snapshot was taken with sink 4 and int8 KV, "
                                       "this session has sink 5 and int8 KV");
  other = o;
  other.kvInt8 = false;
  Reference c(m, other);
  REQUIRE_THROWS_WITH(c.restore(snap), "reference restore: the snapshot was taken with sink 4 and int8 KV, "
                                       "this session has sink 4 and f32 KV");
}
