// tokens.hpp: which token ids the call grammar allows next (docs/toolcall.md, "Token masks").
//
// A TokenTable is built once per tokenizer: every id as its grammar symbols (a chat marker is one
// symbol; any other piece is the bytes Tokenizer::pieceBytes gives; control and unknown pieces are
// never allowed), and a trie of the byte strings. A Masker walks that trie with a copy of the
// matcher, pruning a subtree at its first refused byte, and memoises masks by matcher state.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer.hpp"
#include "toolcall/grammar.hpp"

namespace needle::toolcall {

class TokenTable {
 public:
  // Error unless the tokenizer has all ten chat markers (as USER_DEFINED pieces) and byte fallback
  // (a piece for every byte, which is what lets the budget rule always finish a reply).
  explicit TokenTable(const Tokenizer& tokenizer);

  uint32_t vocabSize() const { return static_cast<uint32_t>(symbols_.size()); }
  // uint32 words in a mask: bit i of word i / 32 stands for token id i.
  uint32_t maskWords() const { return (vocabSize() + 31) / 32; }
  // The symbols token `id` stands for; empty for ids the grammar never allows.
  const std::vector<Symbol>& symbols(uint32_t id) const { return symbols_.at(id); }
  uint32_t markerId(Marker m) const { return markerIds_[static_cast<uint8_t>(m)]; }
  // Feeds token `id`'s symbols to m, all or nothing. false (m unchanged) if any is refused.
  bool accept(Matcher& m, uint32_t id) const;

  // The byte trie in preorder (node 0 is the root): what Masker walks.
  struct TrieNode {
    uint8_t byte;          // the edge from the parent
    uint8_t depth;         // bytes from the root
    uint32_t subtreeEnd;   // one past the last node below this one
    uint32_t firstToken, tokenCount;  // ids whose bytes end here, in trieTokens()
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<uint32_t>& trieTokens() const { return trieTokens_; }
  uint32_t maxTokenBytes() const { return maxBytes_; }

 private:
  std::vector<std::vector<Symbol>> symbols_;
  uint32_t markerIds_[kMarkerCount];
  std::vector<TrieNode> trie_;
  std::vector<uint32_t> trieTokens_;
  uint32_t maxBytes_ = 0;
};

class Masker {
 public:
  // Keeps up to memoLimit memoised masks (then starts afresh). The table must outlive the masker.
  explicit Masker(const TokenTable& table, size_t memoLimit = 1024);

  // Sets bit i of `bits` (maskWords() words, all written) when every symbol of token i can be taken
  // from `state`, one after the other. Nothing is allowed once the reply is done.
  void mask(const Matcher& state, uint32_t* bits);
  // As mask, but only tokens after which the reply can still finish in the tokens left:
  // minCompletion(after) <= remainingTokens - 1. While remainingTokens exceeds the grammar's
  // completionBound() + 1 this is exactly mask(). Below that it is the memoised mask less the
  // state's "raisers" (tokens that lengthen the rest of the reply) whose cost is over the limit; only
  // a state that cannot itself finish in time takes a fresh walk. Since byte pieces exist, a token
  // that lowers minCompletion by one is always allowed, so a reply held to its budget always
  // finishes in it.
  void budgetMask(const Matcher& state, uint32_t remainingTokens, uint32_t* bits);

  struct Stats {
    uint64_t calls = 0, memoHits = 0, nodesVisited = 0;
  };
  const Stats& stats() const { return stats_; }
  void clearMemo() { memo_.clear(); }

 private:
  // An allowed token after which the reply needs more symbols to finish than before it.
  struct Raiser {
    uint32_t id, cost;  // cost: minCompletion after the token
  };
  // What is memoised per state: its mask, its own minCompletion, and its raisers.
  struct Entry {
    std::vector<uint32_t> bits;
    uint32_t before = 0;
    std::vector<Raiser> raisers;
  };
  const Entry& entry(const Matcher& state);
  // The trie walk; with a budget, tokens must also leave minCompletion <= limit. With `raisers`,
  // every allowed token whose minCompletion after it exceeds the state's is recorded there.
  void walk(const Matcher& state, bool budget, uint32_t limit, uint32_t* bits, std::vector<Raiser>* raisers);

  const TokenTable& table_;
  size_t memoLimit_;
  std::unordered_map<Matcher, Entry, MatcherHash> memo_;
  std::vector<Matcher> stack_;  // one matcher per trie depth
  Stats stats_;
};

}  // namespace needle::toolcall
