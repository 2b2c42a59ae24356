// needle-run: one tool-call request (or a batch of them) on the C++ reference, with the session that
// the page runs in wasm (host/toolcall/session.hpp), printing the envelope JSON.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "archive.hpp"
#include "cli.hpp"
#include "json.hpp"
#include "toolcall/native.hpp"
#include "toolcall/session.hpp"

using namespace needle;
using namespace needle::toolcall;

namespace {

const char* kUsage =
    "usage: needle-run --archive FILE --tools TOOLS.json [--system TEXT] [--history FILE]\n"
    "                  [--seed S] [--temperature T] [--top-k K] [--top-p P] [--min-p P]\n"
    "                  [--repeat-penalty R] [--repeat-window N] [--max-tokens N] [--no-constrain]\n"
    "                  [--no-heads] [--no-call-bias B] [--no-call-doubt W] [--no-call-named V]\n"
    "                  [--steer-named] [--span-strings]\n"
    "                  [--act a8|f32] [--kv int8|f32]\n"
    "                  [--stream] \"request\"\n"
    "       needle-run --archive FILE --batch FILE [--act a8|f32] [--kv int8|f32]\n"
    "\n"
    "Runs one tool-call request on the C++ reference step with the tool-call session of the page\n"
    "(docs/toolcall.md, \"The session\"): the tools ranked by the contrastive head when there are more\n"
    "than 5, the prompt with the tools pinned as KV sinks, every reply token constrained to a valid\n"
    "call of the tools (forced fragments fed without sampling), the reply read back. Prints one JSON\n"
    "object, the envelope (docs/toolcall.md, \"The envelope\"): type, success, error, function_calls,\n"
    "reasoning, text, confidence, prompt_tokens, pinned_tokens, reused_prompt_tokens,\n"
    "generated_tokens, forced_tokens, reply_ids, tools_offered, time_to_first_token_ms, prefill_tps,\n"
    "decode_tps, constraint_ms, peak_memory_bytes. The defaults are the engine's numerics (A8, int8 KV), so for the same request\n"
    "and seed node tools/needle-wasm.mjs --tools gives the same calls, reply ids and confidence.\n"
    "\n"
    "  --archive FILE       the .cact archive (with a tokenizer)\n"
    "  --tools FILE         the tools: a JSON array of {name, description, parameters}\n"
    "  \"request\"            the user's request (may be left out with --history)\n"
    "  --system TEXT        the system turn (default: none)\n"
    "  --history FILE       earlier turns, a JSON array of {\"role\": \"user\"|\"assistant\"|\"tool\",\n"
    "                       \"content\": ...}: a tool's content is any JSON (the tool results)\n"
    "  --max-tokens N       reply tokens at most, sampled and forced (default 256)\n"
    "  --no-constrain       plain sampling: no mask, no forced fragments (the reply is still read)\n"
    "  --no-heads           do not rank tools or give confidence with the probe heads\n"
    "  --no-call-bias B     added to the log-odds of answering [] where the call list opens\n"
    "                       (docs/toolcall.md, \"The no-call bias\"; default 0, -100 .. 100)\n"
    "  --no-call-doubt W    the weight of the drawn call's doubt in that decision: calls withdrawn\n"
    "                       when margin + bias + W x doubt - V x named > 0 (the same section;\n"
    "                       default 0, 0 .. 100)\n"
    "  --no-call-named V    the credit in that decision of calls whose tools the request names (a\n"
    "                       name word in common; the same section; default 0, 0 .. 100)\n"
    "  --steer-named        the first call's name is the one offered tool the request names, when\n"
    "                       only one is named (the same section, \"The named steer\")\n"
    "  --span-strings       free string values are spans of the request (docs/toolcall.md,\n"
    "                       \"Span strings\")\n"
    "  sampling             greedy unless --temperature > 0, as needle-ref and the engine:\n"
    "  --temperature T, --top-k K, --top-p P, --min-p P, --repeat-penalty R, --repeat-window N\n"
    "  --seed S             the generator's seed, 0 .. 2^64-1 (default 0)\n"
    "  --act a8|f32         activations into CQ products (default a8, the engine's)\n"
    "  --kv int8|f32        the KV cache (default int8, the engine's)\n"
    "  --stream             also write the reply's text to stderr as it is generated\n"
    "  --batch FILE         one request JSON per line (docs/toolcall.md, \"The request\"; \"-\" reads\n"
    "                       stdin), one envelope per line on stdout; the archive is loaded once, and\n"
    "                       a request whose prompt starts with the last one's tools prefix (BOS,\n"
    "                       system turn, tools) restores it instead of running it again\n"
    "                       (reused_prompt_tokens). A refused line prints its error envelope and the\n"
    "                       run goes on.\n"
    "  --help               this text\n"
    "\n"
    "Exit status: 0 done (the envelope's \"success\" says whether the reply is a valid call), 1 error\n"
    "(malformed tools JSON, an unsupported schema keyword, a prompt that does not fit the context, a\n"
    "bad archive; with --batch: some line was refused or failed), 2 usage error.\n";

std::string readText(const std::string& path) {
  const std::vector<uint8_t> bytes = cli::readFile(path);
  return std::string(bytes.begin(), bytes.end());
}

// The request given by flags. Errors name the file they come from.
Request requestFromFlags(cli::Args& args, const std::string& toolsPath) {
  Request r;
  try {
    r.tools = parseTools(std::string_view(readText(toolsPath)));
  } catch (const Error& e) {
    throw Error(toolsPath + ": " + e.what());
  }
  r.system = args.option("--system");
  if (const std::string historyPath = args.option("--history"); !historyPath.empty()) {
    try {
      json::ParseOptions options;
      options.source = "history JSON";
      const json::Value history = json::parse(readText(historyPath), options);
      if (!history.isArray()) throw Error("history: expected an array of turns");
      for (size_t i = 0; i < history.items.size(); ++i)
        r.history.push_back(parseTurn(history.items[i], "history turn " + std::to_string(i + 1)));
    } catch (const Error& e) {
      throw Error(historyPath + ": " + e.what());
    }
  }
  const uint64_t maxTokens = cli::parseUint(args.option("--max-tokens", "256"), "--max-tokens");
  if (maxTokens < 1 || maxTokens > (1u << 20)) throw cli::UsageError("--max-tokens must be from 1 to 1048576");
  r.maxTokens = static_cast<uint32_t>(maxTokens);
  r.constrain = !args.flag("--no-constrain");
  r.useHeads = !args.flag("--no-heads");
  r.noCallBias = cli::parseReal(args.option("--no-call-bias", "0"), "--no-call-bias");
  if (std::fabs(r.noCallBias) > kNoCallBiasLimit)
    throw cli::UsageError("--no-call-bias must be from -" + std::to_string(kNoCallBiasLimit) + " to " +
                          std::to_string(kNoCallBiasLimit));
  r.noCallDoubt = cli::parseReal(args.option("--no-call-doubt", "0"), "--no-call-doubt");
  if (!(r.noCallDoubt >= 0 && r.noCallDoubt <= kNoCallDoubtLimit))
    throw cli::UsageError("--no-call-doubt must be from 0 to " + std::to_string(kNoCallDoubtLimit));
  r.noCallNamed = cli::parseReal(args.option("--no-call-named", "0"), "--no-call-named");
  if (!(r.noCallNamed >= 0 && r.noCallNamed <= kNoCallNamedLimit))
    throw cli::UsageError("--no-call-named must be from 0 to " + std::to_string(kNoCallNamedLimit));
  r.spanStrings = args.flag("--span-strings");
  r.steerNamed = args.flag("--steer-named");
  r.sampling.temperature = cli::parseReal(args.option("--temperature", "0"), "--temperature");
  r.sampling.topK = cli::parseU32(args.option("--top-k", "0"), "--top-k");
  r.sampling.topP = cli::parseReal(args.option("--top-p", "1"), "--top-p");
  r.sampling.minP = cli::parseReal(args.option("--min-p", "0"), "--min-p");
  r.sampling.repetitionPenalty = cli::parseReal(args.option("--repeat-penalty", "1"), "--repeat-penalty");
  r.sampling.repetitionWindow = cli::parseU32(args.option("--repeat-window", "0"), "--repeat-window");
  r.seed = cli::parseSeed(args.option("--seed", "0"));
  return r;
}

int body(cli::Args& args) {
  const std::string archivePath = args.option("--archive");
  const std::string toolsPath = args.option("--tools");
  const std::string batchPath = args.option("--batch");
  const std::string act = args.option("--act", "a8");
  const std::string kv = args.option("--kv", "int8");
  const bool stream = args.flag("--stream");
  if (archivePath.empty()) throw cli::UsageError("--archive FILE is required");
  if (act != "f32" && act != "a8") throw cli::UsageError("--act must be a8 or f32, not '" + act + "'");
  if (kv != "int8" && kv != "f32") throw cli::UsageError("--kv must be int8 or f32, not '" + kv + "'");
  if (batchPath.empty() == toolsPath.empty()) throw cli::UsageError("give --tools FILE (one request) or --batch FILE");

  Request single;
  if (!toolsPath.empty()) {
    const bool hasHistory = args.has("--history");
    single = requestFromFlags(args, toolsPath);
    const std::vector<std::string> rest = args.positionals();
    if (rest.size() > 1) throw cli::UsageError("give the request as one argument (quote it)");
    if (rest.size() == 1) single.request = rest[0];
    else if (!hasHistory) throw cli::UsageError("the request is missing");
  }
  args.finish();

  const std::vector<uint8_t> bytes = cli::readFile(archivePath);
  const Model model = readArchive(ByteView(bytes.data(), bytes.size()));
  std::unique_ptr<SessionModel> sessionModel;
  try {
    sessionModel = sessionModelOf(model);
  } catch (const Error& e) {
    throw Error(archivePath + ": " + e.what());
  }
  NativeOptions options;
  options.a8 = act == "a8";
  options.kvInt8 = kv == "int8";
  NativeBackend backend(model, sessionModel->tokenizer(), options);
  Session session(*sessionModel);

  if (batchPath.empty()) {
    if (stream)
      backend.text = [](std::string_view delta, uint32_t, bool) {
        std::fwrite(delta.data(), 1, delta.size(), stderr);
        std::fflush(stderr);
      };
    const Envelope env = session.complete(backend, single);  // a Refusal is an Error: exit 1
    if (stream) std::fputs("\n", stderr);
    std::fputs((envelopeJson(env) + "\n").c_str(), stdout);
    return 0;
  }

  // --batch: one request per line, one envelope per line.
  std::ifstream file;
  if (batchPath != "-") {
    file.open(batchPath);
    if (!file) throw Error(batchPath + ": cannot open");
  }
  std::istream& in = batchPath == "-" ? std::cin : file;
  std::string line;
  uint64_t lineNumber = 0;
  int status = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Envelope env;
    try {
      const Request request = parseRequest(line);
      env = session.complete(backend, request);
    } catch (const Error& e) {
      env = errorEnvelope(std::string(e.what()));
      std::fprintf(stderr, "needle-run: %s line %llu: %s\n", batchPath.c_str(),
                   static_cast<unsigned long long>(lineNumber), e.what());
      status = 1;
    }
    std::fputs((envelopeJson(env) + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) { return cli::run("needle-run", kUsage, argc, argv, body); }
