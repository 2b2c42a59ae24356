// reply.hpp: reading a reply back: its reasoning, its tool calls checked against the tools, or its
// free text (docs/toolcall.md, "Reading a reply").
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "json.hpp"
#include "toolcall/schema.hpp"

namespace needle::toolcall {

struct FunctionCall {
  std::string name;
  json::Value arguments;  // an object
};

struct Reply {
  enum class Kind : uint8_t { Calls, Text, Invalid };
  Kind kind = Kind::Invalid;   // Calls: a <tool_call> block was read; Text: free text; Invalid: neither
  std::string reasoning;       // the text inside <think>...</think>, exactly as written
  std::vector<FunctionCall> calls;  // Calls: every call that has a name and an arguments object
  std::string text;            // Text: everything before <|im_end|>
  bool finished = false;       // the reply ended with <|im_end|>
  std::string error;           // empty when the reply is well formed and every call is valid
};

// Reads reply text, chat markers spelled out (the concatenated pieceBytes of the generated ids, or
// Tokenizer::decode of them; one leading space is ignored). Never throws on any text: what is wrong
// goes into `error` (the first problem found), with as much of the reply read as possible.
// `allowText`: free text is a valid answer (a turn after a tool result).
Reply parseReply(std::string_view text, const std::vector<Tool>& tools, bool allowText = false);

}  // namespace needle::toolcall
