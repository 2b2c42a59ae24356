// fixtures.hpp: small archives built in memory for the archive tests (no files on disk).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "archive.hpp"
#include "geometry.hpp"
#include "layout.hpp"
#include "tokenizer.hpp"
#include "writer.hpp"

namespace needle::test {

// A 280-piece tokenizer shaped like Needle's: pad/eos/bos control, unk, the ten chat markers, the 256
// byte pieces at 14..269, then a few merges.
inline TokenizerSpec smallTokenizerSpec() {
  TokenizerSpec spec;
  auto add = [&](std::string surface, PieceType type, float score) {
    spec.pieces.push_back(TokenizerPiece{std::move(surface), score, type});
  };
  add("<pad>", PieceType::Control, 0);
  add("</s>", PieceType::Control, 0);
  add("<s>", PieceType::Control, 0);
  add("<unk>", PieceType::Unknown, 0);
  for (const char* marker : kChatMarkers) add(marker, PieceType::UserDefined, 0);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, PieceType::Byte, 0);
  }
  const char* merges[] = {"\xE2\x96\x81", "\xE2\x96\x81" "t", "he", "\xE2\x96\x81" "the", "in", "er",
                          "an", "on", "\xE2\x96\x81" "a", "re"};
  float score = -1;
  for (const char* m : merges) add(m, PieceType::Normal, score--);
  return spec;
}

// Options for a pack: the bits map and whether a tokenizer closes the file.
inline PackOptions packOptions(const std::string& bitsMap, bool withTokenizer) {
  PackOptions options;
  options.bits = BitsMap::parse(bitsMap);
  if (withTokenizer) options.tokenizer = smallTokenizerSpec();
  return options;
}

// The tiny random model (seed 7) with or without probe heads; built once per variant.
inline const FloatModel& tinyModel(bool withHeads) {
  static const FloatModel plain = randomModel(presetGeometry("tiny"), 7, false);
  static const FloatModel heads = randomModel(presetGeometry("tiny"), 7, true);
  return withHeads ? heads : plain;
}

// The tiny archive: real bits map; variants with heads and/or tokenizer. Built once per variant.
inline const std::vector<uint8_t>& tinyArchive(bool withHeads, bool withTokenizer) {
  static std::vector<uint8_t> cache[2][2];
  std::vector<uint8_t>& slot = cache[withHeads][withTokenizer];
  if (slot.empty()) slot = writeArchive(tinyModel(withHeads), packOptions(kRealBitsMap, withTokenizer));
  return slot;
}

inline ByteView viewOf(const std::vector<uint8_t>& bytes) { return ByteView(bytes.data(), bytes.size()); }

inline void putU8(std::vector<uint8_t>& b, size_t at, uint8_t v) { b.at(at) = v; }
inline void putU16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b.at(at) = static_cast<uint8_t>(v);
  b.at(at + 1) = static_cast<uint8_t>(v >> 8);
}
inline void putU32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b.at(at + k) = static_cast<uint8_t>(v >> (8 * k));
}
inline void putU64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) b.at(at + k) = static_cast<uint8_t>(v >> (8 * k));
}
inline void putF32(std::vector<uint8_t>& b, size_t at, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  putU32(b, at, bits);
}
inline uint32_t getU32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b.at(at)} | (uint32_t{b.at(at + 1)} << 8) | (uint32_t{b.at(at + 2)} << 16) |
         (uint32_t{b.at(at + 3)} << 24);
}
inline uint64_t getU64(const std::vector<uint8_t>& b, size_t at) {
  return uint64_t{getU32(b, at)} | (uint64_t{getU32(b, at + 4)} << 32);
}

// Byte offset of directory record `index`.
inline size_t recordAt(size_t index) { return kDirectoryOffset + kRecordBytes * index; }

// The message of the Error that readArchive throws for `bytes` ("" if it loads).
inline std::string loadError(const std::vector<uint8_t>& bytes) {
  try {
    readArchive(viewOf(bytes));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Index of the record with `key` in a layout.
inline size_t indexOf(const std::vector<TensorSpec>& layout, const std::string& key) {
  for (size_t i = 0; i < layout.size(); ++i)
    if (layout[i].key == key) return i;
  throw Error("test: no record " + key);
}

}  // namespace needle::test
