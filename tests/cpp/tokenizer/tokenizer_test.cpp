// Unit tests of the tokenizer on a small hand-built vocabulary: encoding rules, decoding, the blob
// format and its validation. The parity tests against real SentencePiece are in tests/cpp/spm/.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tokenizer.hpp"

using needle::PieceType;
using needle::Tokenizer;
using needle::TokenizerPiece;
using needle::TokenizerSpec;

namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581

// A vocabulary laid out like Needle's: <pad> </s> <s> <unk>, the ten markers at 4..13, the 256 byte
// pieces at 14..269, then normal pieces with scores that fall with their rank (as spm_train writes).
struct Vocab {
  TokenizerSpec spec;
  std::map<std::string, uint32_t> ids;

  Vocab() {
    add("<pad>", PieceType::Control, 0);
    add("</s>", PieceType::Control, 0);
    add("<s>", PieceType::Control, 0);
    add("<unk>", PieceType::Unknown, 0);
    for (const char* marker : needle::kChatMarkers) add(marker, PieceType::UserDefined, 0);
    for (int b = 0; b < 256; ++b) {
      char surface[8];
      std::snprintf(surface, sizeof surface, "<0x%02X>", b);
      add(surface, PieceType::Byte, 0);
    }
    // Merged pieces first (higher scores), then single characters.
    const char* merges[] = {"na", "am", "me", "nam", "name", "\xE2\x96\x81" "name", "he", "ll",
                            "hel", "hell", "hello", "\xE2\x96\x81" "hello", "or", "wor", "ld", "world",
                            "\xE2\x96\x81" "w", "\xE2\x96\x81" "world", "<s", "0x", "<0", "ab",
                            "\xC3\xA9t\xC3\xA9"};
    float score = -1;
    for (const char* m : merges) add(m, PieceType::Normal, score--);
    const char* chars[] = {"\xE2\x96\x81", "a", "b", "c", "d", "e", "h", "l", "m", "n", "o", "r",
                           "w", "t", "<", ">", "s", "0", "x", "A", "\xC3\xA9", "\n", "|", "_", "i",
                           "/", "k", "p"};
    for (const char* c : chars) add(c, PieceType::Normal, score--);
  }

  uint32_t add(const std::string& surface, PieceType type, float score) {
    const auto id = static_cast<uint32_t>(spec.pieces.size());
    spec.pieces.push_back({surface, score, type});
    ids[surface] = id;
    return id;
  }
  uint32_t operator[](const std::string& surface) const { return ids.at(surface); }
  uint32_t byte(uint8_t b) const { return 14u + b; }
};

std::vector<uint32_t> bytesOf(const Vocab& v, const std::string& s) {
  std::vector<uint32_t> out;
  for (unsigned char c : s) out.push_back(v.byte(c));
  return out;
}

// The blob of a spec with one piece's record located: its offset in the blob.
uint64_t recordOffset(const TokenizerSpec& spec, size_t index) {
  uint64_t at = 24;
  for (size_t i = 0; i < index; ++i) at += 7 + spec.pieces[i].surface.size();
  return at;
}

void putU32(std::vector<uint8_t>& blob, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) blob[at + k] = static_cast<uint8_t>(v >> (8 * k));
}

Tokenizer parse(const std::vector<uint8_t>& blob) {
  return Tokenizer::fromBlob(needle::ByteView(blob.data(), blob.size()));
}

}  // namespace

TEST_CASE("chat markers encode to one atomic id each", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  for (uint32_t k = 0; k < 10; ++k) {
    CAPTURE(needle::kChatMarkers[k]);
    CHECK(tok.encodeRaw(needle::kChatMarkers[k]) == std::vector<uint32_t>{4 + k});
    // At the start of a sequence the dummy prefix comes first, as its own piece.
    CHECK(tok.encode(needle::kChatMarkers[k]) == std::vector<uint32_t>{v[kSpace], 4 + k});
  }
  // Adjacent markers, and a marker inside text: the text around it is encoded on its own.
  CHECK(tok.encodeRaw("<|im_end|><|im_start|>") == std::vector<uint32_t>{5, 4});
  CHECK(tok.encodeRaw("name<tools>name") == std::vector<uint32_t>{v["name"], 8, v["name"]});
  CHECK(tok.encode("<|im_start|>user\n") ==
        std::vector<uint32_t>{v[kSpace], 4, v.byte('u'), v["s"], v["e"], v["r"], v["\n"]});
  // A marker that is not complete is ordinary text.
  CHECK(tok.encodeRaw("<tools") ==
        std::vector<uint32_t>{v["<"], v["t"], v["o"], v["o"], v["l"], v["s"]});
}

TEST_CASE("user-defined pieces match longest first and never merge", "[tokenizer]") {
  Vocab v;
  const uint32_t abc = v.add("abc", PieceType::UserDefined, 0);
  const uint32_t ab = v["ab"];  // a normal piece
  Tokenizer tok(v.spec);
  CHECK(tok.encodeRaw("abcd") == std::vector<uint32_t>{abc, v["d"]});
  CHECK(tok.encodeRaw("abd") == std::vector<uint32_t>{ab, v["d"]});
  // "n" + frozen "abc": nothing merges with a marker, not even into a piece that exists.
  Vocab w;
  const uint32_t abc2 = w.add("abc", PieceType::UserDefined, 0);
  w.add("nabc", PieceType::Normal, 100);
  w.add("abcd", PieceType::Normal, 100);
  Tokenizer tok2(w.spec);
  CHECK(tok2.encodeRaw("nabcd") == std::vector<uint32_t>{w["n"], abc2, w["d"]});
  CHECK(tok.encodeRaw("nabc") == std::vector<uint32_t>{v["n"], abc});
}

TEST_CASE("encodeRaw has no dummy prefix, encode has one", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  CHECK(tok.encode("name") == std::vector<uint32_t>{v[kSpace + "name"]});
  CHECK(tok.encodeRaw("name") == std::vector<uint32_t>{v["name"]});
  CHECK(tok.encode("name") != tok.encodeRaw("name"));
  CHECK(tok.encode("hello world") == std::vector<uint32_t>{v[kSpace + "hello"], v[kSpace + "world"]});
  CHECK(tok.encodeRaw(" world") == std::vector<uint32_t>{v[kSpace + "world"]});
  // Empty input has no ids at all, not even the prefix; a lone space is two U+2581.
  CHECK(tok.encode("").empty());
  CHECK(tok.encodeRaw("").empty());
  CHECK(tok.encode(" ") == std::vector<uint32_t>{v[kSpace], v[kSpace]});
  // Spaces are never collapsed.
  CHECK(tok.encodeRaw("a   b") == std::vector<uint32_t>{v["a"], v[kSpace], v[kSpace], v[kSpace], v["b"]});
}

TEST_CASE("BPE merges the highest score first, the leftmost pair on ties", "[tokenizer]") {
  SECTION("score decides") {
    Vocab v;
    const uint32_t bc = v.add("bc", PieceType::Normal, 10);  // beats "ab" (score about -21)
    Tokenizer tok(v.spec);
    CHECK(tok.encodeRaw("abc") == std::vector<uint32_t>{v["a"], bc});
  }
  SECTION("lower score loses") {
    Vocab v;
    v.add("bc", PieceType::Normal, -1000);
    Tokenizer tok(v.spec);
    CHECK(tok.encodeRaw("abc") == std::vector<uint32_t>{v["ab"], v["c"]});
  }
  SECTION("ties go to the leftmost pair") {
    Vocab v;
    for (auto& p : v.spec.pieces)
      if (p.surface == "ab") p.score = 5;
    const uint32_t bc = v.add("bc", PieceType::Normal, 5);
    const uint32_t ca = v.add("ca", PieceType::Normal, 5);
    Tokenizer tok(v.spec);
    CHECK(tok.encodeRaw("abc") == std::vector<uint32_t>{v["ab"], v["c"]});
    CHECK(tok.encodeRaw("bcab") == std::vector<uint32_t>{bc, v["ab"]});
    // "cab": "ca" (left) and "ab" tie; the left one wins, so no "ab" forms.
    CHECK(tok.encodeRaw("cab") == std::vector<uint32_t>{ca, v["b"]});
  }
  SECTION("merges go through intermediate pieces only") {
    Vocab v;
    Tokenizer tok(v.spec);
    // "hello" is reachable: he, ll, hel, hell, hello.
    CHECK(tok.encodeRaw("hello") == std::vector<uint32_t>{v["hello"]});
    // "world" needs "or", then "wor", then "ld", then "world".
    CHECK(tok.encodeRaw("world") == std::vector<uint32_t>{v["world"]});
  }
}

TEST_CASE("merges never produce control, unknown or byte pieces", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  // "<s" is a normal piece, but "<s>" is the control piece bos: SentencePiece never merges into it,
  // while the design page's RefTokenizer would give id 2 here.
  CHECK(tok.encodeRaw("<s>") == std::vector<uint32_t>{v["<s"], v[">"]});
  CHECK(tok.encodeRaw("<unk>") ==
        std::vector<uint32_t>{v["<"], v.byte('u'), v["n"], v["k"], v[">"]});
  // "<0" and "0x" are normal, "<0x41>" is the byte piece for 'A': not merged into either.
  std::vector<uint32_t> ids = tok.encodeRaw("<0x41>");
  CHECK(std::find(ids.begin(), ids.end(), v.byte('A')) == ids.end());
  // "0x" (score -20) beats "<0" (-21), and then "<0x" is no piece.
  CHECK(ids == std::vector<uint32_t>{v["<"], v["0x"], v.byte('4'), v.byte('1'), v[">"]});
}

TEST_CASE("a one-character control piece is found as SentencePiece finds it", "[tokenizer]") {
  Vocab v;
  const uint32_t star = v.add("*", PieceType::Control, 0);
  Tokenizer tok(v.spec);
  CHECK(tok.encodeRaw("a*") == std::vector<uint32_t>{v["a"], star});
}

TEST_CASE("characters outside the vocabulary fall back to bytes, or to unk", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  const std::string emoji = "\xF0\x9F\x91\x8D";  // U+1F44D, not a piece
  CHECK(tok.encodeRaw(emoji) == bytesOf(v, emoji));
  CHECK(tok.encodeRaw("a\xC3\xA9" "b") == std::vector<uint32_t>{v["a"], v["\xC3\xA9"], v["b"]});
  CHECK(tok.encodeRaw("\xC3\xA8") == bytesOf(v, "\xC3\xA8"));  // è
  CHECK(tok.encodeRaw("\t") == std::vector<uint32_t>{v.byte('\t')});
  std::string nul(1, '\0');
  CHECK(tok.encodeRaw(nul) == std::vector<uint32_t>{v.byte(0)});

  // Without byte fallback each unknown symbol is one unk id.
  Vocab noBytes;
  noBytes.spec.byte_fallback = false;
  Tokenizer tok2(noBytes.spec);
  CHECK(tok2.encodeRaw(emoji + "a\t") == std::vector<uint32_t>{3, noBytes["a"], 3});
}

TEST_CASE("invalid UTF-8 input is an error that says where", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ab\x80", "byte 2"},                 // stray continuation byte
      {"a\xC0\x80", "byte 1"},              // overlong NUL
      {"\xC1\xBF", "byte 0"},               // overlong
      {"xy\xE0\x80\x80", "byte 2"},         // overlong 3-byte
      {"\xED\xA0\x80", "byte 0"},           // surrogate U+D800
      {"hello \xE2\x96", "byte 6"},         // truncated at the end
      {"\xE2\x96" "a", "byte 0"},           // truncated before ASCII
      {"\xF4\x90\x80\x80", "byte 0"},       // past U+10FFFF
      {"\xF5\x80\x80\x80", "byte 0"},       // invalid lead byte
      {"name\xFF", "byte 4"}};
  for (const auto& [text, where] : cases) {
    CAPTURE(where);
    CHECK_THROWS_AS(tok.encode(text), needle::Error);
    CHECK_THROWS_WITH(tok.encodeRaw(text), Catch::Contains("invalid UTF-8") && Catch::Contains(where));
  }
  // The largest valid forms are accepted.
  CHECK_NOTHROW(tok.encode("\xF4\x8F\xBF\xBF\xEF\xBF\xBF\xDF\xBF\x7F"));
}

TEST_CASE("decode(encode(text)) gives the text back", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  const std::vector<std::string> texts = {
      "hello world", "name", " name", "  leading and trailing  ", "a\tb\nc", "h\xC3\xA9llo w\xC3\xB6rld",
      "\xE6\xBC\xA2\xE5\xAD\x97 \xF0\x9F\x87\xAF\xF0\x9F\x87\xB5", "e\xCC\x81t\xC3\xA9",
      "<|im_start|>user\n<tools>[]</tools>\nhi<|im_end|>", "x", " ", "   ", std::string(1, '\0')};
  for (const auto& text : texts) {
    CAPTURE(text);
    CHECK(tok.decode(tok.encode(text)) == text);
    // A fragment decodes to itself too, except that one leading space is taken as the dummy prefix.
    const std::string raw = tok.decode(tok.encodeRaw(text));
    CHECK(raw == (text[0] == ' ' ? text.substr(1) : text));
  }
}

TEST_CASE("decode joins byte pieces before one UTF-8 decode", "[tokenizer]") {
  Vocab v;
  Tokenizer tok(v.spec);
  const std::string fffd = "\xEF\xBF\xBD";
  // A character split over byte pieces comes back whole.
  CHECK(tok.decode({v.byte(0xC3), v.byte(0xA8)}) == "\xC3\xA8");
  CHECK(tok.decode({v["a"], v.byte(0xF0), v.byte(0x9F), v.byte(0x91), v.byte(0x8D), v["b"]}) ==
        "a\xF0\x9F\x91\x8D" "b");
  // Interrupted or truncated sequences become U+FFFD, one per maximal subpart (as TextDecoder does).
  CHECK(tok.decode({v.byte(0xC3), v["a"], v.byte(0xA9)}) == fffd + "a" + fffd);
  CHECK(tok.decode({v["a"], v.byte(0xE2), v.byte(0x96)}) == "a" + fffd);
  CHECK(tok.decode({v.byte(0xFF), v.byte(0xFE)}) == fffd + fffd);
  CHECK(tok.decode({v.byte(0xED), v.byte(0xA0), v.byte(0x80)}) == fffd + fffd + fffd);
  CHECK(tok.decode({v.byte(0xF0), v.byte(0x9F), v["a"]}) == fffd + "a");
  // The bytes of U+2581 stay U+2581: only pieces' own U+2581 become spaces.
  CHECK(tok.decode({v["a"], v.byte(0xE2), v.byte(0x96), v.byte(0x81)}) == "a" + kSpace);
  // Control and unknown pieces give nothing; one leading space is dropped.
  CHECK(tok.decode({2, v[kSpace + "hello"], 1, 3, 0}) == "hello");
  CHECK(tok.decode({v[kSpace], 5, v["\n"]}) == "<|im_end|>\n");
  CHECK(tok.decode({v[kSpace], v[kSpace + "hello"]}) == " hello");
  CHECK(tok.decode({v.byte(' '), v["a"]}) == "a");
  CHECK(tok.decode({}).empty());
  CHECK(tok.pieceBytes(v[kSpace + "world"]) == " world");
  CHECK(tok.pieceBytes(4) == "<|im_start|>");
  CHECK(tok.pieceBytes(v.byte(0x0A)) == "\n");
  CHECK(tok.pieceBytes(2).empty());
  CHECK(tok.pieceBytes(3).empty());

  // Without the dummy prefix nothing is stripped.
  Vocab plain;
  plain.spec.add_dummy_prefix = false;
  Tokenizer tok2(plain.spec);
  CHECK(tok2.decode({plain[kSpace + "hello"]}) == " hello");
  CHECK(tok2.encode("name") == std::vector<uint32_t>{plain["name"]});

  CHECK_THROWS_WITH(tok.decode({v["a"], 270 + 1000}), Catch::Contains("position 1") &&
                                                          Catch::Contains("past the vocabulary"));
  CHECK_THROWS_AS(tok.pieceBytes(static_cast<uint32_t>(v.spec.pieces.size())), needle::Error);
}

TEST_CASE("the blob writer and reader round trip exactly", "[tokenizer][blob]") {
  Vocab v;
  v.spec.pieces[300].score = -0.0f;
  v.spec.pieces[301].score = 1.5e-7f;
  const std::vector<uint8_t> blob = needle::tokenizerBlob(v.spec);

  // The header, byte for byte: 24 bytes, n_pieces, pad 0, eos 1, bos 2, unk 3, flags 1 1, zero.
  const uint32_t n = static_cast<uint32_t>(v.spec.pieces.size());
  const uint8_t header[24] = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), 0, 0, 0, 0, 0, 0,
                              1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 1, 0, 0};
  REQUIRE(blob.size() > 24);
  CHECK(std::memcmp(blob.data(), header, 24) == 0);
  // The first record: score 0.0, type 2 (control), length 5, "<pad>".
  const uint8_t first[12] = {0, 0, 0, 0, 2, 5, 0, '<', 'p', 'a', 'd', '>'};
  CHECK(std::memcmp(blob.data() + 24, first, 12) == 0);
  uint64_t size = 24;
  for (const auto& p : v.spec.pieces) size += 7 + p.surface.size();
  CHECK(blob.size() == size);

  Tokenizer tok = parse(blob);
  const TokenizerSpec& back = tok.spec();
  CHECK(back.pad_id == 0);
  CHECK(back.eos_id == 1);
  CHECK(back.bos_id == 2);
  CHECK(back.unk_id == 3);
  CHECK(back.add_dummy_prefix);
  CHECK(back.byte_fallback);
  REQUIRE(back.pieces.size() == v.spec.pieces.size());
  for (size_t i = 0; i < back.pieces.size(); ++i) {
    CAPTURE(i);
    CHECK(back.pieces[i].surface == v.spec.pieces[i].surface);
    CHECK(back.pieces[i].type == v.spec.pieces[i].type);
    CHECK(std::memcmp(&back.pieces[i].score, &v.spec.pieces[i].score, 4) == 0);
  }
  CHECK(needle::tokenizerBlob(back) == blob);
  CHECK(tok.encode("hello world") == Tokenizer(v.spec).encode("hello world"));

  // The flags are read as written.
  Vocab w;
  w.spec.add_dummy_prefix = false;
  w.spec.byte_fallback = false;
  const std::vector<uint8_t> blob2 = needle::tokenizerBlob(w.spec);
  CHECK(blob2[20] == 0);
  CHECK(blob2[21] == 0);
  CHECK_FALSE(parse(blob2).spec().add_dummy_prefix);
  CHECK_FALSE(parse(blob2).spec().byte_fallback);
}

TEST_CASE("every truncation of a blob is refused", "[tokenizer][blob]") {
  Vocab v;
  const std::vector<uint8_t> blob = needle::tokenizerBlob(v.spec);
  for (size_t length = 0; length < blob.size(); ++length) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(length));
    try {
      (void)Tokenizer::fromBlob(needle::ByteView(cut.data(), cut.size()));
      FAIL("a blob cut to " << length << " bytes was accepted");
    } catch (const needle::Error&) {
    }
  }
  // And a view onto a larger buffer reads only its own bytes.
  std::vector<uint8_t> padded(blob);
  padded.insert(padded.begin(), 5, 0xAA);
  padded.insert(padded.end(), 5, 0xAA);
  CHECK(Tokenizer::fromBlob(needle::ByteView(padded.data() + 5, blob.size())).size() ==
        v.spec.pieces.size());
}

TEST_CASE("random corruption is refused or read faithfully, never a crash", "[tokenizer][blob]") {
  Vocab v;
  const std::vector<uint8_t> blob = needle::tokenizerBlob(v.spec);
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad(blob);
    const int flips = 1 + static_cast<int>(next() % 4);
    // Half the trials aim at the header and the first records, where most fields are.
    for (int f = 0; f < flips; ++f) {
      size_t at = trial % 2 ? next() % bad.size() : next() % 400;
      bad[at] ^= static_cast<uint8_t>(1u << (next() % 8));
    }
    try {
      Tokenizer tok = parse(bad);
      // Accepted: then it must say exactly what the bytes say.
      CHECK(needle::tokenizerBlob(tok.spec()) == bad);
      ++accepted;
    } catch (const needle::Error&) {
      ++refused;
    }
  }
  // Most single-bit changes break a length, a type, UTF-8 or an id; scores and letters may not.
  CHECK(refused > 1000);
  CHECK(accepted > 0);
}

TEST_CASE("each blob rule names the piece and offset it was broken at", "[tokenizer][blob]") {
  Vocab v;
  const std::vector<uint8_t> good = needle::tokenizerBlob(v.spec);
  const uint32_t a = v["a"];
  const uint64_t atA = recordOffset(v.spec, a);
  const std::string pieceA = "piece " + std::to_string(a) + " (blob offset " + std::to_string(atA) + ")";
  auto refuses = [&](std::vector<uint8_t> blob, const std::string& what1, const std::string& what2) {
    CAPTURE(what1, what2);
    CHECK_THROWS_WITH(parse(blob), Catch::Contains(what1) && Catch::Contains(what2));
  };

  SECTION("header fields") {
    auto b = good;
    putU32(b, 0, 0);
    refuses(b, "n_pieces is 0", "offset 0");
    b = good;
    putU32(b, 0, 0x7FFFFFFF);
    refuses(b, "n_pieces is 2147483647", "offset 0");
    b = good;
    putU32(b, 0, static_cast<uint32_t>(v.spec.pieces.size() * 3));  // plausible but too many
    refuses(b, "n_pieces", "needs at least");
    b = good;
    b[20] = 2;
    refuses(b, "add_dummy_prefix is 2", "offset 20");
    b = good;
    b[21] = 7;
    refuses(b, "byte_fallback is 7", "offset 21");
    b = good;
    b[23] = 1;
    refuses(b, "reserved", "offset 22");
    b = good;
    putU32(b, 16, 999999);
    refuses(b, "unk_id 999999", "past the vocabulary");
    b = good;
    putU32(b, 16, a);
    refuses(b, "unk_id " + std::to_string(a), "of type normal; it must be of type unknown");
    b = good;
    putU32(b, 12, 3);
    refuses(b, "bos_id 3", "of type unknown; it must be of type control");
  }
  SECTION("piece records") {
    auto b = good;
    b[atA + 4] = 5;
    refuses(b, "piece " + std::to_string(a), "type 5");
    b = good;
    b[atA + 7] = 0xFF;  // "a" -> "\xFF"
    refuses(b, pieceA, "not valid UTF-8");
    b = good;
    b[atA + 7] = 'b';   // "a" -> "b": the later "b" repeats it
    refuses(b, "piece " + std::to_string(v["b"]) + " (blob offset", "already piece " + std::to_string(a));
    b = good;
    putU32(b, atA, 0x7FC00000);  // NaN
    refuses(b, pieceA, "not a finite number");
    b = good;
    b.push_back(0);
    refuses(b, "1 bytes follow the last piece", "offset " + std::to_string(good.size()));
  }
  SECTION("byte pieces") {
    const uint32_t byteA = v.byte('A');
    const uint64_t at = recordOffset(v.spec, byteA);
    const std::string where = "piece " + std::to_string(byteA) + " (blob offset " + std::to_string(at) + ")";
    auto b = good;
    b[at + 7 + 3] = 'g';  // <0x41> -> <0xg1>
    refuses(b, where, "<0xHH>");
    b = good;
    b[at + 7 + 3] = 'a';  // <0xa1>: SentencePiece spells bytes in uppercase only
    refuses(b, where, "<0xHH>");
    b = good;
    b[at + 7 + 4] = '2';  // <0x42> twice: the real <0x42> repeats it
    refuses(b, "piece " + std::to_string(v.byte('B')) + " (blob offset", "already piece " + std::to_string(byteA));
    b = good;
    b[at + 4] = 0;        // <0x41> as a normal piece: byte 0x41 has no byte piece
    refuses(b, "byte_fallback is set", "0x41");
  }
  SECTION("an empty surface and a truncated surface") {
    // Piece 0 ("<pad>") with length 0: then the next record starts inside "<pad>".
    auto b = good;
    b[24 + 5] = 0;
    b[24 + 6] = 0;
    CHECK_THROWS_AS(parse(b), needle::Error);
    b = good;
    b[24 + 5] = 0xFF;
    b[24 + 6] = 0xFF;
    CHECK_THROWS_AS(parse(b), needle::Error);
  }
}

TEST_CASE("in-memory specs obey the same rules", "[tokenizer]") {
  Vocab v;
  auto bad = v.spec;
  bad.pieces[v["a"]].surface.clear();
  CHECK_THROWS_WITH(Tokenizer(bad), Catch::Contains("surface is empty"));
  CHECK_THROWS_WITH(needle::tokenizerBlob(bad), Catch::Contains("surface is empty"));
  bad = v.spec;
  bad.pieces[v["a"]].type = static_cast<PieceType>(9);
  CHECK_THROWS_WITH(Tokenizer(bad), Catch::Contains("type 9"));
  bad = v.spec;
  bad.pieces[v["a"]].type = PieceType::Unknown;
  CHECK_THROWS_WITH(Tokenizer(bad), Catch::Contains("2 pieces have type unknown"));
  bad = v.spec;
  bad.pieces[v["a"]].surface = std::string(70000, 'q');
  CHECK_THROWS_WITH(needle::tokenizerBlob(bad), Catch::Contains("does not fit"));
  bad = v.spec;
  bad.pieces.clear();
  CHECK_THROWS_AS(Tokenizer(bad), needle::Error);
}

TEST_CASE("the chat markers are Needle's ten, in id order", "[tokenizer]") {
  const std::vector<std::string> expected = {"<|im_start|>", "<|im_end|>", "<think>", "</think>",
                                             "<tools>", "</tools>", "<tool_call>", "</tool_call>",
                                             "<tool_result>", "</tool_result>"};
  for (size_t k = 0; k < 10; ++k) CHECK(needle::kChatMarkers[k] == expected[k]);
}
