// spm_import.cpp: a TokenizerSpec from a SentencePiece .model file, classified as Needle's exporter
// classifies pieces. This is the only host file that links libsentencepiece.
#include <sentencepiece_processor.h>

#include <string_view>

#include "tokenizer.hpp"

namespace needle {
namespace {

// The few settings of a serialized ModelProto that decide whether our encoder can reproduce it.
// libsentencepiece exposes the proto only as bytes (the generated header is not installed), so they
// are read from the protobuf wire format directly. Field numbers are those of sentencepiece_model.proto:
// ModelProto.trainer_spec = 2, ModelProto.normalizer_spec = 3; TrainerSpec.model_type = 3,
// treat_whitespace_as_suffix = 24, byte_fallback = 35; NormalizerSpec.name = 1,
// precompiled_charsmap = 2, add_dummy_prefix = 3, remove_extra_whitespaces = 4,
// escape_whitespaces = 5. Absent fields keep the proto's defaults.
struct ModelSettings {
  uint64_t model_type = 1;  // UNIGRAM = 1, BPE = 2, WORD = 3, CHAR = 4
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  std::string normalizer_name;
  size_t charsmap_bytes = 0;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Reads protobuf fields one at a time; every read is range-checked and names the model file.
class WireReader {
 public:
  WireReader(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}

  bool done() const { return at_ >= bytes_.size(); }

  // The next field's number and wire type.
  void key(uint64_t& field, uint64_t& wireType) {
    uint64_t k = varint();
    field = k >> 3;
    wireType = k & 7;
  }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) fail("a varint runs past the end");
      const uint8_t b = static_cast<uint8_t>(bytes_[at_++]);
      value |= uint64_t{b & 0x7Fu} << shift;
      if (b < 0x80) return value;
    }
    fail("a varint is longer than 10 bytes");
    return 0;
  }

  std::string_view lengthDelimited() {
    uint64_t length = varint();
    if (length > bytes_.size() - at_) fail("a length-delimited field runs past the end");
    std::string_view out = bytes_.substr(at_, length);
    at_ += length;
    return out;
  }

  void skip(uint64_t wireType) {
    switch (wireType) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: lengthDelimited(); return;
      case 5: advance(4); return;
      default: fail("wire type " + std::to_string(wireType) + " is not supported");
    }
  }

 private:
  void advance(uint64_t n) {
    if (n > bytes_.size() - at_) fail("a fixed-size field runs past the end");
    at_ += n;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(what_ + ": the model proto is malformed at byte " + std::to_string(at_) + ": " + why);
  }

  std::string_view bytes_;
  const std::string& what_;
  size_t at_ = 0;
};

ModelSettings readSettings(std::string_view proto, const std::string& path) {
  ModelSettings s;
  WireReader model(proto, path);
  while (!model.done()) {
    uint64_t field, wireType;
    model.key(field, wireType);
    if ((field == 2 || field == 3) && wireType == 2) {
      // Repeated occurrences of a message field merge, so reading each one in turn is correct.
      WireReader inner(model.lengthDelimited(), path);
      while (!inner.done()) {
        uint64_t f, w;
        inner.key(f, w);
        if (field == 2 && f == 3 && w == 0) s.model_type = inner.varint();
        else if (field == 2 && f == 24 && w == 0) s.treat_whitespace_as_suffix = inner.varint() != 0;
        else if (field == 2 && f == 35 && w == 0) s.byte_fallback = inner.varint() != 0;
        else if (field == 3 && f == 1 && w == 2) s.normalizer_name = std::string(inner.lengthDelimited());
        else if (field == 3 && f == 2 && w == 2) s.charsmap_bytes = inner.lengthDelimited().size();
        else if (field == 3 && f == 3 && w == 0) s.add_dummy_prefix = inner.varint() != 0;
        else if (field == 3 && f == 4 && w == 0) s.remove_extra_whitespaces = inner.varint() != 0;
        else if (field == 3 && f == 5 && w == 0) s.escape_whitespaces = inner.varint() != 0;
        else inner.skip(w);
      }
    } else {
      model.skip(wireType);
    }
  }
  return s;
}

bool isChatMarker(const std::string& piece) {
  for (const char* marker : kChatMarkers)
    if (piece == marker) return true;
  return false;
}

}  // namespace

// Loads the model with libsentencepiece, refuses settings our encoder does not implement (they would
// make its ids differ from SentencePiece's), and classifies each piece in the exporter's order:
// control, unknown, byte, one of the ten chat markers (USER_DEFINED), otherwise NORMAL.
TokenizerSpec tokenizerSpecFromSpm(const std::string& modelPath) {
  sentencepiece::SentencePieceProcessor sp;
  if (auto status = sp.Load(modelPath); !status.ok())
    throw Error(modelPath + ": SentencePiece cannot load the model: " + status.ToString());

  const ModelSettings settings = readSettings(sp.serialized_model_proto(), modelPath);
  auto refuse = [&](const std::string& why) {
    throw Error(modelPath + ": " + why + "; Needle's tokenizer implements BPE with identity " +
                "normalisation, spaces escaped as U+2581 and no whitespace collapsing");
  };
  if (settings.model_type != 2)
    refuse("the model type is " + std::to_string(settings.model_type) + ", not BPE (2)");
  if (settings.charsmap_bytes != 0)
    refuse("the model normalises text (rule '" + settings.normalizer_name + "')");
  if (settings.remove_extra_whitespaces) refuse("the model collapses runs of whitespace");
  if (!settings.escape_whitespaces) refuse("the model does not escape spaces");
  if (settings.treat_whitespace_as_suffix) refuse("the model treats whitespace as a suffix");

  TokenizerSpec spec;
  const int count = sp.GetPieceSize();
  const int specials[4] = {sp.pad_id(), sp.eos_id(), sp.bos_id(), sp.unk_id()};
  const char* names[4] = {"pad", "eos", "bos", "unk"};
  for (int k = 0; k < 4; ++k)
    if (specials[k] < 0 || specials[k] >= count)
      throw Error(modelPath + ": the model has no " + names[k] + " piece (id " +
                  std::to_string(specials[k]) + "); Needle's tokenizer needs pad, eos, bos and unk");
  spec.pad_id = static_cast<uint32_t>(specials[0]);
  spec.eos_id = static_cast<uint32_t>(specials[1]);
  spec.bos_id = static_cast<uint32_t>(specials[2]);
  spec.unk_id = static_cast<uint32_t>(specials[3]);
  // Needle 2's exporter writes 1 for both flags whatever the model says; we take the model's own
  // values, which agree for every model trained with Needle's settings (docs/tokenizer.md).
  spec.add_dummy_prefix = settings.add_dummy_prefix;
  spec.byte_fallback = settings.byte_fallback;

  spec.pieces.resize(static_cast<size_t>(count));
  for (int id = 0; id < count; ++id) {
    TokenizerPiece& piece = spec.pieces[static_cast<size_t>(id)];
    piece.surface = sp.IdToPiece(id);
    piece.score = sp.GetScore(id);
    if (sp.IsControl(id)) piece.type = PieceType::Control;
    else if (sp.IsUnknown(id)) piece.type = PieceType::Unknown;
    else if (sp.IsByte(id)) piece.type = PieceType::Byte;
    else if (isChatMarker(piece.surface)) piece.type = PieceType::UserDefined;
    else piece.type = PieceType::Normal;
  }
  return spec;
}

}  // namespace needle
