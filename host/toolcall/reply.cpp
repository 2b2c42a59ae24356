// reply.cpp: reading a reply back (docs/toolcall.md, "Reading a reply").
#include "toolcall/reply.hpp"

#include "toolcall/grammar.hpp"

namespace needle::toolcall {

using json::Value;

namespace {

constexpr std::string_view kThink = "<think>", kThinkEnd = "</think>", kToolCall = "<tool_call>",
                           kToolCallEnd = "</tool_call>", kImEnd = "<|im_end|>";

bool startsWith(std::string_view text, size_t at, std::string_view prefix) {
  return text.size() - at >= prefix.size() && text.compare(at, prefix.size(), prefix) == 0;
}

// Keeps the first problem found.
void note(Reply* r, const std::string& problem) {
  if (r->error.empty()) r->error = problem;
}

// One element of the CALLS array: {"name": ..., "arguments": {...}}, checked against the tools.
void readCall(const Value& v, size_t index, const std::vector<Tool>& tools, Reply* r) {
  const std::string numbered = "call " + std::to_string(index + 1);
  if (!v.isObject()) {
    note(r, numbered + ": expected an object, got " + json::kindName(v.kind));
    return;
  }
  const Value* name = v.find("name");
  if (!name || !name->isString()) {
    note(r, numbered + ": \"name\" is missing or not a string");
    return;
  }
  const std::string called = numbered + " (" + json::quoteReadable(name->text) + ")";
  const Value* arguments = v.find("arguments");
  if (!arguments || !arguments->isObject()) {
    note(r, called + ": \"arguments\" is missing or not an object");
    return;
  }
  r->calls.push_back(FunctionCall{name->text, *arguments});
  for (const json::Member& m : v.members)
    if (m.name != "name" && m.name != "arguments") note(r, called + ": unexpected key " + json::quoteReadable(m.name));
  const Tool* tool = nullptr;
  for (const Tool& t : tools)
    if (t.name == name->text) tool = &t;
  if (!tool) {
    note(r, numbered + ": unknown tool " + json::quoteReadable(name->text));
    return;
  }
  const std::string violation = validate(*arguments, tool->parameters);
  if (!violation.empty()) note(r, called + ": " + violation);
}

// After the reply's last part: <|im_end|>, then nothing.
void readEnd(std::string_view text, size_t at, Reply* r) {
  if (!startsWith(text, at, kImEnd)) {
    note(r, at == text.size() ? "the reply did not finish with <|im_end|>"
                              : "expected <|im_end|> at byte " + std::to_string(at));
    return;
  }
  r->finished = true;
  if (at + kImEnd.size() != text.size()) note(r, "unexpected text after <|im_end|>");
}

void readCalls(std::string_view text, size_t at, const std::vector<Tool>& tools, Reply* r) {
  r->kind = Reply::Kind::Calls;
  json::ParseOptions options;
  options.source = "the tool call JSON";
  size_t end = 0;
  Value calls;
  try {
    calls = json::parsePrefix(text.substr(at), &end, options);
  } catch (const Error& e) {
    note(r, e.what());
    r->finished = text.find(kImEnd, at) != std::string_view::npos;
    return;
  }
  if (!calls.isArray()) {
    note(r, std::string("the tool call is ") + json::kindName(calls.kind) + ", not an array of calls");
  } else {
    for (size_t i = 0; i < calls.items.size(); ++i) readCall(calls.items[i], i, tools, r);
  }
  at += end;
  while (at < text.size() && (text[at] == ' ' || text[at] == '\n' || text[at] == '\t' || text[at] == '\r')) ++at;
  if (!startsWith(text, at, kToolCallEnd)) {
    note(r, "the tool call is not closed by </tool_call>");
    r->finished = text.find(kImEnd, at) != std::string_view::npos;
    return;
  }
  readEnd(text, at + kToolCallEnd.size(), r);
}

}  // namespace

Reply parseReply(std::string_view text, const std::vector<Tool>& tools, bool allowText) {
  Reply r;
  size_t at = startsWith(text, 0, " ") ? 1 : 0;  // the dummy prefix
  if (startsWith(text, at, kThink)) {
    const size_t close = text.find(kThinkEnd, at + kThink.size());
    if (close == std::string_view::npos) {
      r.reasoning = std::string(text.substr(at + kThink.size()));
      note(&r, "<think> is not closed by </think>");
      return r;
    }
    r.reasoning = std::string(text.substr(at + kThink.size(), close - at - kThink.size()));
    at = close + kThinkEnd.size();
    if (startsWith(text, at, "\n")) ++at;
  }
  if (startsWith(text, at, kToolCall)) {
    readCalls(text, at + kToolCall.size(), tools, &r);
    return r;
  }
  // Anything else is free text up to <|im_end|>.
  const size_t end = text.find(kImEnd, at);
  r.text = std::string(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
  if (!allowText) {
    note(&r, "the reply has no <tool_call>");
    return r;
  }
  r.kind = Reply::Kind::Text;
  for (Symbol s : symbolsOf(r.text)) {
    if (isMarker(s)) {
      note(&r, std::string("the text spells the chat marker ") + symbolText(s));
      break;
    }
  }
  readEnd(text, end == std::string_view::npos ? text.size() : end, &r);
  return r;
}

}  // namespace needle::toolcall
