// grammar.cpp: the reply language compiled into nodes and tries, and the matcher that walks it
// one symbol at a time (docs/toolcall.md, "The call grammar").
//
// The matcher is a pushdown automaton with a fixed stack of Frames. Each frame matches one grammar
// node: the reply, the CALLS array, one CALL, an object, an array, a string, a number, a trie of
// fixed spellings (tool names, property keys, enum values, true/false/null) or free text. A frame
// pushes its child when the child's syntax starts, and the child pops itself when its last symbol
// is taken. Numbers (and enum numbers such as 1 next to 12) have no last symbol of their own: such
// a frame, when complete, "ends before" a symbol it cannot take, and the parent takes it.
#include "toolcall/grammar.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "tokenizer.hpp"
#include "toolcall/numeric.hpp"

namespace needle::toolcall {

using numeric::Int;

// ---------------------------------------------------------------------------------------------
// Symbols
// ---------------------------------------------------------------------------------------------

std::string symbolText(Symbol s) {
  if (isMarker(s)) return kChatMarkers[s - kFirstMarker];
  return std::string(1, static_cast<char>(s & 0xFF));
}

std::vector<Symbol> symbolsOf(std::string_view text) {
  std::vector<Symbol> out;
  for (size_t at = 0; at < text.size();) {
    size_t best = 0;
    Symbol marker = 0;
    for (uint32_t m = 0; m < kMarkerCount; ++m) {
      const size_t n = std::strlen(kChatMarkers[m]);
      if (n > best && text.compare(at, n, kChatMarkers[m]) == 0) {
        best = n;
        marker = static_cast<Symbol>(kFirstMarker + m);
      }
    }
    if (best) {
      out.push_back(marker);
      at += best;
    } else {
      out.push_back(static_cast<unsigned char>(text[at++]));
    }
  }
  return out;
}

std::string textOf(const std::vector<Symbol>& symbols) {
  std::string out;
  for (Symbol s : symbols) out += symbolText(s);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Span strings
// ---------------------------------------------------------------------------------------------

namespace {

// A character of a word: an ASCII letter or digit, or any other non-ASCII character than the
// punctuation and spaces of Latin-1 (U+0080..U+00BF, U+00D7, U+00F7), General Punctuation
// (U+2000..U+206F) and CJK Symbols and Punctuation (U+3000..U+303F): quotes such as “ ” « » and
// dashes end a word as ASCII punctuation does.
bool isWordChar(uint32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c <= 0xBF || c == 0xD7 || c == 0xF7) return false;
  return !(c >= 0x2000 && c <= 0x206F) && !(c >= 0x3000 && c <= 0x303F);
}
bool isSpaceByte(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Where the spans of a text may start and end (docs/toolcall.md §8.5), for requestSpans and the
// grammar's span trie alike.
class SpanRule {
 public:
  explicit SpanRule(std::string_view text) : text_(text), cut_(text.size() + 1, false), next_(text.size() + 1, 0) {
    bool lastWord = false;
    for (size_t i = 0; i < text.size();) {
      size_t n = json::utf8SequenceLength(text, i);
      const bool word = n > 0 && isWordChar(json::codePointAt(text, i));
      n = std::max<size_t>(n, 1);  // a byte of invalid UTF-8 is a character of its own, not of a word
      cut_[i] = i == 0 || !(lastWord && word);
      next_[i] = i + n;
      lastWord = word;
      i += n;
    }
    cut_[text.size()] = true;
  }
  // A span may start at byte a / end before byte b: a cut that splits no word, no white space inside.
  bool startsAt(size_t a) const { return a < text_.size() && cut_[a] && !isSpaceByte(byte(a)); }
  bool endsAt(size_t b) const { return b > 0 && cut_[b] && !isSpaceByte(byte(b - 1)); }
  // The byte after the character that starts at byte i.
  size_t next(size_t i) const { return next_[i]; }

 private:
  unsigned char byte(size_t i) const { return static_cast<unsigned char>(text_[i]); }
  std::string_view text_;
  std::vector<bool> cut_;      // cut_[i]: a character starts at i (or i is the end) and splits no word
  std::vector<size_t> next_;
};

}  // namespace

std::vector<std::string> requestSpans(std::string_view text) {
  const SpanRule rule(text);
  std::vector<std::string> spans;
  std::set<std::string_view> seen;
  for (size_t a = 0; a < text.size(); ++a) {
    if (!rule.startsAt(a)) continue;
    for (size_t b = rule.next(a); b <= text.size() && b - a <= kMaxSpanBytes; b = rule.next(b)) {
      if (rule.endsAt(b) && seen.insert(text.substr(a, b - a)).second) spans.emplace_back(text.substr(a, b - a));
      if (b == text.size()) break;
    }
  }
  return spans;
}

// ---------------------------------------------------------------------------------------------
// The compiled grammar
// ---------------------------------------------------------------------------------------------

namespace detail {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max() / 4;  // "cannot finish"; sums stay finite

enum class NodeKind : uint8_t { Reply, Calls, Call, Object, Array, String, Number, Trie, FreeText };
enum class TrieRole : uint8_t { Value, Key, Name };

struct TrieNode {
  uint32_t firstEdge = 0, edgeCount = 0;
  int32_t entry = -1;       // the entry whose spelling ends here
  uint64_t entryMask = 0;   // Key tries: the properties whose spelling passes through here
  uint32_t depth = 0;       // bytes from the root
  uint64_t minToEnd = 0;    // fewest symbols to the end of an entry, plus that entry's weight
};
struct TrieEdge {
  uint8_t byte;
  uint32_t child;
};

struct Prop {
  uint16_t value;       // the value's node
  uint32_t keyLength;   // bytes of the key's spelling, quotes included
  bool required;
};

struct Node {
  NodeKind kind = NodeKind::Reply;
  uint64_t minValue = 0;   // fewest symbols of a whole value of this node
  uint64_t maxCost = 0;    // no state inside a value of this node needs more to finish it
  // Object
  uint32_t firstProp = 0, propCount = 0;
  uint16_t keyNode = 0;    // the Trie node of its keys
  uint64_t requiredMask = 0, allMask = 0;
  // Array
  uint16_t item = 0;
  uint32_t minItems = 0, maxItems = 0, countCap = 0;  // counts saturate at countCap
  // String (and the count cap of its code points)
  uint32_t minLength = 0, maxLength = 0;
  // Number
  bool integer = false;
  Int lo = 0, hi = 0;  // scaled bounds (numeric.hpp)
  // Trie
  TrieRole role = TrieRole::Value;
  uint32_t trie = 0;   // root trie node
};

struct Tables {
  GrammarOptions options;
  uint64_t serial = 0;
  std::vector<Node> nodes;
  std::vector<Prop> props;
  std::vector<TrieNode> trie;
  std::vector<TrieEdge> edges;
  std::vector<uint16_t> toolArgs;  // each tool's parameters node
  uint16_t nameNode = 0;           // the Trie node of the tool names
  uint64_t bound = 0;              // completionBound

  // The child of trie node n along `byte`, or -1.
  int64_t edge(uint32_t n, uint8_t byte) const {
    const TrieNode& t = trie[n];
    const TrieEdge* first = edges.data() + t.firstEdge;
    const TrieEdge* last = first + t.edgeCount;
    const TrieEdge* it = std::lower_bound(first, last, byte, [](const TrieEdge& e, uint8_t b) { return e.byte < b; });
    return (it != last && it->byte == byte) ? static_cast<int64_t>(it->child) : -1;
  }
};

// Fixed node indices.
constexpr uint16_t kReplyNode = 0, kCallsNode = 1, kCallNode = 2, kThinkNode = 3, kTextNode = 4;

// The literal parts of a CALL.
constexpr std::string_view kCallHead = "{\"name\":";
constexpr std::string_view kCallMid = ",\"arguments\":";

}  // namespace detail

using namespace detail;

namespace {

std::atomic<uint64_t> nextSerial{1};

uint64_t saturatingMul(uint64_t a, uint64_t b) { return (a != 0 && b > kNever / a) ? kNever : std::min(a * b, kNever); }

// ---------------------------------------------------------------------------------------------
// Numbers: which completions of a prefix satisfy the bounds, and how many bytes they need
// ---------------------------------------------------------------------------------------------

Int floorDiv(Int x, Int d) {
  Int q = x / d;
  if (x % d != 0 && ((x < 0) != (d < 0))) --q;
  return q;
}

// Whether some multiple of `step` lies in [a, b].
bool multipleIn(Int a, Int b, Int step) {
  if (a > b) return false;
  return -floorDiv(-a, step) * step <= b;
}

// The number prefix a Number frame holds.
struct NumberPrefix {
  enum Phase : uint8_t { Start, Minus, Int, Dot, Frac };
  uint8_t phase = Start;
  bool negative = false;
  int64_t intPart = 0;      // the integer digits' value
  uint32_t frac = 0;        // the fraction digits' value
  uint32_t fracDigits = 0;
};

uint32_t digitCount(int64_t v) {
  uint32_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// Fewest bytes that turn completions with magnitudes in [magLo, magHi] (scaled) into a value in the
// node's range: `base` bytes already counted, then f fraction digits for the first f in [fFrom, 8]
// that has a multiple of 10^(8-f) in range, costing extra(f). kNever when none does.
template <typename Extra>
uint64_t cheapestFraction(const Node& n, bool negative, Int magLo, Int magHi, uint64_t base, uint32_t fFrom,
                          Extra extra) {
  const Int a = std::max(negative ? -magHi : magLo, n.lo);
  const Int b = std::min(negative ? -magLo : magHi, n.hi);
  if (a > b) return kNever;
  const uint32_t fMax = n.integer ? 0 : kMaxFractionDigits;
  for (uint32_t f = fFrom; f <= fMax; ++f)
    if (multipleIn(a, b, numeric::pow10(static_cast<int>(fMax - f)))) return base + extra(f);
  return kNever;
}

// Fewest bytes that finish the number (0 if it is complete and in range); kNever if nothing can.
uint64_t numberCost(const Node& n, const NumberPrefix& p) {
  const Int S = numeric::scaleOf(n.integer);
  const auto intExtra = [](uint32_t f) -> uint64_t { return f == 0 ? 0 : 1 + f; };
  uint64_t best = kNever;
  // Completions that still need all their integer digits: n digits, magnitudes [10^(n-1), 10^n) x S
  // (one digit: [0, 10) x S, the leading zero included).
  const auto freshDigits = [&](bool negative, uint64_t spent) {
    for (uint32_t digits = 1; digits <= kMaxIntegerDigits && spent + digits < best; ++digits) {
      const Int lo = digits == 1 ? 0 : numeric::pow10(static_cast<int>(digits - 1)) * S;
      const Int hi = numeric::pow10(static_cast<int>(digits)) * S - 1;
      best = std::min(best, cheapestFraction(n, negative, lo, hi, spent + digits, 0, intExtra));
    }
  };
  switch (p.phase) {
    case NumberPrefix::Start:
      freshDigits(false, 0);
      freshDigits(true, 1);
      return best;
    case NumberPrefix::Minus:
      freshDigits(true, 0);
      return best;
    case NumberPrefix::Int: {
      const Int D = p.intPart;
      if (D == 0) return cheapestFraction(n, p.negative, 0, S - 1, 0, 0, intExtra);  // "0": no more digits
      const uint32_t room = kMaxIntegerDigits - digitCount(p.intPart);
      for (uint32_t more = 0; more <= room && more < best; ++more) {
        const Int scale = numeric::pow10(static_cast<int>(more)) * S;
        best = std::min(best, cheapestFraction(n, p.negative, D * scale, (D + 1) * scale - 1, more, 0, intExtra));
      }
      return best;
    }
    case NumberPrefix::Dot:
      return cheapestFraction(n, p.negative, p.intPart * S, (p.intPart + 1) * S - 1, 0, 1,
                              [](uint32_t f) -> uint64_t { return f; });
    case NumberPrefix::Frac: {
      const Int unit = numeric::pow10(static_cast<int>(kMaxFractionDigits - p.fracDigits));
      const Int base = Int(p.intPart) * S + Int(p.frac) * unit;
      const uint32_t j = p.fracDigits;
      return cheapestFraction(n, p.negative, base, base + unit - 1, 0, j, [j](uint32_t f) -> uint64_t { return f - j; });
    }
  }
  return kNever;
}

NumberPrefix prefixOf(const Matcher::Frame& f) {
  NumberPrefix p;
  p.phase = f.phase;
  p.negative = (f.small & 0x80) != 0;
  p.fracDigits = f.small & 0x0F;
  p.intPart = static_cast<int64_t>(f.b);
  p.frac = f.a;
  return p;
}

void storePrefix(const NumberPrefix& p, Matcher::Frame* f) {
  f->phase = p.phase;
  f->small = static_cast<uint8_t>((p.negative ? 0x80 : 0) | p.fracDigits);
  f->b = static_cast<uint64_t>(p.intPart);
  f->a = p.frac;
}

// ---------------------------------------------------------------------------------------------
// UTF-8 inside strings and free text: the state is 0 between characters, else
// (bytes still expected << 3) | (the allowed range of the next byte).
// ---------------------------------------------------------------------------------------------

constexpr uint8_t kRangeLo[] = {0x80, 0xA0, 0x80, 0x90, 0x80};
constexpr uint8_t kRangeHi[] = {0xBF, 0xBF, 0x9F, 0xBF, 0x8F};

// Takes byte c; false if it breaks UTF-8. *starts is set when c begins a character.
bool utf8Next(uint8_t* state, uint8_t c, bool* starts) {
  if (*state != 0) {
    const uint8_t range = *state & 7, remaining = *state >> 3;
    if (c < kRangeLo[range] || c > kRangeHi[range]) return false;
    *state = remaining > 1 ? static_cast<uint8_t>((remaining - 1) << 3) : 0;
    *starts = false;
    return true;
  }
  *starts = true;
  if (c < 0x80) return true;
  if (c >= 0xC2 && c <= 0xDF) *state = 1 << 3;
  else if (c == 0xE0) *state = (2 << 3) | 1;
  else if (c == 0xED) *state = (2 << 3) | 2;
  else if (c >= 0xE1 && c <= 0xEF) *state = 2 << 3;
  else if (c == 0xF0) *state = (3 << 3) | 3;
  else if (c == 0xF4) *state = (3 << 3) | 4;
  else if (c >= 0xF1 && c <= 0xF3) *state = 3 << 3;
  else return false;
  return true;
}

uint32_t utf8Pending(uint8_t state) { return state >> 3; }

// ---------------------------------------------------------------------------------------------
// Free text must not spell a chat marker byte by byte: an Aho-Corasick automaton over the ten
// spellings, in which completing one is refused (state kSpelled).
// ---------------------------------------------------------------------------------------------

constexpr uint8_t kSpelled = 0xFF;

struct MarkerAutomaton {
  std::vector<std::array<uint8_t, 256>> next;

  MarkerAutomaton() {
    std::vector<std::map<uint8_t, uint8_t>> children(1);
    std::vector<bool> complete(1, false);
    for (const char* marker : kChatMarkers) {
      uint8_t state = 0;
      for (const char* c = marker; *c; ++c) {
        auto it = children[state].find(static_cast<uint8_t>(*c));
        if (it == children[state].end()) {
          children.emplace_back();
          complete.push_back(false);
          it = children[state].emplace(static_cast<uint8_t>(*c), static_cast<uint8_t>(children.size() - 1)).first;
        }
        state = it->second;
      }
      complete[state] = true;
    }
    // Breadth first: each state's transitions are its own children, else its failure state's.
    next.assign(children.size(), {});
    std::vector<uint8_t> fail(children.size(), 0), queue;
    for (int c = 0; c < 256; ++c) {
      auto it = children[0].find(static_cast<uint8_t>(c));
      next[0][c] = it == children[0].end() ? 0 : it->second;
      if (it != children[0].end()) queue.push_back(it->second);
    }
    for (size_t q = 0; q < queue.size(); ++q) {
      const uint8_t s = queue[q];
      complete[s] = complete[s] || complete[fail[s]];
      for (int c = 0; c < 256; ++c) {
        auto it = children[s].find(static_cast<uint8_t>(c));
        if (it == children[s].end()) {
          next[s][c] = next[fail[s]][c];
        } else {
          fail[it->second] = next[fail[s]][c];
          next[s][c] = it->second;
          queue.push_back(it->second);
        }
      }
    }
    for (auto& row : next)
      for (uint8_t& target : row)
        if (target != kSpelled && complete[target]) target = kSpelled;
  }
};

const MarkerAutomaton& markerAutomaton() {
  static const MarkerAutomaton automaton;
  return automaton;
}

// ---------------------------------------------------------------------------------------------
// Compiling tools into nodes and tries
// ---------------------------------------------------------------------------------------------

class Compiler {
 public:
  explicit Compiler(Tables* t) : t_(t) {}

  // A trie being built: nodes in the order they are made, so children come after their parents.
  struct TrieBuild {
    struct Building {
      std::vector<std::pair<uint8_t, uint32_t>> children;  // (byte, node), in the order made
      int32_t entry = -1;
      uint64_t mask = 0;
      uint32_t depth = 0;
    };
    std::vector<Building> nodes{1};
    // The child of node `at` along `byte`, made when missing.
    uint32_t child(uint32_t at, uint8_t byte) {
      for (const auto& [c, next] : nodes[at].children)
        if (c == byte) return next;
      const uint32_t next = static_cast<uint32_t>(nodes.size());
      nodes.push_back(Building{{}, -1, 0, nodes[at].depth + 1});
      nodes[at].children.emplace_back(byte, next);
      return next;
    }
  };

  // Writes a built trie into the tables (edges sorted by byte; minToEnd in one backward pass, children
  // coming after their parents) and returns its root. Entry i weighs weights[i].
  uint32_t emit(TrieBuild& b, const std::vector<uint64_t>& weights) {
    const uint32_t root = static_cast<uint32_t>(t_->trie.size());
    for (TrieBuild::Building& node : b.nodes) {
      std::sort(node.children.begin(), node.children.end());
      TrieNode n;
      n.entry = node.entry;
      n.entryMask = node.mask;
      n.depth = node.depth;
      n.firstEdge = static_cast<uint32_t>(t_->edges.size());
      n.edgeCount = static_cast<uint32_t>(node.children.size());
      for (const auto& [byte, child] : node.children) t_->edges.push_back(TrieEdge{byte, root + child});
      t_->trie.push_back(n);
    }
    for (size_t i = b.nodes.size(); i-- > 0;) {
      TrieNode& n = t_->trie[root + i];
      n.minToEnd = n.entry >= 0 ? weights[static_cast<size_t>(n.entry)] : kNever;
      for (uint32_t e = 0; e < n.edgeCount; ++e)
        n.minToEnd = std::min(n.minToEnd, 1 + t_->trie[t_->edges[n.firstEdge + e].child].minToEnd);
    }
    return root;
  }

  // A trie of spellings; entry i ends at the end of spellings[i] and weighs weights[i].
  uint32_t trie(const std::vector<std::string>& spellings, const std::vector<uint64_t>& weights, bool withMasks) {
    TrieBuild b;
    for (size_t i = 0; i < spellings.size(); ++i) {
      uint32_t at = 0;
      if (withMasks) b.nodes[0].mask |= uint64_t{1} << i;
      for (unsigned char c : spellings[i]) {
        at = b.child(at, c);
        if (withMasks) b.nodes[at].mask |= uint64_t{1} << i;
      }
      if (b.nodes[at].entry < 0) b.nodes[at].entry = static_cast<int32_t>(i);  // a repeated spelling keeps the first
    }
    return emit(b, weights);
  }

  uint16_t addNode(const Node& n) {
    if (t_->nodes.size() >= 0xFFFF) throw Error("call grammar: the tools need more than 65535 grammar nodes");
    t_->nodes.push_back(n);
    return static_cast<uint16_t>(t_->nodes.size() - 1);
  }

  // A trie node for a fixed list of values, written in their compact form.
  uint16_t valueTrie(const std::vector<json::Value>& values) {
    std::vector<std::string> spellings;
    uint64_t longest = 0;
    for (const json::Value& v : values) {
      spellings.push_back(json::compact(v));
      longest = std::max<uint64_t>(longest, spellings.back().size());
    }
    Node n;
    n.kind = NodeKind::Trie;
    n.role = TrieRole::Value;
    n.trie = trie(spellings, std::vector<uint64_t>(spellings.size(), 0), false);
    n.minValue = t_->trie[n.trie].minToEnd;
    n.maxCost = longest;
    return addNode(n);
  }

  // The node of a value of schema s, inside a container at `level`.
  uint16_t value(const Schema& s, uint32_t level) {
    const std::vector<json::Value> allowed = s.allowedValues();
    if (!allowed.empty()) return valueTrie(allowed);
    switch (s.type) {
      case Type::Object: return object(s, level + 1);
      case Type::Array: return array(s, level + 1);
      case Type::String: return spanString(s).value_or(string(s));
      case Type::Integer:
      case Type::Number: return number(s);
      case Type::Boolean: return valueTrie({json::Value::fromBool(true), json::Value::fromBool(false)});
      case Type::Null: return valueTrie({json::Value::null()});
    }
    return 0;
  }

  uint16_t object(const Schema& s, uint32_t level) {
    if (s.properties.size() > kMaxProperties)
      throw Error("call grammar: an object has more than " + std::to_string(kMaxProperties) + " properties");
    if (level > kMaxNesting)
      throw Error("call grammar: objects and arrays nest deeper than " + std::to_string(kMaxNesting) + " levels");
    Node n;
    n.kind = NodeKind::Object;
    n.firstProp = static_cast<uint32_t>(t_->props.size());
    n.propCount = static_cast<uint32_t>(s.properties.size());
    n.allMask = n.propCount == 64 ? ~uint64_t{0} : (uint64_t{1} << n.propCount) - 1;
    std::vector<Prop> props;
    std::vector<std::string> keys;
    for (size_t i = 0; i < s.properties.size(); ++i) {
      const Property& p = s.properties[i];
      keys.push_back(json::quote(p.name));
      props.push_back(Prop{value(p.schema, level), static_cast<uint32_t>(keys.back().size()), p.required});
      if (p.required) n.requiredMask |= uint64_t{1} << i;
    }
    // Properties of one object sit together (their values' own objects were added above).
    n.firstProp = static_cast<uint32_t>(t_->props.size());
    t_->props.insert(t_->props.end(), props.begin(), props.end());
    Node key;
    key.kind = NodeKind::Trie;
    key.role = TrieRole::Key;
    key.trie = trie(keys, std::vector<uint64_t>(keys.size(), 0), true);
    n.keyNode = addNode(key);
    // A whole object: its required members only. Anything inside: at most every member.
    uint64_t required = 0, requiredCount = 0, everything = 2;
    for (const Prop& p : props) {
      const Node& v = t_->nodes[p.value];
      if (p.required) {
        required += p.keyLength + 1 + v.minValue;
        ++requiredCount;
      }
      everything += 1 + p.keyLength + 1 + v.maxCost;
    }
    n.minValue = 1 + (requiredCount == 0 ? 1 : required + (requiredCount - 1) + 1);
    n.maxCost = everything;
    return addNode(n);
  }

  uint16_t array(const Schema& s, uint32_t level) {
    if (level > kMaxNesting)
      throw Error("call grammar: objects and arrays nest deeper than " + std::to_string(kMaxNesting) + " levels");
    if (s.items.size() != 1) throw Error("call grammar: an array schema needs one item schema");
    Node n;
    n.kind = NodeKind::Array;
    n.item = value(s.item(), level);
    n.minItems = s.minItems;
    n.maxItems = s.maxItems ? *s.maxItems : std::numeric_limits<uint32_t>::max();
    n.countCap = s.maxItems ? *s.maxItems : s.minItems;  // counts past this change nothing
    const Node& item = t_->nodes[n.item];
    const uint64_t per = 1 + item.minValue;
    n.minValue = 1 + (n.minItems == 0 ? 1 : saturatingMul(n.minItems, per));
    n.maxCost = item.maxCost + saturatingMul(n.minItems, per) + 2;
    return addNode(n);
  }

  uint16_t string(const Schema& s) {
    Node n;
    n.kind = NodeKind::String;
    n.minLength = s.minLength;
    n.maxLength = s.maxLength ? *s.maxLength : std::numeric_limits<uint32_t>::max();
    n.minValue = uint64_t{s.minLength} + 2;
    n.maxCost = uint64_t{s.minLength} + 12;  // a quote, a surrogate pair's escape, a character's bytes
    return addNode(n);
  }

  // With span strings (GrammarOptions::spanSource): a value trie of the spans that fit the string's
  // length limits; none when no span fits. The trie of all spans is built once and shared by every
  // string without limits.
  std::optional<uint16_t> spanString(const Schema& s) {
    if (!t_->options.spanSource) return std::nullopt;
    const uint32_t maxLength = s.maxLength ? *s.maxLength : std::numeric_limits<uint32_t>::max();
    const bool all = s.minLength == 0 && !s.maxLength;
    if (all && spanNode_) return spanNode_;
    uint64_t longest = 0;
    const std::optional<uint32_t> root = spanTrie(*t_->options.spanSource, s.minLength, maxLength, &longest);
    if (!root) return std::nullopt;
    Node n;
    n.kind = NodeKind::Trie;
    n.role = TrieRole::Value;
    n.trie = *root;
    n.minValue = t_->trie[n.trie].minToEnd;
    n.maxCost = longest;
    const uint16_t node = addNode(n);
    if (all) spanNode_ = node;
    return node;
  }

  // The trie of the spans of `text` (requestSpans) of minLength..maxLength code points, each spelled
  // as json::quote writes it (ASCII, like enum values), built a start at a time: one walk per start,
  // so at most kMaxSpanBytes characters' spellings (6 bytes for a \uXXXX) of nodes per start, however
  // many spans share it. Every entry is 0; `longest` gets the longest spelling. None when no span fits.
  std::optional<uint32_t> spanTrie(std::string_view text, uint32_t minLength, uint32_t maxLength, uint64_t* longest) {
    const SpanRule rule(text);
    // Each character's spelling once (json::quote's, without the quotes): a start's walk reads those of
    // up to kMaxSpanBytes characters, and every character is on the walks of the starts before it.
    std::vector<std::string> spelling(text.size());
    for (size_t i = 0; i < text.size(); i = rule.next(i)) {
      const std::string quoted = json::quote(text.substr(i, rule.next(i) - i));
      spelling[i] = quoted.substr(1, quoted.size() - 2);
    }
    TrieBuild b;
    bool any = false;
    for (size_t a = 0; a < text.size(); ++a) {
      if (!rule.startsAt(a)) continue;
      uint32_t at = b.child(0, '"');
      uint32_t points = 0;
      for (size_t i = a; i < text.size();) {
        const size_t end = rule.next(i);  // one character
        if (end - a > kMaxSpanBytes || ++points > maxLength) break;
        for (unsigned char c : spelling[i]) at = b.child(at, c);
        i = end;
        if (!rule.endsAt(i) || points < minLength) continue;
        const uint32_t close = b.child(at, '"');
        b.nodes[close].entry = 0;
        any = true;
        *longest = std::max<uint64_t>(*longest, b.nodes[close].depth);
      }
    }
    if (!any) return std::nullopt;
    return emit(b, {0});
  }

  uint16_t number(const Schema& s) {
    Node n;
    n.kind = NodeKind::Number;
    n.integer = s.type == Type::Integer;
    const numeric::Range r = numeric::rangeOf(s);
    n.lo = r.lo;
    n.hi = r.hi;
    n.minValue = numberCost(n, NumberPrefix{});
    n.maxCost = 1 + kMaxIntegerDigits + 1 + kMaxFractionDigits;
    if (n.minValue >= kNever) throw Error("call grammar: a number schema admits no value");
    return addNode(n);
  }

 private:
  Tables* t_;
  std::optional<uint16_t> spanNode_;  // the value trie node of all the span source's spans, once built
};

}  // namespace

Grammar::Grammar(const std::vector<Tool>& tools, GrammarOptions options) : tables_(std::make_unique<Tables>()) {
  Tables& t = *tables_;
  t.options = options;
  t.serial = nextSerial.fetch_add(1);
  Compiler c(&t);
  Node reply, calls, call, think, text;
  reply.kind = NodeKind::Reply;
  calls.kind = NodeKind::Calls;
  call.kind = NodeKind::Call;
  think.kind = text.kind = NodeKind::FreeText;
  for (const Node& n : {reply, calls, call, think, text}) c.addNode(n);

  std::vector<std::string> names;
  std::vector<uint64_t> weights;
  uint64_t widestCall = 0;
  for (const Tool& tool : tools) {
    const uint16_t args = c.object(tool.parameters, 1);
    t.toolArgs.push_back(args);
    names.push_back(json::quote(tool.name));
    // After the name: ,"arguments": then the arguments, then }.
    weights.push_back(kCallMid.size() + t.nodes[args].minValue + 1);
    widestCall = std::max<uint64_t>(widestCall, kCallHead.size() + names.back().size() + kCallMid.size() +
                                                    t.nodes[args].maxCost + 1);
  }
  Node name;
  name.kind = NodeKind::Trie;
  name.role = TrieRole::Name;
  name.trie = c.trie(names, weights, false);
  t.nameNode = c.addNode(name);
  // Think or text (3 bytes of a pending character, a marker), then the rest of the reply.
  t.bound = 16 + widestCall;
}

Grammar::~Grammar() = default;
Grammar::Grammar(Grammar&&) noexcept = default;
Grammar& Grammar::operator=(Grammar&&) noexcept = default;

const GrammarOptions& Grammar::options() const { return tables_->options; }

uint32_t Grammar::completionBound() const {
  return static_cast<uint32_t>(std::min<uint64_t>(tables_->bound, std::numeric_limits<uint32_t>::max()));
}

// ---------------------------------------------------------------------------------------------
// The matcher
// ---------------------------------------------------------------------------------------------

namespace {

// Phases of each frame kind; 0 is always the start.
enum ReplyPhase : uint8_t {
  R_Start, R_AfterSpace, R_Think, R_AfterThink, R_AfterThinkNewline, R_InCalls, R_AfterCalls, R_AfterCallsEnd,
  R_Text, R_Done
};
enum CallsPhase : uint8_t { C_Open, C_First, C_Item, C_AfterItem };
enum CallPhase : uint8_t { K_Head, K_Name, K_Mid, K_Args, K_Close };
enum ObjectPhase : uint8_t { O_Open, O_FirstKey, O_Key, O_Colon, O_Value, O_AfterValue, O_NextKey };
enum ArrayPhase : uint8_t { A_Open, A_First, A_Item, A_AfterItem };
enum StringPhase : uint8_t { S_Open, S_Body, S_Escape, S_Hex, S_LowSlash, S_LowU, S_LowHex };

int hexValue(Symbol s) {
  if (s >= '0' && s <= '9') return s - '0';
  if (s >= 'a' && s <= 'f') return s - 'a' + 10;
  if (s >= 'A' && s <= 'F') return s - 'A' + 10;
  return -1;
}

constexpr Symbol sym(Marker m) { return markerSymbol(m); }

// A string's code point count plus one. Past minLength the count matters only under a maxLength,
// so without one it stops there: long free strings then repeat the same state (masks memoise).
uint32_t countOne(const Node& n, uint32_t count) {
  return n.maxLength != std::numeric_limits<uint32_t>::max() ? count + 1 : std::min(count + 1, n.minLength);
}

}  // namespace

Matcher::Matcher(const Grammar& grammar) : t_(grammar.tables_.get()), serial_(t_->serial), depth_(0) {
  std::memset(frames_, 0, sizeof frames_);
  push(kReplyNode);
}

void Matcher::push(uint16_t node) {
  Frame& f = frames_[depth_++];
  f = Frame{0, 0, node, 0, 0};
  if (t_->nodes[node].kind == NodeKind::Trie) f.a = t_->nodes[node].trie;
}

// Pops the top frame, telling its parent what it matched (a trie's entry).
void Matcher::pop(uint32_t result) {
  --depth_;
  Frame& parent = frames_[depth_ - 1];
  const Node& n = t_->nodes[parent.node];
  switch (n.kind) {
    case NodeKind::Reply:
      if (parent.phase == R_InCalls) parent.phase = R_AfterCalls;
      break;  // think and text: the parent takes the marker that ended them
    case NodeKind::Calls: parent.phase = C_AfterItem; break;
    case NodeKind::Call:
      if (parent.phase == K_Name) {
        parent.a = result;
        parent.phase = K_Mid;
        parent.small = 0;
      } else {
        parent.phase = K_Close;
      }
      break;
    case NodeKind::Object:
      if (parent.phase == O_Key) {
        parent.a = result;
        parent.b |= uint64_t{1} << result;
        parent.phase = O_Colon;
      } else {
        parent.phase = O_AfterValue;
      }
      break;
    case NodeKind::Array:
      parent.a = std::min(parent.a + 1, n.countCap);
      parent.phase = A_AfterItem;
      break;
    default: break;
  }
}

bool Matcher::advance(Symbol s) {
  for (uint32_t guard = 0; guard < 4 * kMaxFrames; ++guard) {
    switch (step(s)) {
      case Step::Consumed: return true;
      case Step::Rejected: return false;
      case Step::EndsBefore: {
        const Frame& top = frames_[depth_ - 1];
        const Node& n = t_->nodes[top.node];
        pop(n.kind == NodeKind::Trie ? static_cast<uint32_t>(t_->trie[top.a].entry) : 0);
        break;
      }
      case Step::Retry: break;
    }
  }
  return false;
}

bool Matcher::accept(Symbol s) {
  if (s >= kSymbolCount) return false;
  const Matcher saved = *this;
  if (advance(s)) return true;
  *this = saved;
  return false;
}

bool Matcher::acceptText(std::string_view text) {
  for (Symbol s : symbolsOf(text))
    if (!accept(s)) return false;
  return true;
}

bool Matcher::done() const { return depth_ == 1 && frames_[0].phase == R_Done; }

// One symbol for the top frame.
Matcher::Step Matcher::step(Symbol s) {
  Frame& f = frames_[depth_ - 1];
  const Node& n = t_->nodes[f.node];
  const bool marker = isMarker(s);
  const uint8_t c = static_cast<uint8_t>(s & 0xFF);
  switch (n.kind) {
    case NodeKind::Reply: {
      // Where a tool call (or, with allowText, text) may begin.
      const auto callOrText = [&]() -> Step {
        if (s == sym(Marker::ToolCall)) {
          f.phase = R_InCalls;
          push(kCallsNode);
          return Step::Consumed;
        }
        if (!t_->options.allowText) return Step::Rejected;
        if (s == sym(Marker::ImEnd)) {
          f.phase = R_Done;
          return Step::Consumed;
        }
        if (marker) return Step::Rejected;
        f.phase = R_Text;
        push(kTextNode);
        return Step::Retry;
      };
      switch (f.phase) {
        case R_Start:
          if (s == ' ') {
            f.phase = R_AfterSpace;
            return Step::Consumed;
          }
          [[fallthrough]];
        case R_AfterSpace:
          if (s == sym(Marker::Think)) {
            f.phase = R_Think;
            push(kThinkNode);
            return Step::Consumed;
          }
          return callOrText();
        case R_Think:
          if (s != sym(Marker::ThinkEnd)) return Step::Rejected;
          f.phase = R_AfterThink;
          return Step::Consumed;
        case R_AfterThink:
          if (s == '\n') {
            f.phase = R_AfterThinkNewline;
            return Step::Consumed;
          }
          return callOrText();
        case R_AfterThinkNewline: return callOrText();
        case R_AfterCalls:
          if (s != sym(Marker::ToolCallEnd)) return Step::Rejected;
          f.phase = R_AfterCallsEnd;
          return Step::Consumed;
        case R_AfterCallsEnd:
        case R_Text:
          if (s != sym(Marker::ImEnd)) return Step::Rejected;
          f.phase = R_Done;
          return Step::Consumed;
        default: return Step::Rejected;
      }
    }

    case NodeKind::FreeText: {
      if (marker) return f.small == 0 ? Step::EndsBefore : Step::Rejected;
      bool starts = false;
      if (!utf8Next(&f.small, c, &starts)) return Step::Rejected;
      const uint8_t next = markerAutomaton().next[f.a][c];
      if (next == kSpelled) return Step::Rejected;
      f.a = next;
      return Step::Consumed;
    }

    case NodeKind::Calls:
      switch (f.phase) {
        case C_Open:
          if (s != '[') return Step::Rejected;
          f.phase = C_First;
          return Step::Consumed;
        case C_First:
          if (s == ']') {
            pop(0);
            return Step::Consumed;
          }
          if (s != '{' || t_->toolArgs.empty()) return Step::Rejected;
          f.phase = C_Item;
          push(kCallNode);
          return Step::Retry;
        case C_AfterItem:
          if (s == ']') {
            pop(0);
            return Step::Consumed;
          }
          if (s != ',') return Step::Rejected;
          f.phase = C_Item;
          push(kCallNode);
          return Step::Consumed;
        default: return Step::Rejected;
      }

    case NodeKind::Call:
      switch (f.phase) {
        case K_Head:
          if (s != static_cast<unsigned char>(kCallHead[f.small])) return Step::Rejected;
          if (++f.small == kCallHead.size()) {
            f.phase = K_Name;
            push(t_->nameNode);
          }
          return Step::Consumed;
        case K_Mid:
          if (s != static_cast<unsigned char>(kCallMid[f.small])) return Step::Rejected;
          if (++f.small == kCallMid.size()) {
            f.phase = K_Args;
            push(t_->toolArgs[f.a]);
          }
          return Step::Consumed;
        case K_Close:
          if (s != '}') return Step::Rejected;
          pop(0);
          return Step::Consumed;
        default: return Step::Rejected;
      }

    case NodeKind::Object:
      switch (f.phase) {
        case O_Open:
          if (s != '{') return Step::Rejected;
          f.phase = O_FirstKey;
          return Step::Consumed;
        case O_FirstKey:
        case O_NextKey:
          if (s == '"' && (n.allMask & ~f.b) != 0) {
            f.phase = O_Key;
            push(n.keyNode);
            return Step::Retry;
          }
          if (s == '}' && f.phase == O_FirstKey && (n.requiredMask & ~f.b) == 0) {
            pop(0);
            return Step::Consumed;
          }
          return Step::Rejected;
        case O_Colon:
          if (s != ':') return Step::Rejected;
          f.phase = O_Value;
          push(t_->props[n.firstProp + f.a].value);
          return Step::Consumed;
        case O_AfterValue:
          if (s == ',' && (n.allMask & ~f.b) != 0) {
            f.phase = O_NextKey;
            return Step::Consumed;
          }
          if (s == '}' && (n.requiredMask & ~f.b) == 0) {
            pop(0);
            return Step::Consumed;
          }
          return Step::Rejected;
        default: return Step::Rejected;
      }

    case NodeKind::Array:
      switch (f.phase) {
        case A_Open:
          if (s != '[') return Step::Rejected;
          f.phase = A_First;
          return Step::Consumed;
        case A_First:
          if (s == ']') {
            if (n.minItems != 0) return Step::Rejected;
            pop(0);
            return Step::Consumed;
          }
          if (n.maxItems == 0) return Step::Rejected;
          f.phase = A_Item;
          push(n.item);
          return Step::Retry;
        case A_AfterItem:
          if (s == ']') {
            if (f.a < n.minItems) return Step::Rejected;
            pop(0);
            return Step::Consumed;
          }
          if (s != ',' || f.a >= n.maxItems) return Step::Rejected;
          f.phase = A_Item;
          push(n.item);
          return Step::Consumed;
        default: return Step::Rejected;
      }

    case NodeKind::String: {
      if (marker) return Step::Rejected;
      switch (f.phase) {
        case S_Open:
          if (s != '"') return Step::Rejected;
          f.phase = S_Body;
          return Step::Consumed;
        case S_Body: {
          if (f.small == 0) {
            if (s == '"') {
              if (f.a < n.minLength) return Step::Rejected;
              pop(0);
              return Step::Consumed;
            }
            if (c < 0x20) return Step::Rejected;  // control characters only as escapes
            if (f.a >= n.maxLength) return Step::Rejected;
            if (s == '\\') {
              f.a = countOne(n, f.a);
              f.phase = S_Escape;
              return Step::Consumed;
            }
          }
          bool starts = false;
          if (!utf8Next(&f.small, c, &starts)) return Step::Rejected;
          if (starts) f.a = countOne(n, f.a);
          return Step::Consumed;
        }
        case S_Escape:
          if (s == 'u') {
            f.phase = S_Hex;
            f.small = 0;
            f.b = 0;
            return Step::Consumed;
          }
          if (!std::strchr("\"\\/bfnrt", c) || c == 0) return Step::Rejected;
          f.phase = S_Body;
          return Step::Consumed;
        case S_Hex: {
          const int h = hexValue(s);
          if (h < 0) return Step::Rejected;
          f.b = f.b * 16 + static_cast<uint64_t>(h);
          ++f.small;
          if (f.small == 2 && f.b >= 0xDC && f.b <= 0xDF) return Step::Rejected;  // a lone low surrogate
          if (f.small < 4) return Step::Consumed;
          f.small = 0;
          f.phase = (f.b >= 0xD800 && f.b <= 0xDBFF) ? S_LowSlash : S_Body;
          return Step::Consumed;
        }
        case S_LowSlash:
          if (s != '\\') return Step::Rejected;
          f.phase = S_LowU;
          return Step::Consumed;
        case S_LowU:
          if (s != 'u') return Step::Rejected;
          f.phase = S_LowHex;
          f.small = 0;
          return Step::Consumed;
        case S_LowHex: {
          const int h = hexValue(s);
          if (h < 0 || (f.small == 0 && h != 0xD) || (f.small == 1 && h < 0xC)) return Step::Rejected;
          if (++f.small == 4) {
            f.small = 0;
            f.phase = S_Body;
          }
          return Step::Consumed;
        }
        default: return Step::Rejected;
      }
    }

    case NodeKind::Number: {
      NumberPrefix p = prefixOf(f);
      const bool complete = (p.phase == NumberPrefix::Int || (p.phase == NumberPrefix::Frac && p.fracDigits > 0));
      const auto endsBefore = [&]() -> Step { return complete && numberCost(n, p) == 0 ? Step::EndsBefore : Step::Rejected; };
      if (marker) return endsBefore();
      NumberPrefix q = p;
      if (s >= '0' && s <= '9') {
        const uint32_t d = s - '0';
        switch (p.phase) {
          case NumberPrefix::Start:
          case NumberPrefix::Minus:
            q.phase = NumberPrefix::Int;
            q.intPart = d;
            break;
          case NumberPrefix::Int:
            if (p.intPart == 0 || digitCount(p.intPart) >= kMaxIntegerDigits) return endsBefore();
            q.intPart = p.intPart * 10 + d;
            break;
          case NumberPrefix::Dot:
          case NumberPrefix::Frac:
            if (p.fracDigits >= kMaxFractionDigits) return endsBefore();
            q.phase = NumberPrefix::Frac;
            q.frac = p.frac * 10 + d;
            ++q.fracDigits;
            break;
        }
      } else if (s == '-' && p.phase == NumberPrefix::Start) {
        q.phase = NumberPrefix::Minus;
        q.negative = true;
      } else if (s == '.' && p.phase == NumberPrefix::Int && !n.integer) {
        q.phase = NumberPrefix::Dot;
      } else {
        return endsBefore();
      }
      // A byte is allowed only if some completion of the longer prefix satisfies the bounds.
      if (numberCost(n, q) >= kNever) return endsBefore();
      storePrefix(q, &f);
      return Step::Consumed;
    }

    case NodeKind::Trie: {
      const TrieNode& here = t_->trie[f.a];
      const int64_t child = marker ? -1 : t_->edge(f.a, c);
      if (child < 0) return here.entry >= 0 ? Step::EndsBefore : Step::Rejected;
      const TrieNode& next = t_->trie[static_cast<size_t>(child)];
      if (n.role == TrieRole::Key && (next.entryMask & ~frames_[depth_ - 2].b) == 0) return Step::Rejected;
      f.a = static_cast<uint32_t>(child);
      if (next.entry >= 0 && next.edgeCount == 0) pop(static_cast<uint32_t>(next.entry));
      return Step::Consumed;
    }
  }
  return Step::Rejected;
}

// ---------------------------------------------------------------------------------------------
// minCompletion: the top frame's own cost, then each frame's cost once its child is done
// ---------------------------------------------------------------------------------------------

namespace {

// Required properties not yet seen: the symbols of "key":value for each, and how many.
struct Missing {
  uint64_t symbols = 0, count = 0;
};

Missing missingRequired(const Tables& t, const Node& n, uint64_t seen) {
  Missing m;
  for (uint32_t i = 0; i < n.propCount; ++i) {
    if (!((n.requiredMask & ~seen) >> i & 1)) continue;
    const Prop& p = t.props[n.firstProp + i];
    m.symbols += p.keyLength + 1 + t.nodes[p.value].minValue;
    ++m.count;
  }
  return m;
}

// From just after a member (or after "{" when `first`): the rest of the object.
uint64_t objectTail(const Tables& t, const Node& n, uint64_t seen, bool first) {
  const Missing m = missingRequired(t, n, seen);
  if (first) return m.count == 0 ? 1 : m.symbols + (m.count - 1) + 1;
  return m.symbols + m.count + 1;  // each as ,"key":value, then }
}

uint64_t stringCost(const Node& n, const Matcher::Frame& f) {
  uint64_t character = 0;  // bytes that finish the character in progress
  switch (f.phase) {
    case S_Open: return n.minValue;
    case S_Body: character = utf8Pending(f.small); break;
    case S_Escape: character = 1; break;
    case S_Hex: {
      const uint64_t left = 4 - f.small;
      const bool high = f.small >= 2 && (f.b >> (4 * (f.small - 2))) >= 0xD8 && (f.b >> (4 * (f.small - 2))) <= 0xDB;
      character = left + (high ? 6 : 0);
      break;
    }
    case S_LowSlash: character = 6; break;
    case S_LowU: character = 5; break;
    case S_LowHex: character = 4 - f.small; break;
  }
  const uint64_t more = f.a < n.minLength ? n.minLength - f.a : 0;
  return character + more + 1;
}

}  // namespace

// The cost of finishing the frame at `index` when it is the top. *skipParent is set when that cost
// already includes finishing its parent (key and name tries, whose choice the parent depends on).
uint64_t Matcher::ownCost(uint32_t index, bool* skipParent) const {
  const Frame& f = frames_[index];
  const Node& n = t_->nodes[f.node];
  const Tables& t = *t_;
  const uint64_t tail = t.options.allowText ? 1 : 5;  // <|im_end|>, or <tool_call>[]</tool_call><|im_end|>
  *skipParent = false;
  switch (n.kind) {
    case NodeKind::Reply:
      switch (f.phase) {
        case R_AfterCalls: return 2;
        case R_AfterCallsEnd:
        case R_Text: return 1;
        case R_Done: return 0;
        case R_Think: return 1 + tail;
        default: return tail;
      }
    case NodeKind::FreeText: return utf8Pending(f.small);
    case NodeKind::Calls: return f.phase == C_Open ? 2 : 1;
    case NodeKind::Call:
      switch (f.phase) {
        case K_Head: return (kCallHead.size() - f.small) + t.trie[t.nodes[t.nameNode].trie].minToEnd;
        case K_Mid: return (kCallMid.size() - f.small) + t.nodes[t.toolArgs[f.a]].minValue + 1;
        default: return 1;
      }
    case NodeKind::Object:
      switch (f.phase) {
        case O_Open: return n.minValue;
        case O_FirstKey: return objectTail(t, n, f.b, true);
        case O_Colon: return 1 + t.nodes[t.props[n.firstProp + f.a].value].minValue + objectTail(t, n, f.b, false);
        case O_NextKey: {
          const Missing m = missingRequired(t, n, f.b);
          if (m.count > 0) return m.symbols + (m.count - 1) + 1;
          uint64_t best = kNever;
          for (uint32_t i = 0; i < n.propCount; ++i) {
            if (f.b >> i & 1) continue;
            const Prop& p = t.props[n.firstProp + i];
            best = std::min(best, p.keyLength + 1 + t.nodes[p.value].minValue + 1);
          }
          return best;
        }
        default: return objectTail(t, n, f.b, false);
      }
    case NodeKind::Array: {
      const uint64_t per = 1 + t.nodes[n.item].minValue;
      switch (f.phase) {
        case A_Open: return n.minValue;
        case A_First: return n.minValue - 1;
        default: return saturatingMul(f.a < n.minItems ? n.minItems - f.a : 0, per) + 1;
      }
    }
    case NodeKind::String: return stringCost(n, f);
    case NodeKind::Number: return numberCost(n, prefixOf(f));
    case NodeKind::Trie: {
      const TrieNode& here = t.trie[f.a];
      if (n.role != TrieRole::Key) {
        *skipParent = n.role == TrieRole::Name;  // the weights hold the rest of the call
        return here.minToEnd;
      }
      // A key: the cheapest unseen property under this node, its value, and the rest of the object.
      *skipParent = true;
      const Frame& object = frames_[index - 1];
      const Node& o = t.nodes[object.node];
      const uint64_t rest = objectTail(t, o, object.b, false);
      uint64_t best = kNever;
      for (uint32_t i = 0; i < o.propCount; ++i) {
        if (!((here.entryMask & ~object.b) >> i & 1)) continue;
        const Prop& p = t.props[o.firstProp + i];
        const uint64_t value = t.nodes[p.value].minValue;
        const uint64_t saved = p.required ? 1 + p.keyLength + 1 + value : 0;  // no longer missing
        best = std::min(best, (p.keyLength - here.depth) + 1 + value + rest - saved);
      }
      return best;
    }
  }
  return kNever;
}

// The cost of finishing the frame at `index` once its child (the frame above it) is done.
uint64_t Matcher::costAfterChild(uint32_t index) const {
  const Frame& f = frames_[index];
  const Node& n = t_->nodes[f.node];
  const Tables& t = *t_;
  switch (n.kind) {
    case NodeKind::Reply:
      if (f.phase == R_Think) return 1 + (t.options.allowText ? 1 : 5);
      return f.phase == R_InCalls ? 2 : 1;  // </tool_call><|im_end|>, or <|im_end|> after text
    case NodeKind::Calls: return 1;
    case NodeKind::Call: return 1;
    case NodeKind::Object: return objectTail(t, n, f.b, false);
    case NodeKind::Array: {
      const uint64_t per = 1 + t.nodes[n.item].minValue;
      const uint64_t count = uint64_t{f.a} + 1;
      return saturatingMul(count < n.minItems ? n.minItems - count : 0, per) + 1;
    }
    default: return kNever;
  }
}

uint32_t Matcher::completionBound() const {
  return static_cast<uint32_t>(std::min<uint64_t>(t_->bound, std::numeric_limits<uint32_t>::max()));
}

uint32_t Matcher::minCompletion() const {
  if (done()) return 0;
  bool skipParent = false;
  uint64_t total = ownCost(depth_ - 1, &skipParent);
  const uint32_t below = depth_ - 1 - (skipParent ? 1 : 0);
  for (uint32_t i = below; i-- > 0;) total += costAfterChild(i);
  return static_cast<uint32_t>(std::min<uint64_t>(total, std::numeric_limits<uint32_t>::max()));
}

// ---------------------------------------------------------------------------------------------
// forced(), equality, hash
// ---------------------------------------------------------------------------------------------

std::vector<Symbol> Matcher::forcedSymbols() const {
  std::vector<Symbol> out;
  Matcher m = *this;
  while (!m.done() && out.size() < 4096) {
    uint32_t count = 0;
    Symbol only = 0;
    Matcher next = m;
    for (Symbol s = 0; s < kSymbolCount && count < 2; ++s) {
      Matcher trial = m;
      if (trial.advance(s)) {
        ++count;
        only = s;
        next = trial;
      }
    }
    if (count != 1) break;
    out.push_back(only);
    m = next;
  }
  return out;
}

std::string Matcher::forced() const { return textOf(forcedSymbols()); }

bool Matcher::operator==(const Matcher& other) const {
  return serial_ == other.serial_ && depth_ == other.depth_ &&
         std::memcmp(frames_, other.frames_, depth_ * sizeof(Frame)) == 0;
}

size_t Matcher::hash() const {
  uint64_t h = 1469598103934665603ull ^ serial_;  // FNV-1a over the live frames
  const auto mix = [&](const void* data, size_t size) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(&depth_, sizeof depth_);
  mix(frames_, depth_ * sizeof(Frame));
  return static_cast<size_t>(h ^ (h >> 29));
}

}  // namespace needle::toolcall
