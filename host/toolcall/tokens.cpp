// tokens.cpp: the token table (each id as grammar symbols, and a byte trie of all of them) and the
// masks: a trie walk with a copy of the matcher per depth, memoised by matcher state
// (docs/toolcall.md, "Token masks").
#include "toolcall/tokens.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace needle::toolcall {

TokenTable::TokenTable(const Tokenizer& tokenizer) {
  const TokenizerSpec& spec = tokenizer.spec();
  if (!spec.byte_fallback)
    throw Error("token table: the tokenizer has no byte fallback, so not every reply can be spelled");
  std::fill(std::begin(markerIds_), std::end(markerIds_), UINT32_MAX);
  symbols_.resize(spec.pieces.size());

  // A map-based trie while building; flattened into preorder below.
  struct Building {
    std::map<uint8_t, std::unique_ptr<Building>> children;
    std::vector<uint32_t> tokens;
  };
  Building root;
  for (uint32_t id = 0; id < spec.pieces.size(); ++id) {
    const TokenizerPiece& piece = spec.pieces[id];
    if (piece.type == PieceType::Control || piece.type == PieceType::Unknown) continue;  // never allowed
    if (piece.type == PieceType::UserDefined) {
      bool isMarker = false;
      for (uint32_t m = 0; m < kMarkerCount; ++m) {
        if (piece.surface == kChatMarkers[m]) {
          symbols_[id] = {static_cast<Symbol>(kFirstMarker + m)};
          markerIds_[m] = id;
          isMarker = true;
        }
      }
      if (isMarker) continue;
    }
    const std::string bytes = tokenizer.pieceBytes(id);
    if (bytes.size() > 255)
      throw Error("token table: piece " + std::to_string(id) + " is " + std::to_string(bytes.size()) +
                  " bytes long, more than 255");
    Building* at = &root;
    for (unsigned char c : bytes) {
      symbols_[id].push_back(c);
      std::unique_ptr<Building>& child = at->children[c];
      if (!child) child = std::make_unique<Building>();
      at = child.get();
    }
    at->tokens.push_back(id);
    maxBytes_ = std::max<uint32_t>(maxBytes_, static_cast<uint32_t>(bytes.size()));
  }
  for (uint32_t m = 0; m < kMarkerCount; ++m)
    if (markerIds_[m] == UINT32_MAX)
      throw Error(std::string("token table: the tokenizer has no chat marker piece ") + kChatMarkers[m]);

  // Preorder: a node, then its subtrees by byte; subtreeEnd lets the walk skip a refused subtree.
  const auto flatten = [&](const auto& self, const Building& node, uint8_t byte, uint8_t depth) -> void {
    const uint32_t index = static_cast<uint32_t>(trie_.size());
    trie_.push_back(TrieNode{byte, depth, 0, static_cast<uint32_t>(trieTokens_.size()),
                             static_cast<uint32_t>(node.tokens.size())});
    trieTokens_.insert(trieTokens_.end(), node.tokens.begin(), node.tokens.end());
    for (const auto& [c, child] : node.children) self(self, *child, c, static_cast<uint8_t>(depth + 1));
    trie_[index].subtreeEnd = static_cast<uint32_t>(trie_.size());
  };
  flatten(flatten, root, 0, 0);
}

bool TokenTable::accept(Matcher& m, uint32_t id) const {
  if (id >= symbols_.size() || symbols_[id].empty()) return false;
  Matcher trial = m;
  for (Symbol s : symbols_[id])
    if (!trial.advance(s)) return false;
  m = trial;
  return true;
}

Masker::Masker(const TokenTable& table, size_t memoLimit) : table_(table), memoLimit_(memoLimit) {}

void Masker::walk(const Matcher& state, bool budget, uint32_t limit, uint32_t* bits,
                  std::vector<Raiser>* raisers) {
  std::memset(bits, 0, table_.maskWords() * sizeof(uint32_t));
  if (state.done()) return;
  const auto allow = [&](uint32_t id) { bits[id >> 5] |= uint32_t{1} << (id & 31); };
  const std::vector<TokenTable::TrieNode>& trie = table_.trie();
  const std::vector<uint32_t>& tokens = table_.trieTokens();
  if (stack_.size() < table_.maxTokenBytes() + 1) stack_.assign(table_.maxTokenBytes() + 1, state);
  stack_[0] = state;
  const uint32_t before = raisers ? state.minCompletion() : 0;
  // Records the allowed tokens that leave the reply longer to finish than `state` does: the only
  // ones a budget mask of this state can refuse (docs/toolcall.md, "Token masks").
  const auto noteRaiser = [&](uint32_t id, const Matcher& after) {
    const uint32_t cost = after.minCompletion();
    if (cost > before) raisers->push_back(Raiser{id, cost});
  };
  uint64_t visited = 0;
  for (uint32_t i = 1; i < trie.size();) {
    const TokenTable::TrieNode& node = trie[i];
    Matcher& m = stack_[node.depth];
    m = stack_[node.depth - 1];
    ++visited;
    if (!m.advance(node.byte)) {  // no token through here can be taken: skip the subtree
      i = node.subtreeEnd;
      continue;
    }
    if (node.tokenCount != 0 && (!budget || m.minCompletion() <= limit))
      for (uint32_t k = 0; k < node.tokenCount; ++k) {
        allow(tokens[node.firstToken + k]);
        if (raisers) noteRaiser(tokens[node.firstToken + k], m);
      }
    ++i;
  }
  stats_.nodesVisited += visited;
  for (uint32_t k = 0; k < kMarkerCount; ++k) {
    Matcher m = state;
    if (m.advance(static_cast<Symbol>(kFirstMarker + k)) && (!budget || m.minCompletion() <= limit)) {
      allow(table_.markerId(static_cast<Marker>(k)));
      if (raisers) noteRaiser(table_.markerId(static_cast<Marker>(k)), m);
    }
  }
}

const Masker::Entry& Masker::entry(const Matcher& state) {
  ++stats_.calls;
  const auto found = memo_.find(state);
  if (found != memo_.end()) {
    ++stats_.memoHits;
    return found->second;
  }
  if (memo_.size() >= memoLimit_) memo_.clear();
  Entry e;
  e.bits.resize(table_.maskWords());
  e.before = state.minCompletion();
  walk(state, false, 0, e.bits.data(), &e.raisers);
  return memo_.emplace(state, std::move(e)).first->second;
}

void Masker::mask(const Matcher& state, uint32_t* bits) {
  const Entry& e = entry(state);
  std::memcpy(bits, e.bits.data(), table_.maskWords() * sizeof(uint32_t));
}

void Masker::budgetMask(const Matcher& state, uint32_t remainingTokens, uint32_t* bits) {
  if (remainingTokens == 0) {
    std::memset(bits, 0, table_.maskWords() * sizeof(uint32_t));
    return;
  }
  const uint32_t limit = remainingTokens - 1;
  // No state needs more than completionBound() symbols, so with that many tokens left after this
  // one, every token the grammar allows still lets the reply finish.
  if (limit >= state.completionBound()) {
    mask(state, bits);
    return;
  }
  // A token that leaves minCompletion at or below the state's own is refused only when the state
  // itself cannot finish in time; otherwise the memoised mask less the raisers over the limit is the
  // budget mask.
  const Entry& e = entry(state);
  if (e.before > limit) {
    ++stats_.calls;
    walk(state, true, limit, bits, nullptr);
    return;
  }
  std::memcpy(bits, e.bits.data(), table_.maskWords() * sizeof(uint32_t));
  for (const Raiser& r : e.raisers)
    if (r.cost > limit) bits[r.id >> 5] &= ~(uint32_t{1} << (r.id & 31));
}

}  // namespace needle::toolcall
