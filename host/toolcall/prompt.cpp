// prompt.cpp: rendering the Needle 2 prompt (docs/toolcall.md, "The prompt").
#include "toolcall/prompt.hpp"

#include "toolcall/grammar.hpp"

namespace needle::toolcall {

using json::Value;

namespace {

// A copy of `object` with `first` keys in that order (those present), then the others as given.
Value ordered(const Value& object, std::initializer_list<const char*> first) {
  Value out = Value::object();
  for (const char* key : first)
    if (const Value* v = object.find(key)) out.members.push_back(json::Member{key, *v});
  for (const json::Member& m : object.members) {
    bool placed = false;
    for (const char* key : first) placed = placed || m.name == key;
    if (!placed) out.members.push_back(m);
  }
  return out;
}

// The first chat marker spelled in `text` that is not in `allowed`, or nullptr.
const char* strayMarker(std::string_view text, std::initializer_list<Marker> allowed = {}) {
  for (Symbol s : symbolsOf(text)) {
    if (!isMarker(s)) continue;
    bool ok = false;
    for (Marker m : allowed) ok = ok || s == markerSymbol(m);
    if (!ok) return kChatMarkers[s - kFirstMarker];
  }
  return nullptr;
}

// Error naming `what` when `text` spells a chat marker it may not.
void requireNoMarker(std::string_view text, const std::string& what, std::initializer_list<Marker> allowed = {}) {
  if (const char* marker = strayMarker(text, allowed))
    throw Error("prompt: " + what + " spells the chat marker " + marker +
                ", which would be read as the marker itself");
}

const char* roleName(Turn::Role role) {
  switch (role) {
    case Turn::Role::User: return "user";
    case Turn::Role::Assistant: return "assistant";
    case Turn::Role::ToolResult: return "tool result";
  }
  return "?";
}

}  // namespace

std::string toolsJson(const std::vector<Tool>& tools) {
  Value array = Value::array();
  for (const Tool& tool : tools) {
    Value t = ordered(tool.source, {"name", "description", "parameters"});
    for (json::Member& m : t.members)
      if (m.name == "parameters" && m.value.isObject()) m.value = ordered(m.value, {"type", "properties", "required"});
    array.items.push_back(std::move(t));
  }
  return json::compact(array);
}

std::string renderPrompt(const std::vector<Tool>& tools, std::string_view query, std::string_view system) {
  Turn turn;
  turn.text = std::string(query);
  return renderPrompt(tools, std::vector<Turn>{turn}, system);
}

std::string renderPrompt(const std::vector<Tool>& tools, const std::vector<Turn>& turns, std::string_view system) {
  if (turns.empty() || turns.front().role != Turn::Role::User)
    throw Error("prompt: the first turn must be the user's (it carries the tools)");
  if (turns.back().role == Turn::Role::Assistant)
    throw Error("prompt: the last turn is the assistant's; a user turn or a tool result must follow it");
  const std::string tools_json = toolsJson(tools);
  requireNoMarker(tools_json, "the tools JSON");
  requireNoMarker(system, "the system text");

  std::string out;
  if (!system.empty()) out += "<|im_start|>system\n" + std::string(system) + "<|im_end|>\n";
  for (size_t i = 0; i < turns.size(); ++i) {
    const Turn& turn = turns[i];
    const std::string what = "turn " + std::to_string(i + 1) + " (" + roleName(turn.role) + ")";
    switch (turn.role) {
      case Turn::Role::User:
        requireNoMarker(turn.text, what);
        out += "<|im_start|>user\n";
        if (i == 0) out += "<tools>" + tools_json + "</tools>\n";
        out += turn.text + "<|im_end|>\n";
        break;
      case Turn::Role::Assistant:
        requireNoMarker(turn.text, what, {Marker::Think, Marker::ThinkEnd, Marker::ToolCall, Marker::ToolCallEnd});
        out += "<|im_start|>assistant\n" + turn.text + "<|im_end|>\n";
        break;
      case Turn::Role::ToolResult: {
        const std::string result = json::compact(turn.result);
        requireNoMarker(result, what);
        out += "<|im_start|>user\n<tool_result>" + result + "</tool_result><|im_end|>\n";
        break;
      }
    }
  }
  return out + "<|im_start|>assistant\n";
}

std::vector<uint32_t> promptIds(const Tokenizer& tokenizer, std::string_view prompt) {
  std::vector<uint32_t> ids{tokenizer.spec().bos_id};
  const std::vector<uint32_t> text = tokenizer.encode(prompt);
  ids.insert(ids.end(), text.begin(), text.end());
  return ids;
}

uint32_t sinkLength(const std::vector<uint32_t>& ids, uint32_t toolsEndId) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == toolsEndId) return static_cast<uint32_t>(i + 1);
  throw Error("prompt: no </tools> token (id " + std::to_string(toolsEndId) + ") among the " +
              std::to_string(ids.size()) + " prompt ids");
}

}  // namespace needle::toolcall
