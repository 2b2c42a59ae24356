// grammar.hpp: the Needle 2 reply language as a deterministic matcher of symbols
// (docs/toolcall.md, "The call grammar").
//
// A reply is
//   [" "] ["<think>" THINK "</think>" ["\n"]] "<tool_call>" CALLS "</tool_call>" "<|im_end|>"
// where the leading space is the dummy-prefix U+2581 the model emits first, THINK is any valid UTF-8
// text without markers (spelled or atomic), and CALLS is compact JSON: [] or [CALL(,CALL)*] with
// CALL = {"name":<a tool name>,"arguments":<an object of that tool's parameters>}. With
// GrammarOptions::allowText, free text may stand in place of "<tool_call>" CALLS "</tool_call>".
//
// Symbols are bytes (0..255) and the ten chat markers (256..265): a marker is one atomic symbol, and
// the same characters spelled byte by byte are not a marker.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toolcall/schema.hpp"

namespace needle::toolcall {

using Symbol = uint16_t;

// The chat markers in tokenizer order (needle::kChatMarkers; ids 4..13 in the real tokenizer).
enum class Marker : uint8_t {
  ImStart, ImEnd, Think, ThinkEnd, Tools, ToolsEnd, ToolCall, ToolCallEnd, ToolResult, ToolResultEnd
};
constexpr uint32_t kMarkerCount = 10;
constexpr Symbol kFirstMarker = 256;
constexpr uint32_t kSymbolCount = 256 + kMarkerCount;

constexpr Symbol markerSymbol(Marker m) { return static_cast<Symbol>(kFirstMarker + static_cast<uint8_t>(m)); }
constexpr bool isMarker(Symbol s) { return s >= kFirstMarker && s < kSymbolCount; }
// A symbol as text: its byte, or the marker's spelling ("<tool_call>").
std::string symbolText(Symbol s);
// Text as symbols: each marker spelling becomes its marker (the longest that matches), every other
// byte stays a byte. This is how a reply written as text is read back.
std::vector<Symbol> symbolsOf(std::string_view text);
std::string textOf(const std::vector<Symbol>& symbols);

struct GrammarOptions {
  bool allowText = false;  // free text up to <|im_end|> instead of a tool call (after a tool result)
  // Span strings (docs/toolcall.md §8.5): when set, every free string value (a string schema with no
  // enum or const) must be one of requestSpans(*spanSource) that fits its length limits, spelled as
  // json::quote writes it (ASCII, as enum values are); a string schema that no span fits stays free.
  std::optional<std::string> spanSource;
};

// The longest span, in bytes: each place a span may start has at most 256 spans.
constexpr size_t kMaxSpanBytes = 256;
// The word-bounded spans of `text` (docs/toolcall.md §8.5): every text[a, b) of 1 to kMaxSpanBytes
// bytes whose first and last bytes are not white space and whose ends cut no word (no word character,
// an ASCII letter or digit or a non-ASCII character other than punctuation, on both sides of a cut).
// Each distinct span once, in order of first appearance. These are the spans the grammar's span trie
// spells (it walks the same cuts a start at a time; the grammar test checks that they agree).
std::vector<std::string> requestSpans(std::string_view text);

namespace detail {
struct Tables;
}

// The compiled reply language for one tool set. Immutable; matchers point into it, so it must
// outlive them (moving a Grammar is fine: its tables stay where they are).
class Grammar {
 public:
  friend class Matcher;
  // Error if the tools need more grammar than the matcher's fixed state can hold (never for tools
  // that parseTools accepted within its limits).
  explicit Grammar(const std::vector<Tool>& tools, GrammarOptions options = {});
  ~Grammar();
  Grammar(Grammar&&) noexcept;
  Grammar& operator=(Grammar&&) noexcept;

  const GrammarOptions& options() const;
  // No state's minCompletion() exceeds this (a loose bound, for the budget rule).
  uint32_t completionBound() const;

 private:
  std::unique_ptr<detail::Tables> tables_;
};

// Where a reply stands. A fixed-size value (no heap), cheap to copy, comparable and hashable, so
// that masks can be memoised by state. Only the live frames (the stack up to its depth) make up the
// state: copies, equality and the hash look at nothing else.
class Matcher {
 public:
  // At the start of a reply.
  explicit Matcher(const Grammar& grammar);
  // Copies move only the live frames (the mask's trie walk copies a matcher at every node).
  Matcher(const Matcher& other) { copyFrom(other); }
  Matcher& operator=(const Matcher& other) {
    copyFrom(other);
    return *this;
  }

  // Takes one symbol. false when the grammar does not allow it here; the matcher is then unchanged.
  bool accept(Symbol s);
  // Takes each symbol of symbolsOf(text) in turn; false at the first one refused, having taken the
  // ones before it.
  bool acceptText(std::string_view text);
  // The reply is complete (its <|im_end|> taken); nothing more is accepted.
  bool done() const;
  // The longest continuation that is the only one possible from here, as symbols and as text with
  // markers spelled out: `","arguments":{` after a tool name, `</tool_call><|im_end|>` after `]`.
  std::vector<Symbol> forcedSymbols() const;
  std::string forced() const;
  // The fewest symbols that finish a valid reply from here (0 when done). Each byte and marker is
  // one symbol, so a tokenizer with byte pieces can always finish within this many tokens.
  uint32_t minCompletion() const;
  // The grammar's completionBound(): no state's minCompletion() exceeds it.
  uint32_t completionBound() const;

  size_t hash() const;
  bool operator==(const Matcher& other) const;
  bool operator!=(const Matcher& other) const { return !(*this == other); }

  // Like accept, for callers that throw the matcher away on false (the mask's trie walk): on false
  // the state is unspecified.
  bool advance(Symbol s);

  // One level of the matcher's stack: which grammar node, where in it, and small per-kind values.
  struct Frame {
    uint64_t b;      // object: keys seen (bit i = property i); number: integer part; string: \u value
    uint32_t a;      // per kind: a count, a trie node, the current property or tool
    uint16_t node;   // grammar node
    uint8_t phase;   // position in the node's syntax
    uint8_t small;   // per kind: UTF-8 state, hex digits, literal position, fraction digits
  };
  static constexpr uint32_t kMaxFrames = 16;

 private:
  enum class Step : uint8_t { Consumed, Rejected, EndsBefore, Retry };
  Step step(Symbol s);
  void push(uint16_t node);
  void pop(uint32_t result);
  uint64_t ownCost(uint32_t index, bool* skipParent) const;
  uint64_t costAfterChild(uint32_t index) const;
  void copyFrom(const Matcher& other) {
    t_ = other.t_;
    serial_ = other.serial_;
    depth_ = other.depth_;
    for (uint32_t i = 0; i < depth_; ++i) frames_[i] = other.frames_[i];
  }

  const detail::Tables* t_;
  uint64_t serial_;  // which grammar: part of equality and hash, never dereferenced
  uint32_t depth_;
  Frame frames_[kMaxFrames];
};

struct MatcherHash {
  size_t operator()(const Matcher& m) const { return m.hash(); }
};

}  // namespace needle::toolcall
