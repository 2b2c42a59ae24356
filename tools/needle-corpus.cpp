// needle-corpus: writes a deterministic synthetic training corpus for the test tokenizer.
//
// The corpus stands in for Needle's (unpublished) training text. It has to be rich enough that
// spm_train's BPE reaches 8192 pieces, and varied enough that the parity tests meet every kind of
// text the real model sees: English-like prose (a synthetic lexicon with Zipf frequencies), tool-calling
// chat transcripts in Needle's prompt format with compact ASCII-escaped JSON, numbers, dates, code,
// accents (precomposed and combining), CJK, emoji (ZWJ sequences, skin tones, flags), tabs and runs of
// spaces. spm_train reads one sentence per line, so a transcript's newlines end lines: "\n" itself never
// reaches the trainer, as in the real model, where "\n" is the byte piece <0x0A>.
//
// Everything comes from one seeded integer generator, so a seed and a size give the same bytes on
// every machine.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.hpp"
#include "cli.hpp"
#include "sampler.hpp"
#include "utf8.hpp"

namespace {

const char* const kUsage =
    "usage: needle-corpus [--seed N] [--bytes N] [-o FILE]\n"
    "\n"
    "Writes a deterministic synthetic corpus (one sentence per line) for training the test\n"
    "tokenizer with spm_train. --seed (default 1) picks the text; --bytes (default 1500000) is the\n"
    "approximate size; the output goes to FILE or to stdout.\n";

// The corpus's draws, from the project's splitmix64 (host/sampler.hpp): the same output everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  // Uniform in [0, n); the modulo bias is irrelevant for a corpus.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(g_.next() % n); }
  bool chance(uint32_t percent) { return below(100) < percent; }
  // Uniform in [0, 1) from the top 53 bits.
  double unit() { return g_.uniform(); }
  template <typename T>
  const T& pick(const std::vector<T>& items) { return items[below(static_cast<uint32_t>(items.size()))]; }

 private:
  needle::SplitMix64 g_;
};

// Draws indices 0..n-1 with weight 1/(rank + 2.7), the Zipf-Mandelbrot shape of word frequencies.
class Zipf {
 public:
  explicit Zipf(size_t n) {
    double total = 0;
    for (size_t r = 0; r < n; ++r) cumulative_.push_back(total += 1.0 / (static_cast<double>(r) + 2.7));
  }
  size_t draw(Rng& rng) const {
    double u = rng.unit() * cumulative_.back();
    return static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                               cumulative_.begin());
  }

 private:
  std::vector<double> cumulative_;
};


// The code points of a valid UTF-8 string (the generator's own literals only).
std::vector<uint32_t> codePoints(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

// One UTF-8 string per code point of `s`.
std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (uint32_t cp : codePoints(s)) {
    std::string c;
    needle::appendUtf8(c, cp);
    out.push_back(c);
  }
  return out;
}

// A JSON string literal as Python's json.dumps writes it by default (ensure_ascii): non-ASCII as
// \uXXXX with lowercase hex, astral characters as surrogate pairs.
std::string jsonString(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  auto escape16 = [&](std::string& out, uint32_t u) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += hex[(u >> shift) & 0xF];
  };
  std::string out = "\"";
  for (uint32_t cp : codePoints(s)) {
    if (cp == '"') out += "\\\"";
    else if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20) escape16(out, cp);
    else if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x10000) escape16(out, cp);
    else {
      uint32_t v = cp - 0x10000;
      escape16(out, 0xD800 + (v >> 10));
      escape16(out, 0xDC00 + (v & 0x3FF));
    }
  }
  return out + "\"";
}

// ---------------------------------------------------------------------------------------------
// Fixed material.

const std::vector<std::string> kFunctionWords = {
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "with", "as", "was", "on", "be",
    "at", "by", "this", "have", "from", "or", "an", "but", "not", "are", "we", "you", "they", "he",
    "she", "will", "can", "all", "there", "their", "which", "one", "would", "what", "about", "if",
    "my", "your", "when", "please", "me", "I", "our", "how", "time", "new", "get", "set", "find",
    "send", "call", "weather", "today", "tomorrow", "morning", "evening", "message", "meeting",
    "remind", "open", "play", "music", "show", "list", "add", "book", "flight", "hotel", "order",
    "price", "check", "turn", "light", "alarm", "timer", "email", "note", "search", "news", "city",
    "could", "should", "some", "more", "than", "then", "also", "into", "over", "after", "before",
    "just", "like", "make", "take", "know", "see", "use", "work", "day", "week", "year", "people",
    "good", "first", "last", "long", "great", "little", "own", "other", "old", "right", "big",
    "high", "different", "small", "large", "next", "early", "young", "important", "few", "public"};

const std::vector<std::string> kOnsets = {"",   "b",  "c",  "d",  "f",  "g",  "h",  "j",  "k",
                                          "l",  "m",  "n",  "p",  "r",  "s",  "t",  "v",  "w",
                                          "z",  "br", "cr", "dr", "fl", "gr", "pl", "pr", "st",
                                          "str", "th", "sh", "ch", "tr", "sp", "sl", "cl", "qu"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y",
                                          "ee", "oo", "au", "ie"};
const std::vector<std::string> kCodas = {"", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "rk",
                                         "ng", "ck", "x", "th", "ld", "mp"};
const std::vector<std::string> kSuffixes = {"", "", "", "", "ing", "ed", "er", "ly", "tion", "ment",
                                            "ness", "s", "able", "ous", "ity", "ive", "al", "ist"};

const std::vector<std::string> kAccented = {
    "café", "naïve", "résumé", "façade", "jalapeño", "Zürich", "München", "São Paulo", "Kraków",
    "Ångström", "déjà vu", "piñata", "smörgåsbord", "crème brûlée", "Besançon", "Dvořák", "Łódź",
    "Ελλάδα", "Москва", "København", "Reykjavík", "Málaga", "Curaçao", "Tromsø", "Gdańsk", "señor",
    "über", "naïveté", "fiancée", "entrée", "Île-de-France", "Württemberg", "Bogotá", "Düsseldorf",
    "coöperate", "Straße", "Ærø", "İstanbul", "Türkçe", "Việt Nam", "Hà Nội", "Español", "niño",
    "Привет", "Спасибо", "καλημέρα", "שלום", "مرحبا", "नमस्ते", "ภาษาไทย"};

// Decomposed forms: a base letter followed by a combining mark (U+0301 acute, U+0300 grave,
// U+0308 diaeresis, U+0303 tilde, U+0327 cedilla).
const std::vector<std::string> kCombining = {
    "cafe\xCC\x81", "nai\xCC\x88ve", "re\xCC\x81sume\xCC\x81", "fac\xCC\xA7" "ade",
    "jalapen\xCC\x83o", "Zu\xCC\x88rich", "a\xCC\x80 la carte", "pin\xCC\x83" "ata",
    "e\xCC\x81" "cole", "Mu\xCC\x88nchen"};

const std::string kHan =
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她"
    "里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老"
    "从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机"
    "给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产"
    "入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提"
    "感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛"
    "林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权"
    "天气预报明天北京上海东京会议提醒闹钟音乐电话邮件消息日程航班酒店餐厅搜索打开关闭设置时间地点温度";
const std::string kKana =
    "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげご"
    "ざじずぜぞだぢづでどばびぶべぼぱぴぷぺぽアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホ"
    "マミムメモヤユヨラリルレロワヲンーッャュョ";
const std::string kHangul =
    "한국어안녕하세요감사합니다날씨오늘내일서울부산회의알림전화메시지음악시간장소온도예약호텔식당검색"
    "가나다라마바사아자차카타파하고노도로모보소오조초코토포호";

const std::vector<std::string> kEmoji = {
    "😀", "😂", "😍", "👍", "🙏", "🎉", "🔥", "❤\xEF\xB8\x8F", "✈\xEF\xB8\x8F", "☀\xEF\xB8\x8F",
    "🌧", "⏰", "📅", "📧", "🎵", "🚗", "🍕", "☕", "✅", "❌", "⭐", "💡", "📍", "🏠",
    // ZWJ sequences
    "👨\xE2\x80\x8D👩\xE2\x80\x8D👧\xE2\x80\x8D👦", "👩\xE2\x80\x8D💻", "🧑\xE2\x80\x8D🍳",
    "🏳\xEF\xB8\x8F\xE2\x80\x8D🌈",
    // skin tones
    "👍🏽", "👋🏻", "🙌🏿", "👏🏼", "🤝🏾",
    // flags (regional indicator pairs)
    "🇺🇸", "🇯🇵", "🇫🇷", "🇩🇪", "🇧🇷", "🇮🇳", "🇬🇧", "🇰🇷"};

const std::vector<std::string> kMonths = {"January", "February", "March",     "April",
                                          "May",     "June",     "July",      "August",
                                          "September", "October", "November", "December"};

const std::vector<std::string> kQueryTemplates = {
    "What's the weather in {place} {when}?", "Set an alarm for {time}.",
    "Remind me to {verb} the {noun} {when}.", "Send a message to {name} saying {quote}",
    "Book a table for {count} at {place} {when}.", "Play some {noun} music.",
    "Call {name}.", "Turn off the lights in the {noun}.", "How far is {place} from here?",
    "Create an event called {quote} on {date} at {time}.", "Convert {number} {unit} to {unit}.",
    "Search the web for {noun} {noun}.", "Email {name} about the {noun} meeting.",
    "Add {noun} to my shopping list.", "What time is it in {place}?",
    "Translate {quote} into {language}.", "Tell me a joke about {noun}.",
    "Set a timer for {count} minutes.", "Order {count} {noun} from {place}.",
    "Find flights from {place} to {place} on {date}."};

const std::vector<std::string> kLanguages = {"French", "German", "Spanish", "Japanese", "Korean",
                                             "Chinese", "Portuguese", "Italian", "Greek"};
const std::vector<std::string> kUnits = {"km", "miles", "kg", "pounds", "°C", "°F", "liters",
                                         "USD", "EUR", "JPY", "meters", "feet"};
const std::vector<std::string> kNames = {"Alice", "Bob", "Carol", "Dave", "Eve", "Mallory", "José",
                                         "Zoë", "Renée", "Björn", "Chloé", "Siobhán", "Nguyễn",
                                         "Søren", "Ana", "Mohammed", "Priya", "Wei", "Yuki", "Olu"};
const std::vector<std::string> kToolVerbs = {"get", "set", "send", "create", "delete", "search",
                                             "play", "book", "call", "list", "update", "find",
                                             "convert", "translate", "open", "cancel", "check"};
const std::vector<std::string> kToolNouns = {"weather", "alarm", "message", "event", "timer",
                                             "email", "music", "restaurant", "contact", "note",
                                             "reminder", "flight", "hotel", "currency", "light",
                                             "calendar", "route", "stock_price", "news", "recipe"};
const std::vector<std::string> kParamNames = {"location", "city", "time", "date", "recipient",
                                              "body", "title", "query", "unit", "count", "duration",
                                              "language", "text", "name", "amount", "from", "to",
                                              "room", "level", "genre", "limit", "start", "end"};

// The concatenation of parts. Elements of a braced list are evaluated left to right (unlike the
// operands of +), so cat({word(), " ", word()}) draws its random words in a fixed order on every
// compiler, and the corpus depends only on the seed.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += part;
  return out;
}

// ---------------------------------------------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed), lexiconZipf_(1) {
    buildLexicon();
    lexiconZipf_ = Zipf(lexicon_.size());
    hanZipf_ = Zipf(characters(kHan).size());
    han_ = characters(kHan);
    kana_ = characters(kKana);
    hangul_ = characters(kHangul);
  }

  // One line of the corpus (no newline), drawn from a mix of kinds.
  void emit(std::vector<std::string>& lines) {
    uint32_t kind = rng_.below(100);
    if (kind < 45) lines.push_back(prose());
    else if (kind < 60) transcript(lines);
    else if (kind < 66) lines.push_back(jsonLine());
    else if (kind < 72) lines.push_back(numbersLine());
    else if (kind < 80) lines.push_back(codeLine());
    else if (kind < 86) lines.push_back(accentLine());
    else if (kind < 93) lines.push_back(cjkLine());
    else if (kind < 97) lines.push_back(emojiLine());
    else lines.push_back(whitespaceLine());
  }

 private:
  void buildLexicon() {
    std::set<std::string> seen(kFunctionWords.begin(), kFunctionWords.end());
    lexicon_ = kFunctionWords;
    while (lexicon_.size() < 14000) {
      std::string w;
      int syllables = 1 + static_cast<int>(rng_.below(3));
      for (int s = 0; s < syllables; ++s)
        w += cat({rng_.pick(kOnsets), rng_.pick(kVowels), rng_.pick(kCodas)});
      w += rng_.pick(kSuffixes);
      if (w.size() >= 2 && seen.insert(w).second) lexicon_.push_back(w);
    }
  }

  const std::string& word() { return lexicon_[lexiconZipf_.draw(rng_)]; }

  std::string capitalised(std::string w) {
    if (!w.empty() && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 'a' + 'A');
    return w;
  }

  std::string sentence(int minWords, int maxWords) {
    int n = minWords + static_cast<int>(rng_.below(static_cast<uint32_t>(maxWords - minWords + 1)));
    std::string s = capitalised(word());
    for (int i = 1; i < n; ++i) {
      if (rng_.chance(6)) s += ",";
      s += " ";
      if (rng_.chance(3)) s += capitalised(word());
      else if (rng_.chance(2)) s += rng_.pick(kNames);
      else if (rng_.chance(1)) s += rng_.pick(kAccented);
      else s += word();
    }
    static const std::vector<std::string> ends = {".", ".", ".", ".", "?", "!", "...", ";", ":"};
    return s + rng_.pick(ends);
  }

  std::string prose() {
    std::string line = sentence(4, 22);
    if (rng_.chance(30)) {
      line += ' ';
      line += sentence(3, 14);
    }
    if (rng_.chance(8)) line = cat({"\"", line, "\" ", word(), " ", rng_.pick(kNames), "."});
    if (rng_.chance(5)) line += cat({" (", word(), " ", word(), ")"});
    return line;
  }

  std::string number() {
    switch (rng_.below(7)) {
      case 0: return std::to_string(rng_.below(10));
      case 1: return std::to_string(rng_.below(100));
      case 2: return std::to_string(rng_.below(10000));
      case 3: return cat({std::to_string(rng_.below(1000)), ".", std::to_string(rng_.below(100))});
      case 4: return cat({"-", std::to_string(rng_.below(500))});
      case 5: return cat({std::to_string(1 + rng_.below(9)), "e", std::to_string(rng_.below(20))});
      default: return std::to_string(rng_.below(1000000));
    }
  }

  std::string twoDigits(uint32_t v) {
    std::string s = std::to_string(v);
    if (v < 10) s.insert(s.begin(), '0');
    return s;
  }

  std::string date() {
    uint32_t y = 1990 + rng_.below(45), m = 1 + rng_.below(12), d = 1 + rng_.below(28);
    switch (rng_.below(4)) {
      case 0: return std::to_string(y) + "-" + twoDigits(m) + "-" + twoDigits(d);
      case 1: return twoDigits(d) + "/" + twoDigits(m) + "/" + std::to_string(y);
      case 2: return kMonths[m - 1] + " " + std::to_string(d) + ", " + std::to_string(y);
      default: return std::to_string(d) + " " + kMonths[m - 1].substr(0, 3) + " " + std::to_string(y);
    }
  }

  std::string timeOfDay() {
    uint32_t h = rng_.below(24), m = rng_.below(60);
    if (rng_.chance(50)) return twoDigits(h) + ":" + twoDigits(m);
    std::string s = std::to_string(1 + h % 12);
    if (m) {
      s += ':';
      s += twoDigits(m);
    }
    return s + (h < 12 ? " am" : " pm");
  }

  std::string place() {
    if (rng_.chance(40)) return rng_.pick(kAccented);
    std::string s = capitalised(word());
    if (rng_.chance(30)) {
      s += ' ';
      s += capitalised(word());
    }
    return s;
  }

  std::string query() {
    std::string t = rng_.pick(kQueryTemplates), out;
    for (size_t i = 0; i < t.size();) {
      if (t[i] != '{') {
        out += t[i++];
        continue;
      }
      size_t close = t.find('}', i);
      std::string slot = t.substr(i + 1, close - i - 1);
      i = close + 1;
      static const std::vector<std::string> whens = {"today", "tomorrow", "tonight", "this weekend",
                                                     "next Monday", "in an hour", "on Friday"};
      if (slot == "place") out += place();
      else if (slot == "when") out += rng_.pick(whens);
      else if (slot == "time") out += timeOfDay();
      else if (slot == "date") out += date();
      else if (slot == "name") out += rng_.pick(kNames);
      else if (slot == "count") out += std::to_string(1 + rng_.below(12));
      else if (slot == "number") out += number();
      else if (slot == "unit") out += rng_.pick(kUnits);
      else if (slot == "language") out += rng_.pick(kLanguages);
      else if (slot == "quote") out += cat({"\"", sentence(2, 7), "\""});
      else if (slot == "verb") out += word();
      else out += word();  // noun
    }
    if (rng_.chance(10)) out += " " + rng_.pick(kEmoji);
    return out;
  }

  // A compact JSON schema of one tool: name, description, parameters{type, properties, required}.
  struct Tool {
    std::string name, json;
    std::vector<std::string> params, types;
  };
  Tool tool() {
    Tool t;
    t.name = cat({rng_.pick(kToolVerbs), "_", rng_.pick(kToolNouns)});
    std::string props;
    uint32_t n = 1 + rng_.below(4);
    std::vector<std::string> required;
    for (uint32_t i = 0; i < n; ++i) {
      std::string p = rng_.pick(kParamNames);
      if (std::find(t.params.begin(), t.params.end(), p) != t.params.end()) continue;
      static const std::vector<std::string> types = {"string", "string", "integer", "number",
                                                     "boolean"};
      std::string type = rng_.pick(types);
      t.params.push_back(p);
      t.types.push_back(type);
      if (!props.empty()) props += ",";
      props += jsonString(p) + ":{\"type\":" + jsonString(type) +
               ",\"description\":" + jsonString(sentence(3, 9));
      if (type == "string" && rng_.chance(20)) {
        props += cat({",\"enum\":[", jsonString(word()), ",", jsonString(word()), ",",
                      jsonString(rng_.pick(kAccented)), "]"});
      }
      props += "}";
      if (rng_.chance(70)) required.push_back(jsonString(p));
    }
    std::string req;
    for (const auto& r : required) req += (req.empty() ? "" : ",") + r;
    t.json = "{\"name\":" + jsonString(t.name) + ",\"description\":" + jsonString(sentence(4, 12)) +
             ",\"parameters\":{\"type\":\"object\",\"properties\":{" + props + "},\"required\":[" +
             req + "]}}";
    return t;
  }

  std::string argumentValue(const std::string& type) {
    if (type == "integer") return std::to_string(rng_.below(1000));
    if (type == "number") return cat({std::to_string(rng_.below(100)), ".", std::to_string(rng_.below(10))});
    if (type == "boolean") return rng_.chance(50) ? "true" : "false";
    if (rng_.chance(25)) return jsonString(date());
    if (rng_.chance(25)) return jsonString(place());
    return jsonString(sentence(1, 5));
  }

  // A chat transcript in Needle's prompt format; each of its lines becomes a corpus line.
  void transcript(std::vector<std::string>& lines) {
    std::vector<Tool> tools;
    uint32_t n = 1 + rng_.below(3);
    for (uint32_t i = 0; i < n; ++i) tools.push_back(tool());
    std::string toolsJson = "[";
    for (size_t i = 0; i < tools.size(); ++i) toolsJson += (i ? "," : "") + tools[i].json;
    toolsJson += "]";

    std::string text;
    if (rng_.chance(25))
      text += cat({"<|im_start|>system\ndate: ", date(), "; locale: ",
                   rng_.chance(50) ? "en-US" : "fr-FR", "<|im_end|>\n"});
    text += "<|im_start|>user\n<tools>" + toolsJson + "</tools>\n" + query() +
            "<|im_end|>\n<|im_start|>assistant\n";
    if (rng_.chance(30)) text += "<think>" + sentence(5, 16) + "</think>\n";
    if (rng_.chance(10)) {
      text += "<tool_call>[]</tool_call><|im_end|>";
    } else {
      const Tool& t = rng_.pick(tools);
      std::string args;
      for (size_t i = 0; i < t.params.size(); ++i)
        args += std::string(i ? "," : "") + jsonString(t.params[i]) + ":" + argumentValue(t.types[i]);
      text += "<tool_call>[{\"name\":" + jsonString(t.name) + ",\"arguments\":{" + args +
              "}}]</tool_call><|im_end|>";
      if (rng_.chance(20))
        text += "\n<tool_result>{\"status\":\"ok\",\"value\":" + argumentValue("string") +
                "}</tool_result>";
    }
    size_t start = 0;
    while (start <= text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      if (nl > start) lines.push_back(text.substr(start, nl - start));
      start = nl + 1;
    }
  }

  std::string jsonLine() {
    std::string s = "{";
    uint32_t n = 1 + rng_.below(5);
    for (uint32_t i = 0; i < n; ++i) {
      if (i) s += rng_.chance(70) ? "," : ", ";
      s += cat({jsonString(rng_.pick(kParamNames)), rng_.chance(70) ? ":" : ": "});
      switch (rng_.below(5)) {
        case 0: s += number(); break;
        case 1: s += jsonString(cat({rng_.pick(kAccented), " ", word()})); break;
        case 2: s += jsonString(cat({rng_.pick(kEmoji), " ", sentence(1, 4)})); break;
        case 3: s += cat({"[", number(), ",", number(), "]"}); break;
        default: s += jsonString(cjkWord()); break;
      }
    }
    return s + "}";
  }

  std::string numbersLine() {
    std::string s;
    switch (rng_.below(4)) {
      case 0:
        s = cat({"On ", date(), " at ", timeOfDay(), ", ", word(), " ", number(), " ",
                 rng_.pick(kUnits), "."});
        break;
      case 1:
        s = cat({"Total: $", std::to_string(rng_.below(5000)), ".", twoDigits(rng_.below(100)), " (",
                 std::to_string(rng_.below(100)), "% ", word(), ")"});
        break;
      case 2:
        s = cat({"+1 (", std::to_string(200 + rng_.below(800)), ") ",
                 std::to_string(100 + rng_.below(900)), "-", std::to_string(1000 + rng_.below(9000))});
        break;
      default:
        for (int i = 0; i < 8; ++i) s += std::string(i ? " " : "") + number();
    }
    return s;
  }

  std::string identifier() {
    std::string a = word(), b = word();
    switch (rng_.below(3)) {
      case 0: return a + "_" + b;
      case 1: return a + capitalised(b);
      default: return a;
    }
  }

  std::string codeLine() {
    std::string indent = rng_.chance(50) ? std::string(4 * rng_.below(3), ' ') : std::string(rng_.below(3), '\t');
    std::string x = identifier(), y = identifier();
    switch (rng_.below(8)) {
      case 0: return indent + "for (int i = 0; i < " + x + ".size(); ++i) {";
      case 1: return indent + "def " + x + "(" + y + ", n=" + number() + "):";
      case 2: return indent + "const " + x + " = " + y + "(" + number() + ");";
      case 3: return indent + "if " + x + " == " + y + " and not " + identifier() + ":";
      case 4: return indent + "return " + x + "[" + std::to_string(rng_.below(10)) + "] + " + y + ";";
      case 5: return indent + "// " + sentence(3, 10);
      case 6: return indent + "print(f\"{" + x + "}: {" + y + "!r}\")";
      default: return indent + "let " + x + " = {" + y + ": " + number() + ", ok: true};";
    }
  }

  std::string accentLine() {
    std::string s = capitalised(word());
    uint32_t n = 3 + rng_.below(10);
    for (uint32_t i = 0; i < n; ++i) {
      s += " ";
      if (rng_.chance(35)) s += rng_.pick(kAccented);
      else if (rng_.chance(15)) s += rng_.pick(kCombining);
      else s += word();
    }
    return s + ".";
  }

  std::string cjkWord() {
    std::string w;
    uint32_t n = 1 + rng_.below(4);
    for (uint32_t i = 0; i < n; ++i) w += han_[hanZipf_.draw(rng_)];
    return w;
  }

  std::string cjkLine() {
    std::string s;
    uint32_t kind = rng_.below(3);
    uint32_t n = 5 + rng_.below(30);
    for (uint32_t i = 0; i < n; ++i) {
      if (kind == 0) s += han_[hanZipf_.draw(rng_)];
      else if (kind == 1) s += rng_.chance(60) ? rng_.pick(kana_) : han_[hanZipf_.draw(rng_)];
      else s += cat({rng_.pick(hangul_), rng_.chance(25) ? " " : ""});
      if (rng_.chance(4)) s += rng_.chance(50) ? "，" : " " + word() + " ";
    }
    return s + (kind == 2 ? "." : "。");
  }

  std::string emojiLine() {
    std::string s = sentence(2, 8);
    uint32_t n = 1 + rng_.below(4);
    for (uint32_t i = 0; i < n; ++i) s += cat({rng_.chance(50) ? " " : "", rng_.pick(kEmoji)});
    return s;
  }

  std::string whitespaceLine() {
    std::string s;
    uint32_t n = 2 + rng_.below(6);
    for (uint32_t i = 0; i < n; ++i) {
      s += word();
      switch (rng_.below(4)) {
        case 0: s += "\t"; break;
        case 1: s += std::string(2 + rng_.below(6), ' '); break;
        case 2: s += " \t "; break;
        default: s += " "; break;
      }
    }
    return (rng_.chance(50) ? "  " : "\t") + s;
  }

  Rng rng_;
  std::vector<std::string> lexicon_;
  Zipf lexiconZipf_, hanZipf_{1};
  std::vector<std::string> han_, kana_, hangul_;
};

}  // namespace

int main(int argc, char** argv) {
  return needle::cli::run("needle-corpus", kUsage, argc, argv, [](needle::cli::Args& args) {
    uint64_t seed = needle::cli::parseUint(args.option("--seed", "1"), "--seed");
    uint64_t bytes = needle::cli::parseUint(args.option("--bytes", "1500000"), "--bytes");
    std::string out = args.option("-o", args.option("--out", ""));
    args.finish();
    if (bytes == 0) throw needle::cli::UsageError("--bytes must be positive");

    Generator generator(seed);
    std::string text;
    std::vector<std::string> lines;
    while (text.size() < bytes) {
      lines.clear();
      generator.emit(lines);
      for (const auto& line : lines) text += line + "\n";
    }
    if (out.empty()) {
      if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
        throw needle::Error("stdout: write failed");
    } else {
      needle::cli::writeFile(out, text.data(), text.size());
    }
    return 0;
  });
}
