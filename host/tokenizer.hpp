// tokenizer.hpp: the Needle 2 SentencePiece BPE tokenizer, read from the archive's RAW blob.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bytes.hpp"

namespace needle {

enum class PieceType : uint8_t { Normal = 0, Unknown = 1, Control = 2, UserDefined = 3, Byte = 4 };

struct TokenizerPiece {
  std::string surface;  // SentencePiece piece string: space as U+2581, bytes as <0xHH>
  float score = 0;
  PieceType type = PieceType::Normal;
};

// Everything the 24-byte tokenizer header and the piece records hold.
struct TokenizerSpec {
  uint32_t pad_id = 0, eos_id = 1, bos_id = 2, unk_id = 3;
  bool add_dummy_prefix = true, byte_fallback = true;
  std::vector<TokenizerPiece> pieces;
};

class Tokenizer {
 public:
  // Parses and validates a blob; Error names the piece index and byte offset of any violation.
  static Tokenizer fromBlob(ByteView blob);
  explicit Tokenizer(TokenizerSpec spec);

  // Beginning of a sequence: spaces become U+2581, one U+2581 is prepended (add_dummy_prefix), chat
  // markers are matched longest first, greedy BPE, byte fallback. Error on invalid UTF-8.
  std::vector<uint32_t> encode(std::string_view utf8) const;
  // A fragment inside a sequence: the same without the dummy prefix.
  std::vector<uint32_t> encodeRaw(std::string_view utf8) const;
  // All piece bytes first, then one UTF-8 decode (invalid sequences become U+FFFD); one leading space
  // stripped when add_dummy_prefix is set. Error for an id past the vocabulary.
  std::string decode(const std::vector<uint32_t>& ids) const;
  // The raw bytes one piece contributes (U+2581 as a space, <0xHH> as its byte, control and unknown
  // as nothing).
  std::string pieceBytes(uint32_t id) const;

  const TokenizerSpec& spec() const { return spec_; }
  size_t size() const { return spec_.pieces.size(); }

 private:
  std::vector<uint32_t> encodeImpl(std::string_view utf8, bool dummyPrefix) const;
  TokenizerSpec spec_;
  std::unordered_map<std::string, uint32_t> mergeable_;  // NORMAL and USER_DEFINED surfaces
  std::unordered_map<std::string, uint32_t> reserved_;   // CONTROL, UNKNOWN and BYTE surfaces
  std::vector<std::string> markers_;                      // USER_DEFINED surfaces, longest first
  std::vector<uint32_t> markerIds_;
  int32_t byteIds_[256];
};

// The RAW blob for a spec (the exporter's byte format, design page 1.5).
std::vector<uint8_t> tokenizerBlob(const TokenizerSpec& spec);
// A spec from a SentencePiece .model file, classified as the exporter does (control, unknown, byte,
// one of the ten chat markers -> USER_DEFINED, otherwise NORMAL). Uses libsentencepiece.
TokenizerSpec tokenizerSpecFromSpm(const std::string& modelPath);

// The ten chat markers, ids 4..13 in the real tokenizer.
extern const char* const kChatMarkers[10];

}  // namespace needle
