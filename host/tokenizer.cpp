// tokenizer.cpp: the Needle 2 tokenizer: the archive's RAW blob (reader and writer), SentencePiece
// BPE encoding that reproduces libsentencepiece 0.1.97 id for id, and byte-first decoding.
//
// docs/tokenizer.md describes the blob, both algorithms, and where this code, real SentencePiece and
// the design page's RefTokenizer agree and differ.
#include "tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <queue>

namespace needle {

const char* const kChatMarkers[10] = {"<|im_start|>", "<|im_end|>",  "<think>",     "</think>",
                                      "<tools>",      "</tools>",    "<tool_call>", "</tool_call>",
                                      "<tool_result>", "</tool_result>"};

namespace {

constexpr uint64_t kHeaderSize = 24;        // n_pieces, pad, eos, bos, unk, two flags, u16 zero
constexpr uint64_t kRecordHeaderSize = 7;   // f32 score, u8 type, u16 surface length
constexpr uint32_t kMaxPieces = 1u << 20;   // far above any real vocabulary; bounds allocation
constexpr uint64_t kMaxInputBytes = 1u << 28;  // symbol indices are int32; 256 MiB is plenty
constexpr std::string_view kMetaSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

// One step of UTF-8 decoding at text[at]: how many bytes a well-formed character takes, or, when the
// bytes are ill-formed, the length of the "maximal subpart" that the WHATWG decoder (and so the
// browser's TextDecoder) replaces with one U+FFFD. Overlong forms, surrogates and code points past
// U+10FFFF are ill-formed, exactly as in SentencePiece's own UTF-8 check.
struct Utf8Step {
  size_t length;
  bool valid;
};

Utf8Step utf8Step(std::string_view text, size_t at) {
  const uint8_t lead = static_cast<uint8_t>(text[at]);
  if (lead < 0x80) return {1, true};
  size_t trailing;
  uint8_t low = 0x80, high = 0xBF;  // the allowed range of the first trailing byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    trailing = 1;
  } else if (lead == 0xE0) {
    trailing = 2, low = 0xA0;   // no overlong 3-byte forms
  } else if (lead == 0xED) {
    trailing = 2, high = 0x9F;  // no surrogates
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    trailing = 2;
  } else if (lead == 0xF0) {
    trailing = 3, low = 0x90;   // no overlong 4-byte forms
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    trailing = 3;
  } else if (lead == 0xF4) {
    trailing = 3, high = 0x8F;  // nothing past U+10FFFF
  } else {
    return {1, false};          // a stray continuation byte, C0, C1 or F5..FF
  }
  for (size_t k = 1; k <= trailing; ++k) {
    if (at + k >= text.size()) return {k, false};
    const uint8_t c = static_cast<uint8_t>(text[at + k]);
    if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return {k, false};
  }
  return {trailing + 1, true};
}

// Byte offset of the first ill-formed UTF-8 sequence in text, or npos when it is all well formed.
size_t firstInvalidUtf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    Utf8Step step = utf8Step(text, at);
    if (!step.valid) return at;
    at += step.length;
  }
  return std::string_view::npos;
}

// The byte a BYTE piece stands for, or -1 unless the surface is exactly <0xHH> with two uppercase
// hex digits (SentencePiece writes them with "<0x%02X>" and looks them up by that exact spelling).
int byteOfPiece(std::string_view surface) {
  auto hexValue = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (surface.size() != 6 || surface.substr(0, 3) != "<0x" || surface[5] != '>') return -1;
  int high = hexValue(surface[3]), low = hexValue(surface[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

// "0xHH" with uppercase digits.
std::string hexByte(uint8_t b) {
  static const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// A surface for an error message: printable ASCII as is, every other byte as \xHH, at most 40 bytes.
std::string printable(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    uint8_t b = static_cast<uint8_t>(s[i]);
    if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') out += static_cast<char>(b);
    else out += "\\x" + hexByte(b).substr(2);
  }
  return out + (s.size() > 40 ? "...\"" : "\"");
}

// The type's name as errors print it.
const char* typeName(PieceType type) {
  switch (type) {
    case PieceType::Normal: return "normal";
    case PieceType::Unknown: return "unknown";
    case PieceType::Control: return "control";
    case PieceType::UserDefined: return "user-defined";
    case PieceType::Byte: return "byte";
  }
  return "invalid";
}

// Every rule a tokenizer must satisfy, for specs read from a blob (offsets holds each piece record's
// blob offset, for the messages) and for specs built in memory (offsets is null). The rules are
// SentencePiece's own load-time checks plus what Needle's header promises.
void checkSpec(const TokenizerSpec& spec, const std::vector<uint64_t>* offsets) {
  const size_t count = spec.pieces.size();
  if (count < 1 || count > kMaxPieces)
    throw Error("tokenizer: " + std::to_string(count) + " pieces; a tokenizer has between 1 and " +
                std::to_string(kMaxPieces));
  auto where = [&](size_t i) {
    std::string s = "tokenizer piece " + std::to_string(i);
    if (offsets) s += " (blob offset " + std::to_string((*offsets)[i]) + ")";
    return s;
  };

  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(count);
  bool byteSeen[256] = {};
  size_t unknownCount = 0;
  for (size_t i = 0; i < count; ++i) {
    const TokenizerPiece& piece = spec.pieces[i];
    const auto type = static_cast<uint8_t>(piece.type);
    if (type > 4)
      throw Error(where(i) + ": type " + std::to_string(type) + " is not one of 0 (normal), " +
                  "1 (unknown), 2 (control), 3 (user-defined), 4 (byte)");
    if (piece.surface.empty()) throw Error(where(i) + ": the surface is empty");
    if (piece.surface.size() > 0xFFFF)
      throw Error(where(i) + ": a surface of " + std::to_string(piece.surface.size()) +
                  " bytes does not fit the u16 length field");
    if (size_t bad = firstInvalidUtf8(piece.surface); bad != std::string_view::npos)
      throw Error(where(i) + ": the surface " + printable(piece.surface) +
                  " is not valid UTF-8 (at byte " + std::to_string(bad) + " of the surface)");
    if (!std::isfinite(piece.score))
      throw Error(where(i) + ": the score is not a finite number");
    if (auto [it, fresh] = seen.emplace(piece.surface, i); !fresh)
      throw Error(where(i) + ": the surface " + printable(piece.surface) + " is already piece " +
                  std::to_string(it->second));
    if (piece.type == PieceType::Byte) {
      int b = byteOfPiece(piece.surface);
      if (b < 0)
        throw Error(where(i) + ": a byte piece must be spelled <0xHH> (uppercase hex), not " +
                    printable(piece.surface));
      byteSeen[b] = true;  // distinct surfaces with one spelling each: distinct bytes
    }
    if (piece.type == PieceType::Unknown) ++unknownCount;
  }

  struct Special {
    const char* name;
    uint32_t id;
    PieceType type;
  };
  const Special specials[] = {{"pad_id", spec.pad_id, PieceType::Control},
                              {"eos_id", spec.eos_id, PieceType::Control},
                              {"bos_id", spec.bos_id, PieceType::Control},
                              {"unk_id", spec.unk_id, PieceType::Unknown}};
  for (const Special& s : specials) {
    if (s.id >= count)
      throw Error(std::string("tokenizer header: ") + s.name + " " + std::to_string(s.id) +
                  " is past the vocabulary (" + std::to_string(count) + " pieces)");
    if (spec.pieces[s.id].type != s.type)
      throw Error(std::string("tokenizer header: ") + s.name + " " + std::to_string(s.id) +
                  " names a piece of type " + typeName(spec.pieces[s.id].type) +
                  "; it must be of type " + typeName(s.type));
  }
  if (unknownCount != 1)
    throw Error("tokenizer: " + std::to_string(unknownCount) +
                " pieces have type unknown; there must be exactly one");
  if (spec.byte_fallback) {
    for (int b = 0; b < 256; ++b)
      if (!byteSeen[b])
        throw Error("tokenizer: byte_fallback is set but byte " + hexByte(static_cast<uint8_t>(b)) +
                    " has no <" + hexByte(static_cast<uint8_t>(b)) + "> piece");
  }
}

// Little-endian appends for the writer.
void putU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void putU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The blob.

// Reads the header and every record through `blob` (never past it), then applies checkSpec with each
// record's offset, so that every message names the piece and where its record starts.
Tokenizer Tokenizer::fromBlob(ByteView blob) {
  blob.require(0, kHeaderSize, "tokenizer header");
  const uint32_t count = blob.u32(0, "tokenizer header n_pieces");
  TokenizerSpec spec;
  spec.pad_id = blob.u32(4, "tokenizer header pad_id");
  spec.eos_id = blob.u32(8, "tokenizer header eos_id");
  spec.bos_id = blob.u32(12, "tokenizer header bos_id");
  spec.unk_id = blob.u32(16, "tokenizer header unk_id");
  const uint8_t dummyPrefix = blob.u8(20, "tokenizer header add_dummy_prefix");
  const uint8_t byteFallback = blob.u8(21, "tokenizer header byte_fallback");
  const uint16_t reserved = blob.u16(22, "tokenizer header reserved field");
  if (dummyPrefix > 1)
    throw Error("tokenizer header (blob offset 20): add_dummy_prefix is " +
                std::to_string(dummyPrefix) + "; it must be 0 or 1");
  if (byteFallback > 1)
    throw Error("tokenizer header (blob offset 21): byte_fallback is " +
                std::to_string(byteFallback) + "; it must be 0 or 1");
  if (reserved != 0)
    throw Error("tokenizer header (blob offset 22): the reserved u16 is " +
                std::to_string(reserved) + "; it must be 0");
  spec.add_dummy_prefix = dummyPrefix == 1;
  spec.byte_fallback = byteFallback == 1;

  if (count < 1 || count > kMaxPieces)
    throw Error("tokenizer header (blob offset 0): n_pieces is " + std::to_string(count) +
                "; a tokenizer has between 1 and " + std::to_string(kMaxPieces));
  // Each record takes at least 8 bytes (7 of fields and a surface of at least one byte), so a count
  // the blob cannot hold is refused before anything is allocated from it.
  if (count > (blob.size() - kHeaderSize) / (kRecordHeaderSize + 1))
    throw Error("tokenizer header (blob offset 0): n_pieces " + std::to_string(count) +
                " needs at least " + std::to_string(kHeaderSize + 8 * uint64_t{count}) +
                " bytes, but the blob has " + std::to_string(blob.size()));

  spec.pieces.resize(count);
  std::vector<uint64_t> offsets(count);
  uint64_t at = kHeaderSize;
  for (uint32_t i = 0; i < count; ++i) {
    // One label for the record's three fields, one for its surface (a range error names the bytes).
    const std::string what = "tokenizer piece " + std::to_string(i);
    offsets[i] = at;
    TokenizerPiece& piece = spec.pieces[i];
    blob.require(at, kRecordHeaderSize, what);
    piece.score = blob.f32(at, what);
    const uint8_t type = blob.u8(at + 4, what);
    if (type > 4)
      throw Error(what + " (blob offset " + std::to_string(at) + "): type " + std::to_string(type) +
                  " at byte " + std::to_string(at + 4) +
                  " is not one of 0 (normal), 1 (unknown), 2 (control), 3 (user-defined), 4 (byte)");
    piece.type = static_cast<PieceType>(type);
    const uint16_t length = blob.u16(at + 5, what);
    ByteView surface = blob.slice(at + kRecordHeaderSize, length, what + " surface");
    piece.surface.assign(reinterpret_cast<const char*>(surface.data()), surface.size());
    at += kRecordHeaderSize + length;
  }
  // The directory records the blob's exact length, so bytes after the last piece mean the length
  // or the count is wrong: refuse rather than guess.
  if (at != blob.size())
    throw Error("tokenizer blob: " + std::to_string(blob.size() - at) +
                " bytes follow the last piece, which ends at blob offset " + std::to_string(at));
  checkSpec(spec, &offsets);
  return Tokenizer(std::move(spec));
}

// The exporter's byte format for a spec that passes checkSpec.
std::vector<uint8_t> tokenizerBlob(const TokenizerSpec& spec) {
  checkSpec(spec, nullptr);  // never write a blob that fromBlob would refuse
  std::vector<uint8_t> out;
  putU32(out, static_cast<uint32_t>(spec.pieces.size()));
  putU32(out, spec.pad_id);
  putU32(out, spec.eos_id);
  putU32(out, spec.bos_id);
  putU32(out, spec.unk_id);
  out.push_back(spec.add_dummy_prefix ? 1 : 0);
  out.push_back(spec.byte_fallback ? 1 : 0);
  putU16(out, 0);
  for (const TokenizerPiece& piece : spec.pieces) {
    uint32_t bits;
    std::memcpy(&bits, &piece.score, 4);
    putU32(out, bits);
    out.push_back(static_cast<uint8_t>(piece.type));
    putU16(out, static_cast<uint16_t>(piece.surface.size()));
    out.insert(out.end(), piece.surface.begin(), piece.surface.end());
  }
  return out;
}

// Validates the spec and builds the lookup tables: mergeable and reserved surfaces, byte ids, and the
// user-defined pieces longest first.
Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {
  checkSpec(spec_, nullptr);
  std::fill(std::begin(byteIds_), std::end(byteIds_), -1);
  for (uint32_t id = 0; id < spec_.pieces.size(); ++id) {
    const TokenizerPiece& piece = spec_.pieces[id];
    switch (piece.type) {
      case PieceType::UserDefined:
        markers_.push_back(piece.surface);
        markerIds_.push_back(id);
        [[fallthrough]];
      case PieceType::Normal:
        mergeable_.emplace(piece.surface, id);
        break;
      case PieceType::Byte:
        byteIds_[byteOfPiece(piece.surface)] = static_cast<int32_t>(id);
        [[fallthrough]];
      case PieceType::Control:
      case PieceType::Unknown:
        reserved_.emplace(piece.surface, id);
        break;
    }
  }
  // Longest first, so that at each position the first marker that matches is the longest one.
  std::vector<size_t> order(markers_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return markers_[a].size() > markers_[b].size(); });
  std::vector<std::string> markers;
  std::vector<uint32_t> ids;
  for (size_t i : order) {
    markers.push_back(markers_[i]);
    ids.push_back(markerIds_[i]);
  }
  markers_ = std::move(markers);
  markerIds_ = std::move(ids);
}

// ---------------------------------------------------------------------------------------------
// Encoding.

// The start of a sequence: with the dummy prefix when the tokenizer has one.
std::vector<uint32_t> Tokenizer::encode(std::string_view utf8) const {
  return encodeImpl(utf8, spec_.add_dummy_prefix);
}

// A fragment inside a sequence: never a dummy prefix.
std::vector<uint32_t> Tokenizer::encodeRaw(std::string_view utf8) const { return encodeImpl(utf8, false); }

// SentencePiece's encoder for a BPE model with identity normalisation, step by step:
//  1. Normalise: every ' ' becomes U+2581, and one U+2581 goes in front (the dummy prefix). Empty
//     input stays empty, with no prefix.
//  2. Split the normalised text into symbols: at each position the longest USER_DEFINED piece that
//     matches becomes one frozen symbol (it never merges); otherwise one UTF-8 character.
//  3. Merge: among all adjacent pairs of unfrozen symbols whose concatenation is a NORMAL or
//     USER_DEFINED piece, merge the one with the highest score, the leftmost on ties; repeat until no
//     pair qualifies. A priority queue of candidate pairs keeps this O(n log n); a candidate whose
//     symbols have changed since it was queued is recognised by its length and skipped.
//  4. Emit: a symbol that is a piece gives that piece's id (an UNKNOWN surface counts as no piece);
//     any other symbol gives its UTF-8 bytes as byte pieces, or the unk id without byte fallback.
std::vector<uint32_t> Tokenizer::encodeImpl(std::string_view utf8, bool dummyPrefix) const {
  if (utf8.empty()) return {};
  if (utf8.size() > kMaxInputBytes)
    throw Error("tokenizer input: " + std::to_string(utf8.size()) + " bytes is too long (at most " +
                std::to_string(kMaxInputBytes) + ")");
  if (size_t bad = firstInvalidUtf8(utf8); bad != std::string_view::npos)
    throw Error("tokenizer input: invalid UTF-8 at byte " + std::to_string(bad) + " (" +
                hexByte(static_cast<uint8_t>(utf8[bad])) + ")");

  // 1. Normalise.
  std::string text;
  text.reserve(utf8.size() + 3);
  if (dummyPrefix) text += kMetaSpace;
  for (char c : utf8) {
    if (c == ' ') text += kMetaSpace;
    else text += c;
  }

  // 2. Split into symbols, a doubly linked list in text order.
  struct Symbol {
    uint32_t begin, size;
    int32_t prev, next;
    bool frozen;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  bool markerStart[256] = {};  // first bytes of markers: most positions need no comparison at all
  for (const std::string& marker : markers_) markerStart[static_cast<uint8_t>(marker[0])] = true;
  for (size_t at = 0; at < text.size();) {
    size_t length = 0;
    bool frozen = false;
    for (const std::string& marker : markers_) {
      if (!markerStart[static_cast<uint8_t>(text[at])]) break;
      if (text.compare(at, marker.size(), marker) == 0) {
        length = marker.size();
        frozen = true;
        break;
      }
    }
    if (!frozen) length = utf8Step(text, at).length;  // text is well formed: one whole character
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(length), index - 1,
                       at + length < text.size() ? index + 1 : -1, frozen});
    at += length;
  }

  // 3. Merge.
  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t size;  // bytes of the merged piece: a stale candidate no longer adds up to this
  };
  // "Lower priority": a lower score, or the same score further right (SentencePiece's comparator).
  auto lower = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower)> agenda(lower);
  std::string key;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].frozen || symbols[right].frozen) return;
    key.assign(text, symbols[left].begin, symbols[left].size + symbols[right].size);
    auto it = mergeable_.find(key);
    if (it == mergeable_.end()) return;
    agenda.push({spec_.pieces[it->second].score, left, right, static_cast<uint32_t>(key.size())});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) consider(i - 1, i);
  while (!agenda.empty()) {
    const Candidate top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != top.size) continue;
    left.size += right.size;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.size = 0;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }

  // 4. Emit.
  std::vector<uint32_t> ids;
  ids.reserve(symbols.size());
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    key.assign(text, symbols[i].begin, symbols[i].size);
    if (auto it = mergeable_.find(key); it != mergeable_.end()) {
      ids.push_back(it->second);
      continue;
    }
    // SentencePiece looks a final symbol up among all pieces; only a one-character CONTROL piece can
    // be found here (merges make NORMAL or USER_DEFINED pieces, and byte pieces are 6 characters).
    if (auto it = reserved_.find(key);
        it != reserved_.end() && spec_.pieces[it->second].type != PieceType::Unknown) {
      ids.push_back(it->second);
      continue;
    }
    if (spec_.byte_fallback) {
      for (char c : key) ids.push_back(static_cast<uint32_t>(byteIds_[static_cast<uint8_t>(c)]));
    } else {
      ids.push_back(spec_.unk_id);
    }
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Decoding.

// What one piece adds to decoded bytes (see the header).
std::string Tokenizer::pieceBytes(uint32_t id) const {
  if (id >= spec_.pieces.size())
    throw Error("tokenizer: id " + std::to_string(id) + " is past the vocabulary (" +
                std::to_string(spec_.pieces.size()) + " pieces)");
  const TokenizerPiece& piece = spec_.pieces[id];
  switch (piece.type) {
    case PieceType::Control:
    case PieceType::Unknown:
      return "";
    case PieceType::Byte:
      return std::string(1, static_cast<char>(byteOfPiece(piece.surface)));
    case PieceType::Normal:
    case PieceType::UserDefined:
      break;
  }
  std::string out;
  out.reserve(piece.surface.size());
  for (size_t at = 0; at < piece.surface.size();) {
    if (piece.surface.compare(at, kMetaSpace.size(), kMetaSpace) == 0) {
      out += ' ';
      at += kMetaSpace.size();
    } else {
      out += piece.surface[at++];
    }
  }
  return out;
}

// All pieces' bytes, one UTF-8 decode, one leading space dropped (design page 4).
std::string Tokenizer::decode(const std::vector<uint32_t>& ids) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= spec_.pieces.size())
      throw Error("tokenizer decode: id " + std::to_string(ids[i]) + " at position " +
                  std::to_string(i) + " is past the vocabulary (" +
                  std::to_string(spec_.pieces.size()) + " pieces)");
    bytes += pieceBytes(ids[i]);
  }
  // One UTF-8 decode over all the bytes, so that byte pieces which split a character join up again.
  // Each ill-formed maximal subpart becomes one U+FFFD, as the browser's TextDecoder does.
  std::string text;
  text.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    Utf8Step step = utf8Step(bytes, at);
    if (step.valid) text.append(bytes, at, step.length);
    else text += "\xEF\xBF\xBD";
    at += step.length;
  }
  if (spec_.add_dummy_prefix && !text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

}  // namespace needle
