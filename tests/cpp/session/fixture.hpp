// What the session tests share: micro.cact (d 64, 2 layers, window 64, context 2048, with probe
// heads) loaded once, its SessionModel, backends over the Reference, random tool sets, and the checks
// every finished reply must pass.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../rng.hpp"
#include "archive.hpp"
#include "toolcall/native.hpp"
#include "toolcall/session.hpp"
#include "toolcall/tokens.hpp"

namespace tc = needle::toolcall;

namespace session_test {

inline const std::string kModelsDir = NEEDLE_MODELS_DIR;
inline const std::string kBinDir = NEEDLE_BIN_DIR;

// Two tools of the session tests: a weather tool (a string, an enum) and a timer (a bounded integer).
inline const std::string kTools =
    R"([{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":)"
    R"({"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}},)"
    R"({"name":"set_timer","description":"Start a timer","parameters":{"type":"object","properties":)"
    R"({"minutes":{"type":"integer","minimum":1,"maximum":120}},"required":["minutes"]}}])";

// An archive read once per run (the Model points into the bytes, which live as long).
struct Loaded {
  std::vector<uint8_t> bytes;
  needle::Model model;
  std::unique_ptr<tc::SessionModel> session;
};

const Loaded& load(const std::string& name);
inline const Loaded& micro() { return load("micro.cact"); }

// 1 to 4 random tools with realistic names and parameter schemas of every supported kind (strings
// with lengths and enums, integers and numbers with bounds, booleans, arrays, nested objects), as
// JSON text that parseTools accepts.
std::string randomToolsJson(Rng& r, uint32_t minTools = 1, uint32_t maxTools = 4);
// Eight random tools renamed get_weather, set_timer, send_message, create_event, search_web,
// play_music, get_time and add_todo (more than the 5 that the contrastive head keeps), as JSON text.
std::string eightNamedToolsJson(Rng& r);
// A user request drawn from a small list.
std::string randomRequest(Rng& r);

// The native backend with the replies' text collected and every token's forced flag recorded.
struct RecordingBackend : tc::NativeBackend {
  RecordingBackend(const Loaded& l) : tc::NativeBackend(l.model, l.session->tokenizer()) {}
  void onText(std::string_view delta, uint32_t token, bool forcedToken) override {
    streamed += delta;
    if (token != UINT32_MAX) forced.push_back(forcedToken);
  }
  void clear() {
    streamed.clear();
    forced.clear();
  }
  std::string streamed;
  std::vector<bool> forced;
};

// Checks a finished constrained reply: success, ends with <|im_end|>, within its budget, the ids
// taken one by one by a fresh matcher of the offered tools, every call valid against its tool
// (toolcall::validate), the text equal to the streamed deltas and to the tokenizer's decode.
// Returns the number of calls.
size_t checkConstrainedReply(const Loaded& l, const tc::Request& request, const tc::Envelope& env,
                             const std::string& streamed);

// The envelope's deterministic part as JSON: everything but the timings, the memory and the reused
// prefix (the tests run one session for many requests and compare with fresh runs).
std::string outcome(const tc::Envelope& e);

// The offered tools of an envelope: all of them, or those named in tools_offered.
std::vector<tc::Tool> offeredTools(const tc::Request& request, const tc::Envelope& env);

}  // namespace session_test
