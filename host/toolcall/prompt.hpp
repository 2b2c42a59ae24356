// prompt.hpp: the Needle 2 prompt, for one request or a conversation with tool results
// (docs/toolcall.md, "The prompt").
//
//   [<|im_start|>system\n{system}<|im_end|>\n]<|im_start|>user\n<tools>{tools_json}</tools>\n{query}<|im_end|>\n<|im_start|>assistant\n
//
// tools_json is compact and ASCII-escaped (json::compact), each tool's keys in the order name,
// description, parameters, then any others as given; the parameters' keys in the order type,
// properties, required, then the others as given; everything deeper as given.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "json.hpp"
#include "tokenizer.hpp"
#include "toolcall/schema.hpp"

namespace needle::toolcall {

// One turn of a conversation after the system text.
struct Turn {
  enum class Role : uint8_t { User, Assistant, ToolResult };
  Role role = Role::User;
  std::string text;    // User: the message. Assistant: the reply as generated, without its <|im_end|>.
  json::Value result;  // ToolResult: what the tools returned, rendered compact and ASCII-escaped
};

// The tools block's JSON.
std::string toolsJson(const std::vector<Tool>& tools);

// The prompt for one request.
std::string renderPrompt(const std::vector<Tool>& tools, std::string_view query, std::string_view system = {});
// The prompt for a conversation. turns[0] is a user turn and carries the tools block; later turns
// follow in order (user: <|im_start|>user\n{text}<|im_end|>\n; assistant:
// <|im_start|>assistant\n{text}<|im_end|>\n; tool result:
// <|im_start|>user\n<tool_result>{result}</tool_result><|im_end|>\n); the prompt ends with
// <|im_start|>assistant\n. Error if turns is empty, does not start with a user turn or ends with an
// assistant turn, or if any text would spell a chat marker that is not its own (the system text,
// messages, tools and results may spell none; a reply only <think>, </think>, <tool_call> and
// </tool_call>).
std::string renderPrompt(const std::vector<Tool>& tools, const std::vector<Turn>& turns, std::string_view system = {});

// The token ids of a prompt: [BOS] + tokenizer.encode(prompt).
std::vector<uint32_t> promptIds(const Tokenizer& tokenizer, std::string_view prompt);
// The pinned prefix: positions 0 through the first </tools> token (`toolsEndId`), inclusive.
// Error if there is none.
uint32_t sinkLength(const std::vector<uint32_t>& ids, uint32_t toolsEndId);

}  // namespace needle::toolcall
