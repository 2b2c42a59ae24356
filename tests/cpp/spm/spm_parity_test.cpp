// Parity of our tokenizer with libsentencepiece 0.1.97 on the fixture model (build/models/
// needle-test.model, trained by scripts/make-test-models.sh with Needle's settings): the importer's
// classification, ids of encode and encodeRaw on several hundred varied strings, and decode.
#include <catch2/catch.hpp>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "archive.hpp"
#include "tokenizer.hpp"
#include "utf8.hpp"

namespace {

const std::string kModelsDir = NEEDLE_MODELS_DIR;
const std::string kModelPath = kModelsDir + "/needle-test.model";
const std::string kSpace = "\xE2\x96\x81";

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (run the models.make fixture first)");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A small deterministic generator (64-bit LCG, top bits).
struct Lcg {
  uint64_t state;
  uint32_t below(uint32_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((state >> 33) % n);
  }
};

// A SentencePiece model loaded three ways: by SentencePiece, by SentencePiece with the dummy prefix
// turned off, and by our importer.
struct SpmModel {
  sentencepiece::SentencePieceProcessor sp, spRaw;
  std::string proto;
  needle::TokenizerSpec spec;
  std::unique_ptr<needle::Tokenizer> tok;

  explicit SpmModel(const std::string& path) {
    auto status = sp.Load(path);
    if (!status.ok()) throw std::runtime_error(path + ": " + status.ToString());
    proto = sp.serialized_model_proto();
    // Protobuf merges repeated occurrences of a message field, so appending a NormalizerSpec
    // (ModelProto field 3) that holds only add_dummy_prefix = false (field 3, varint 0) gives the same
    // model without the dummy prefix: SentencePiece's own encoding of a fragment.
    status = spRaw.LoadFromSerializedProto(withNormalizerField(0x18, 0));
    if (!status.ok()) throw std::runtime_error(path + " without prefix: " + status.ToString());
    spec = needle::tokenizerSpecFromSpm(path);
    tok = std::make_unique<needle::Tokenizer>(spec);
  }

  // The model proto with one normalizer field (a varint key byte and a one-byte value) overridden.
  std::string withNormalizerField(uint8_t key, uint8_t value) const {
    std::string p = proto;
    p += '\x1A';
    p += '\x02';
    p += static_cast<char>(key);
    p += static_cast<char>(value);
    return p;
  }

  std::vector<uint32_t> spEncode(const std::string& text, bool prefix) const {
    std::vector<int> ids;
    auto status = (prefix ? sp : spRaw).Encode(text, &ids);
    if (!status.ok()) throw std::runtime_error("SentencePiece Encode: " + status.ToString());
    return std::vector<uint32_t>(ids.begin(), ids.end());
  }
  std::string spDecode(const std::vector<uint32_t>& ids) const {
    return sp.DecodeIds(std::vector<int>(ids.begin(), ids.end()));
  }
};

// The fixture model (needle-test.model), loaded once.
const SpmModel& fixture() {
  static const SpmModel model(kModelPath);
  return model;
}

// A second model, trained here in well under a second, whose vocabulary holds pieces such as "<s",
// "s>", "<0x0A" and "0A>": through them a merge could reach the control piece "<s>" or the byte piece
// "<0x0A>". spm_train's default splitting (by Unicode script and at digits) can never learn such
// pieces, so the fixture model cannot show the difference of design item 11; this one can. It is
// trained on ASCII words with those fragments glued inside, with script and number splitting off.
std::string trainSplitModel() {
  const std::string prefix = kModelsDir + "/split-test-" + std::to_string(getpid());
  const std::string input = prefix + ".txt";
  {
    std::ofstream out(input, std::ios::binary);
    Lcg rng{5};
    std::vector<std::string> words;
    for (int i = 0; i < 300; ++i) {
      std::string w;
      const uint32_t length = 1 + rng.below(7);
      for (uint32_t k = 0; k < length; ++k) w += static_cast<char>('a' + rng.below(26));
      words.push_back(w);
    }
    const std::vector<std::string> fragments = {"<s", "s>", "</s", "/s>", "<pad", "pad>",
                                                "<unk", "unk>", "<0x0A", "0x0A>", "<0x41", "0x41>",
                                                "<0xFF", "0xFF>", "<0x", "0x"};
    for (int line = 0; line < 3000; ++line) {
      const uint32_t count = 3 + rng.below(10);
      for (uint32_t k = 0; k < count; ++k) {
        if (k) out << ' ';
        if (rng.below(10) < 3) {
          out << words[rng.below(300)] << fragments[rng.below(16)];
          out << words[rng.below(300)];
        } else {
          out << words[rng.below(300)];
        }
      }
      out << '\n';
    }
  }
  std::string markers;
  for (const char* m : needle::kChatMarkers) markers += std::string(markers.empty() ? "" : ",") + m;
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + input + " --model_prefix=" + prefix +
      " --model_type=bpe --vocab_size=600 --byte_fallback=true --pad_id=0 --eos_id=1 --bos_id=2"
      " --unk_id=3 --user_defined_symbols=" + markers +
      " --normalization_rule_name=identity --remove_extra_whitespaces=false"
      " --split_by_unicode_script=false --split_by_number=false --character_coverage=1.0"
      " --num_threads=1 --minloglevel=2");
  std::remove(input.c_str());
  std::remove((prefix + ".vocab").c_str());
  if (!status.ok()) throw std::runtime_error("training the split-test model: " + status.ToString());
  return prefix + ".model";
}

const SpmModel& splitModel() {
  static const std::string path = trainSplitModel();
  static const SpmModel model(path);
  static const struct Cleanup {
    ~Cleanup() { std::remove(path.c_str()); }
  } cleanup;
  return model;
}

// A printable form of a string for failure messages.
std::string show(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 300)) {
    if (c >= 0x20 && c < 0x7F) out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out + (s.size() > 300 ? "..." : "");
}

std::string utf8(uint32_t cp) {
  std::string out;
  needle::appendUtf8(out, cp);
  return out;
}

// Strings written to exercise one rule each.
std::vector<std::string> handWritten() {
  std::vector<std::string> s = {
      // plain text
      "Hello world", "hello world", "Hello, world!", "What's the weather in Paris tomorrow?",
      "Set an alarm for 7:30 am.", "Remind me to call Alice at 5 pm", "the", "The", "a", "I",
      "Please send a message to Bob saying \"I'll be late\".", "x", "xyzzy", "qwertyuiop",
      "Don't stop; keep going... (really)", "e-mail: alice@example.com, https://example.org/a?b=c&d=e",
      "1234567890", "3.14159", "-42", "1e10", "2024-03-15", "15/03/2024", "March 15, 2024", "14:30",
      "$1,234.56", "100%", "+1 (555) 123-4567",
      "for (int i = 0; i < n; ++i) { sum += a[i]; }", "def f(x, n=3):\n    return x ** n",
      "if x == y and not z:", "print(f\"{x}: {y!r}\")", "snake_case_name camelCaseName PascalCase",
      // whitespace
      " ", "  ", "   ", "\t", "\n", "\r\n", " \t \n ", "a b", "a  b", "a   b", "a    b",
      " leading", "  leading two", "trailing ", "trailing two  ", " both ", "\ttab first",
      "tab\tinside", "tabs\t\t\tthree", "line\nbreak", "two\n\nbreaks", "\n\nleading newlines",
      "trailing newline\n", "mixed \t\n \t\n", std::string(20, ' '), std::string(33, ' ') + "x",
      std::string("a") + std::string(17, '\t') + "b", "\xE3\x80\x80" "ideographic space", "non\xC2\xA0" "breaking",
      kSpace, kSpace + kSpace + "a", "a" + kSpace + "b", "literal " + kSpace + " meta space",
      // literal special pieces, which are text and never their ids
      "<s>", "</s>", "<pad>", "<unk>", "<0x0A>", "<0x41>", "<0xZZ>", "<0x", "<s><s>", "</s></s>",
      "a<s>b", " <unk> ", "<s> hello </s>", "< s >", "<|im_start", "im_start|>", "<|im_start|",
      "<think", "think>", "</tool", "<tool_call", "<|", "|>", "<<tools>>", "<tool_call>>",
      // accents, precomposed and combining
      "caf\xC3\xA9", "cafe\xCC\x81", "na\xC3\xAFve", "nai\xCC\x88ve", "r\xC3\xA9sum\xC3\xA9",
      "Z\xC3\xBCrich", "Zu\xCC\x88rich", "S\xC3\xA3o Paulo", "Dvo\xC5\x99\xC3\xA1k", "\xC5\x81\xC3\xB3" "d\xC5\xBA",
      "Stra\xC3\x9F" "e", "\xC3\x85ngstr\xC3\xB6m", "A\xCC\x8Angstro\xCC\x88m",
      "e\xCC\x81\xCC\x81\xCC\x81", "a\xCC\x80\xCC\x81\xCC\x82\xCC\x83\xCC\x84", "\xCC\x81 leading mark",
      "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xAC\xCE\xB4\xCE\xB1", "\xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0",
      "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "\xE0\xB8\xA0\xE0\xB8\xB2\xE0\xB8\xA9\xE0\xB8\xB2\xE0\xB9\x84\xE0\xB8\x97\xE0\xB8\xA2",
      "Vi\xE1\xBB\x87t Nam, H\xC3\xA0 N\xE1\xBB\x99i", "\xC4\xB0stanbul T\xC3\xBCrk\xC3\xA7" "e",
      // CJK
      "\xE5\xA4\xA9\xE6\xB0\x94\xE9\xA2\x84\xE6\x8A\xA5", "\xE6\x98\x8E\xE5\xA4\xA9\xE5\x8C\x97\xE4\xBA\xAC\xE7\x9A\x84\xE5\xA4\xA9\xE6\xB0\x94\xE6\x80\x8E\xE4\xB9\x88\xE6\xA0\xB7\xEF\xBC\x9F",
      "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF\xE4\xB8\x96\xE7\x95\x8C",
      "\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A", "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xEC\x95\x88\xEB\x85\x95\xED\x95\x98\xEC\x84\xB8\xEC\x9A\x94",
      "\xE9\xBE\x98\xE9\xBD\x89\xE9\xBE\x96", "\xF0\xA0\x80\x80\xF0\xA0\x80\x81", "\xE6\xBC\xA2\xE5\xAD\x97 kanji \xE6\xBC\xA2\xE5\xAD\x97",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82",
      // emoji: plain, VS16, ZWJ sequences, skin tones, flags, keycaps
      "\xF0\x9F\x98\x80", "\xF0\x9F\x91\x8D", "\xE2\x9D\xA4\xEF\xB8\x8F", "\xE2\x9C\x88\xEF\xB8\x8F trip",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6",
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB coding", "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88",
      "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "\xF0\x9F\x91\x8B\xF0\x9F\x8F\xBB\xF0\x9F\x91\x8B\xF0\x9F\x8F\xBF",
      "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8", "\xF0\x9F\x87\xAF\xF0\x9F\x87\xB5\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
      "\xF0\x9F\x87\xBA", "1\xEF\xB8\x8F\xE2\x83\xA3", "#\xEF\xB8\x8F\xE2\x83\xA3", "\xF0\x9F\xA6\x84 unicorn",
      "Great job \xF0\x9F\x8E\x89\xF0\x9F\x8E\x89\xF0\x9F\x8E\x89", "\xE2\x80\x8D", "\xEF\xB8\x8F",
      // JSON as Needle's prompts carry it (compact, ASCII-escaped)
      "[{\"name\":\"get_weather\",\"description\":\"Get the weather for a city.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"description\":\"City name\"}},\"required\":[\"city\"]}}]",
      "{\"name\":\"send_message\",\"arguments\":{\"to\":\"Zo\\u00eb\",\"body\":\"caf\\u00e9 at 5?\"}}",
      "[{\"name\":\"set_alarm\",\"arguments\":{\"time\":\"07:30\",\"repeat\":false,\"days\":[1,2,3]}}]",
      "{\"emoji\":\"\\ud83d\\udc4d\",\"cjk\":\"\\u5929\\u6c14\"}", "[]", "{}", "[{}]", "\"\"", "null",
      "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": -2.5e-3}}",
      // rare and control bytes, noncharacters, the replacement character
      std::string(1, '\0'), std::string("a\0b", 3), "\x01\x02\x03", "\x1B[31mred\x1B[0m", "\x7F",
      "\xC2\x80\xC2\x9F", "\xC2\xA0\xC2\xA9\xC2\xAE\xC3\xB7\xC3\x97", "\xEF\xBF\xBD", "\xEF\xBB\xBF" "bom",
      "\xEF\xBF\xBF", "\xEE\x80\x80", "\xF4\x8F\xBF\xBF", "\xF0\x90\x80\x80", "\xE2\x80\xA8\xE2\x80\xA9",
      "\xE2\x80\x8B" "zero\xE2\x80\x8Bwidth", "\xD8\x80\xDB\x9D", "\xF3\xA0\x80\x81" "tag",
  };
  // Every marker alone, inside text, spaced, and next to every other marker.
  for (const char* m : needle::kChatMarkers) {
    const std::string marker = m;
    s.push_back(marker);
    s.push_back("text" + marker + "text");
    s.push_back(" " + marker + " ");
    s.push_back(marker + "\n" + marker);
    for (const char* other : needle::kChatMarkers) s.push_back(marker + other);
  }
  // Needle's prompt format, with and without a system turn, and a model answer.
  s.push_back(
      "<|im_start|>user\n<tools>[{\"name\":\"get_weather\",\"description\":\"Get the current weather.\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"}},"
      "\"required\":[\"location\"]}}]</tools>\nWhat's the weather in Z\xC3\xBCrich?<|im_end|>\n"
      "<|im_start|>assistant\n");
  s.push_back(
      "<|im_start|>system\ndate: 2025-01-02; locale: en-US<|im_end|>\n<|im_start|>user\n<tools>[]"
      "</tools>\nhi<|im_end|>\n<|im_start|>assistant\n");
  s.push_back(
      "<think>The user wants an alarm.</think>\n<tool_call>[{\"name\":\"set_alarm\",\"arguments\":"
      "{\"time\":\"07:30\"}}]</tool_call><|im_end|>");
  s.push_back("<tool_result>{\"status\":\"ok\"}</tool_result>");
  return s;
}

// Strings of random pieces drawn from pools that mix every class of text above.
std::vector<std::string> randomStrings(uint64_t seed, size_t count) {
  const std::vector<std::string> pool = {
      "a", "e", "t", "the", "ing", "tion", "Th", "x", "Q", "z", "0", "7", "42", ".", ",", "!", "?",
      "\"", "'", "{", "}", "[", "]", ":", "_", "-", "/", "\\", "<", ">", "|", "s>", "<s", "0x",
      " ", " ", " ", "  ", "\t", "\n", kSpace, "\xC3\xA9", "e\xCC\x81", "\xCC\x88", "\xC3\x9F",
      "\xE5\xA4\xA9", "\xE6\xB0\x94", "\xE3\x81\x82", "\xED\x95\x9C", "\xF0\x9F\x91\x8D",
      "\xF0\x9F\x8F\xBD", "\xE2\x80\x8D", "\xEF\xB8\x8F", "\xF0\x9F\x87\xBA", "\xF0\x9F\x87\xB8",
      "<|im_start|>", "<|im_end|>", "<tools>", "</tools>", "<tool_call>", "<think>", "</s>", "<unk>"};
  Lcg rng{seed};
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s;
    const uint32_t parts = 1 + rng.below(24);
    for (uint32_t p = 0; p < parts; ++p) {
      if (rng.below(8) == 0) {
        // Any valid code point, most of them from the BMP.
        uint32_t cp;
        do {
          cp = rng.below(4) ? rng.below(0x10000) : 0x10000 + rng.below(0x100000);
        } while (cp >= 0xD800 && cp <= 0xDFFF);
        s += utf8(cp);
      } else {
        s += pool[rng.below(static_cast<uint32_t>(pool.size()))];
      }
    }
    out.push_back(s);
  }
  return out;
}

// Lines of the training corpus: the text the model knows best.
std::vector<std::string> corpusLines(size_t every) {
  std::istringstream in(readText(kModelsDir + "/corpus.txt"));
  std::vector<std::string> out;
  std::string line;
  for (size_t n = 0; std::getline(in, line); ++n)
    if (n % every == 0) out.push_back(line);
  return out;
}

// Compares encode, encodeRaw and decode on each string; returns how many strings were compared.
size_t compareAll(const std::vector<std::string>& texts, const SpmModel& f = fixture()) {
  for (const std::string& text : texts) {
    INFO("text: \"" << show(text) << "\"");
    const std::vector<uint32_t> ids = f.tok->encode(text);
    REQUIRE(ids == f.spEncode(text, true));
    const std::vector<uint32_t> raw = f.tok->encodeRaw(text);
    REQUIRE(raw == f.spEncode(text, false));
    // Encoded text is valid UTF-8 and has no unknown ids, where both decoders agree.
    REQUIRE(f.tok->decode(ids) == f.spDecode(ids));
    REQUIRE(f.tok->decode(raw) == f.spDecode(raw));
    // And it is the text again, unless the text itself holds U+2581, which decodes as a space.
    if (text.find(kSpace) == std::string::npos) REQUIRE(f.tok->decode(ids) == text);
  }
  return texts.size();
}

}  // namespace

TEST_CASE("the importer classifies the fixture model as Needle's exporter does", "[spm]") {
  const SpmModel& f = fixture();
  const needle::TokenizerSpec& spec = f.spec;
  REQUIRE(spec.pieces.size() == 8192);
  CHECK(spec.pad_id == 0);
  CHECK(spec.eos_id == 1);
  CHECK(spec.bos_id == 2);
  CHECK(spec.unk_id == 3);
  CHECK(spec.add_dummy_prefix);
  CHECK(spec.byte_fallback);
  const char* specials[4] = {"<pad>", "</s>", "<s>", "<unk>"};
  for (int id = 0; id < 4; ++id) {
    CHECK(spec.pieces[id].surface == specials[id]);
    CHECK(spec.pieces[id].type == (id == 3 ? needle::PieceType::Unknown : needle::PieceType::Control));
  }
  for (int k = 0; k < 10; ++k) {
    CHECK(spec.pieces[4 + k].surface == needle::kChatMarkers[k]);
    CHECK(spec.pieces[4 + k].type == needle::PieceType::UserDefined);
  }
  for (int b = 0; b < 256; ++b) {
    char surface[8];
    std::snprintf(surface, sizeof surface, "<0x%02X>", b);
    CHECK(spec.pieces[14 + b].surface == surface);
    CHECK(spec.pieces[14 + b].type == needle::PieceType::Byte);
  }
  size_t normal = 0;
  for (int id = 0; id < 8192; ++id) {
    CHECK(spec.pieces[id].surface == f.sp.IdToPiece(id));
    CHECK(spec.pieces[id].score == f.sp.GetScore(id));
    if (id >= 270) {
      CHECK(spec.pieces[id].type == needle::PieceType::Normal);
      normal += spec.pieces[id].type == needle::PieceType::Normal;
    }
  }
  CHECK(normal == 8192 - 270);
  // The blob of this spec reads back to the same tokenizer.
  const std::vector<uint8_t> blob = needle::tokenizerBlob(spec);
  const needle::Tokenizer back = needle::Tokenizer::fromBlob(needle::ByteView(blob.data(), blob.size()));
  CHECK(needle::tokenizerBlob(back.spec()) == blob);
}

TEST_CASE("encode, encodeRaw and decode agree with SentencePiece on written strings", "[spm]") {
  const std::vector<std::string> texts = handWritten();
  REQUIRE(texts.size() >= 300);
  CHECK(compareAll(texts) == texts.size());
}

TEST_CASE("they agree on corpus lines and on random strings", "[spm]") {
  const std::vector<std::string> lines = corpusLines(37);
  REQUIRE(lines.size() >= 200);
  compareAll(lines);
  compareAll(randomStrings(20240601, 400));
  // Whole transcripts (several corpus lines joined by newlines) of a few KB.
  std::vector<std::string> joined;
  for (size_t i = 0; i + 40 <= lines.size(); i += 40) {
    std::string s;
    for (size_t k = i; k < i + 40; ++k) s += lines[k] + "\n";
    joined.push_back(s);
  }
  compareAll(joined);
}

TEST_CASE("a long text agrees and is encoded quickly", "[spm]") {
  const SpmModel& f = fixture();
  std::string text = readText(kModelsDir + "/corpus.txt").substr(0, 256 * 1024);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint32_t> ids = f.tok->encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(ids == f.spEncode(text, true));
  CHECK(f.tok->decode(ids) == text);
  // The priority-queue BPE is O(n log n): about 0.1 s here. A quadratic pair scan would take hours.
  CHECK(seconds < 10.0);
}

TEST_CASE("decode agrees with SentencePiece on random id sequences", "[spm]") {
  // Random sequences of normal, user-defined and control pieces and byte runs that spell whole
  // characters: where the design page says the two decoders agree. Not drawn: the unknown piece
  // (SentencePiece writes " \xE2\x81\x87 "), ill-formed byte runs, and a byte piece <0x20> first
  // (SentencePiece strips a leading U+2581 of the first piece only, we strip a leading space).
  const SpmModel& f = fixture();
  Lcg rng{77};
  size_t compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint32_t> ids;
    const uint32_t length = 1 + rng.below(30);
    while (ids.size() < length) {
      const uint32_t kind = rng.below(10);
      if (kind == 0) {
        ids.push_back(rng.below(3));        // pad, eos, bos
      } else if (kind == 1) {
        ids.push_back(4 + rng.below(10));   // a marker
      } else if (kind == 2) {
        uint32_t cp;
        do {
          cp = rng.below(2) ? rng.below(0x800) : rng.below(0x110000);
        } while ((cp >= 0xD800 && cp <= 0xDFFF) || (ids.empty() && cp == 0x20));
        for (unsigned char c : utf8(cp)) ids.push_back(14u + c);
      } else {
        ids.push_back(270 + rng.below(8192 - 270));
      }
    }
    INFO("trial " << trial);
    REQUIRE(f.tok->decode(ids) == f.spDecode(ids));
    ++compared;
  }
  CHECK(compared == 400);
}

TEST_CASE("where decode differs from SentencePiece, by design", "[spm]") {
  const SpmModel& f = fixture();
  const std::string fffd = "\xEF\xBF\xBD";
  const uint32_t a = static_cast<uint32_t>(f.sp.PieceToId("a"));
  // Unknown: nothing, where SentencePiece writes " \xE2\x81\x87 " (U+2047).
  CHECK(f.tok->decode({a, 3, a}) == "aa");
  CHECK(f.spDecode({a, 3, a}) == "a \xE2\x81\x87 a");
  // A truncated sequence: one U+FFFD per maximal subpart (as TextDecoder), SentencePiece one per byte.
  CHECK(f.tok->decode({a, 14 + 0xE2, 14 + 0x96}) == "a" + fffd);
  CHECK(f.spDecode({a, 14 + 0xE2, 14 + 0x96}) == "a" + fffd + fffd);
  // A leading space spelled as a byte piece: we strip it, SentencePiece keeps it.
  CHECK(f.tok->decode({14 + 0x20, a}) == "a");
  CHECK(f.spDecode({14 + 0x20, a}) == " a");
  // But they agree on single bad bytes and on U+2581 spelled in bytes.
  CHECK(f.tok->decode({14 + 0xC3, a, 14 + 0xA9}) == f.spDecode({14 + 0xC3, a, 14 + 0xA9}));
  CHECK(f.tok->decode({a, 14 + 0xE2, 14 + 0x96, 14 + 0x81}) ==
        f.spDecode({a, 14 + 0xE2, 14 + 0x96, 14 + 0x81}));
}

TEST_CASE("where encode differs from SentencePiece, by design: invalid UTF-8", "[spm]") {
  const SpmModel& f = fixture();
  // SentencePiece encodes each bad byte as U+FFFD; we refuse the text and say where.
  CHECK_THROWS_WITH(f.tok->encode("ab\x80" "c"), Catch::Contains("byte 2"));
  CHECK_NOTHROW(f.spEncode("ab\x80" "c", true));
}

TEST_CASE("the importer reads the normalizer settings and refuses what it cannot reproduce", "[spm]") {
  const SpmModel& f = fixture();
  auto importVariant = [&](uint8_t key, uint8_t value) {
    const std::string path = kModelsDir + "/variant-" + std::to_string(key) + ".model";
    {
      std::ofstream out(path, std::ios::binary);
      out << f.withNormalizerField(key, value);
    }
    struct Cleanup {
      std::string path;
      ~Cleanup() { std::remove(path.c_str()); }
    } cleanup{path};
    return needle::tokenizerSpecFromSpm(path);
  };
  // add_dummy_prefix = false is read, and then our encode matches SentencePiece's on that model.
  const needle::TokenizerSpec noPrefix = importVariant(0x18, 0);
  CHECK_FALSE(noPrefix.add_dummy_prefix);
  const needle::Tokenizer tok(noPrefix);
  for (const std::string text : {"name", " name", "<|im_start|>user", "caf\xC3\xA9 \xF0\x9F\x91\x8D"})
    CHECK(tok.encode(text) == f.spEncode(text, false));
  // Whitespace collapsing (remove_extra_whitespaces, field 4) is refused.
  CHECK_THROWS_WITH(importVariant(0x20, 1), Catch::Contains("collapses runs of whitespace"));
  // Unescaped spaces (escape_whitespaces, field 5) are refused.
  CHECK_THROWS_WITH(importVariant(0x28, 0), Catch::Contains("does not escape spaces"));
  CHECK_THROWS_WITH(needle::tokenizerSpecFromSpm(kModelsDir + "/no-such.model"),
                    Catch::Contains("no-such.model"));
}

TEST_CASE("packed archives carry the same tokenizer", "[spm]") {
  const SpmModel& f = fixture();
  for (const char* name : {"tiny.cact", "small.cact", "base.cact"}) {
    CAPTURE(name);
    const std::string bytes = readText(kModelsDir + "/" + name);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const needle::Model model = needle::readArchive(needle::ByteView(data, bytes.size()));
    REQUIRE_FALSE(model.tokenizer.empty());
    const std::vector<uint8_t> blob(model.tokenizer.data(), model.tokenizer.data() + model.tokenizer.size());
    CHECK(blob == needle::tokenizerBlob(f.spec));
    CHECK(model.geo.vocab == 8192);
  }
  const std::string bytes = readText(kModelsDir + "/tiny-notok.cact");
  const needle::Model model =
      needle::readArchive(needle::ByteView(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  CHECK(model.tokenizer.empty());
}

TEST_CASE("merges never reach control or byte pieces, as in SentencePiece (design item 11)", "[spm]") {
  const SpmModel& m = splitModel();
  const std::vector<std::string> specials = {"<s>", "</s>", "<pad>", "<unk>", "<0x0A>", "<0x41>", "<0xFF>"};
  auto isNormal = [&](const std::string& surface) {
    const int id = m.sp.PieceToId(surface);
    return id != m.sp.unk_id() && m.spec.pieces[id].type == needle::PieceType::Normal;
  };
  // The test means something only if a merge-into-any-piece tokenizer (the design page's
  // RefTokenizer) would emit these ids: two normal pieces must spell each special surface.
  size_t reachable = 0;
  for (const std::string& special : specials) {
    for (size_t k = 1; k < special.size(); ++k) {
      if (isNormal(special.substr(0, k)) && isNormal(special.substr(k))) {
        ++reachable;
        break;
      }
    }
  }
  REQUIRE(reachable >= 5);

  std::vector<std::string> texts;
  for (const std::string& special : specials) {
    for (const std::string& text : {special, "x" + special + "y", special + special, " " + special + " ",
                                    "a " + special, special + "<|im_end|>"})
      texts.push_back(text);
  }
  compareAll(texts, m);
  for (const std::string& text : texts) {
    INFO("text: \"" << show(text) << "\"");
    for (uint32_t id : m.tok->encode(text)) {
      const std::string& surface = m.spec.pieces[id].surface;
      CHECK(std::find(specials.begin(), specials.end(), surface) == specials.end());
    }
  }
  // And the rest of the parity set on this differently trained model.
  compareAll(handWritten(), m);
  compareAll(randomStrings(99, 200), m);
}
