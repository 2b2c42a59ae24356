// needle-ref: runs the fp32 reference step (host/reference.cpp) on a prompt, greedily generates, and
// optionally writes every logits row (--logits-out) or the parity ladder dump (--dump).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "archive.hpp"
#include "cli.hpp"
#include "cq.hpp"
#include "dump.hpp"
#include "heads.hpp"
#include "reference.hpp"
#include "sampler.hpp"
#include "tokenizer.hpp"

using namespace needle;

namespace {

const char* kUsage =
    "usage: needle-ref --archive FILE (--prompt TEXT | --ids \"2 4 ...\") [--generate N]\n"
    "                  [--kv int8|f32] [--act f32|a8] [--sink N] [--logits-out FILE] [--dump FILE]\n"
    "                  [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "                  [--repeat-window N] [--seed S] [--heads]\n"
    "\n"
    "Runs the fp32 reference decode step of a Needle 2 archive over a prompt (teacher-forced), then\n"
    "generates with the sampler of the wasm engine (host/sampler: greedy unless --temperature > 0),\n"
    "and prints one JSON object on stdout:\n"
    "  {\"prompt_ids\":[...],\"generated_ids\":[...],\"text\":\"...\",\"prefill_ms\":..,\n"
    "   \"prefill_tokens\":..,\"decode_ms\":..,\"decode_tokens\":..,\"ms_per_token\":..}\n"
    "\"text\" (the decoded generated ids) is present when the archive has a tokenizer; \"heads\" with\n"
    "--heads.\n"
    "\n"
    "  --archive FILE     the .cact archive\n"
    "  --prompt TEXT      ids = [bos] + encode(TEXT) with the archive's tokenizer\n"
    "  --ids \"2 4 ...\"    the prompt as token ids (spaces or commas), BOS included\n"
    "  --generate N       generate up to N tokens (default 0); stops after EOS (the tokenizer's eos\n"
    "                     id, else 1) or when the session reaches max_seq_len\n"
    "  --kv int8|f32      KV cache: int8 per 32 with f32 scales (default), or f32 (exact oracle)\n"
    "  --act f32|a8       activations into CQ products: f32 (default) or int8 per 32 (the wasm engine)\n"
    "  --sink N           pin the first N positions in the KV cache (default 0)\n"
    "  --logits-out FILE  raw little-endian f32, vocab floats per row, one row per step() run: each\n"
    "                     prompt position in order, then each generated token that was fed back\n"
    "                     (the last generated token is not run, so it has no row)\n"
    "  --dump FILE        the parity ladder JSON of docs/dump-format.md\n"
    "  sampling           greedy (argmax, lowest id on ties) unless --temperature > 0; the same\n"
    "                     options, seed and prompt draw the same ids as node tools/needle-wasm.mjs:\n"
    "  --temperature T    softmax temperature (default 0: greedy)\n"
    "  --top-k K          keep the K most likely tokens (default 0: off)\n"
    "  --top-p P          keep the most likely tokens up to P of the probability (default 1: off)\n"
    "  --min-p P          keep tokens at least P times as likely as the best one (default 0: off)\n"
    "  --repeat-penalty R divide (multiply, when negative) the logits of the session's tokens by R\n"
    "                     (default 1: off)\n"
    "  --repeat-window N  the penalty looks at the last N tokens (default 0: the whole session)\n"
    "  --seed S           the generator's seed, 0 .. 2^64-1 (default 0)\n"
    "  --heads            pool every position run (prompt and fed-back tokens) with the archive's\n"
    "                     probe heads and print \"heads\":[{\"head\":H,\"kind\":\"contrastive\"|\n"
    "                     \"confidence\",\"output\":[...]},...] (f32 values as %.9g)\n"
    "  --help             this text\n"
    "\n"
    "Prefill skips the vocabulary projection before the last prompt token unless --dump or\n"
    "--logits-out needs every row. decode_tokens counts the generated tokens fed back through step();\n"
    "ms_per_token = decode_ms / decode_tokens. A prompt longer than max_seq_len is refused before any\n"
    "step. Exit status: 0 done, 1 error (bad archive, token past the vocabulary, prompt longer than\n"
    "max_seq_len, --heads without probe heads, ...), 2 usage error.\n";

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string idsJson(const std::vector<uint32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

std::string msJson(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

// An f32 that reads back as the same f32 (%.9g); JSON has no NaN or infinity, so those are null.
std::string floatJson(float v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// "heads":[{"head":0,"kind":"contrastive","output":[...]},...]
std::string headsJson(const HeadPooling& pooling, const Model& model) {
  std::string out = "[";
  for (size_t h = 0; h < pooling.heads(); ++h) {
    if (h) out += ',';
    out += "{\"head\":" + std::to_string(h) + ",\"kind\":\"" + headKindName(model.heads[h].kind) +
           "\",\"output\":[";
    const std::vector<float> values = pooling.output(h);
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      out += floatJson(values[i]);
    }
    out += "]}";
  }
  return out + "]";
}

int body(cli::Args& args) {
  const std::string archivePath = args.option("--archive");
  const bool hasPrompt = args.has("--prompt"), hasIds = args.has("--ids");
  const std::string promptText = args.option("--prompt");
  const std::string idsText = args.option("--ids");
  const uint64_t generate = cli::parseUint(args.option("--generate", "0"), "--generate");
  const std::string kv = args.option("--kv", "int8");
  const std::string act = args.option("--act", "f32");
  const uint64_t sink = cli::parseUint(args.option("--sink", "0"), "--sink");
  const std::string logitsPath = args.option("--logits-out");
  const std::string dumpPath = args.option("--dump");
  SamplerOptions sampling;
  sampling.temperature = cli::parseReal(args.option("--temperature", "0"), "--temperature");
  sampling.topK = cli::parseU32(args.option("--top-k", "0"), "--top-k");
  sampling.topP = cli::parseReal(args.option("--top-p", "1"), "--top-p");
  sampling.minP = cli::parseReal(args.option("--min-p", "0"), "--min-p");
  sampling.repetitionPenalty = cli::parseReal(args.option("--repeat-penalty", "1"), "--repeat-penalty");
  sampling.repetitionWindow = cli::parseU32(args.option("--repeat-window", "0"), "--repeat-window");
  const uint64_t seed = cli::parseSeed(args.option("--seed", "0"));
  const bool wantHeads = args.flag("--heads");
  args.finish();

  if (archivePath.empty()) throw cli::UsageError("--archive FILE is required");
  if (hasPrompt == hasIds) throw cli::UsageError("give exactly one of --prompt TEXT and --ids \"...\"");
  if (kv != "int8" && kv != "f32") throw cli::UsageError("--kv must be int8 or f32, not '" + kv + "'");
  if (act != "f32" && act != "a8") throw cli::UsageError("--act must be f32 or a8, not '" + act + "'");
  if (sink > 0xFFFFFFFFull) throw cli::UsageError("--sink " + std::to_string(sink) + " is too large");

  const std::vector<uint8_t> bytes = cli::readFile(archivePath);
  const Model model = readArchive(ByteView(bytes.data(), bytes.size()));
  std::optional<Tokenizer> tokenizer;
  if (!model.tokenizer.empty()) tokenizer = Tokenizer::fromBlob(model.tokenizer);

  std::vector<uint32_t> ids;
  if (hasPrompt) {
    if (!tokenizer)
      throw Error(archivePath + ": the archive has no tokenizer; give the prompt with --ids");
    ids.push_back(tokenizer->spec().bos_id);
    for (uint32_t id : tokenizer->encode(promptText)) ids.push_back(id);
  } else {
    ids = cli::parseIds(idsText);
    if (ids.empty()) throw cli::UsageError("--ids needs at least one token id");
  }
  const uint32_t eos = tokenizer ? tokenizer->spec().eos_id : 1;
  // Refused before any step: the whole prompt must fit the session.
  if (ids.size() > model.geo.max_seq_len)
    throw Error("prompt of " + std::to_string(ids.size()) + " tokens is longer than max_seq_len (" +
                std::to_string(model.geo.max_seq_len) + "); nothing was run");
  if (wantHeads && model.heads.empty())
    throw Error("--heads: " + archivePath + " has no probe heads");

  ReferenceOptions options;
  options.kvInt8 = kv == "int8";
  options.a8 = act == "a8";
  options.sink = static_cast<uint32_t>(sink);
  Reference ref(model, options);
  HeadPooling pooling(model.heads, model.geo.d_model);
  if (wantHeads) ref.setHeads(&pooling);
  std::vector<uint32_t> session;  // every token run so far (the repetition penalty's history)

  const bool wantDump = !dumpPath.empty(), wantRows = !logitsPath.empty();
  std::vector<float> rows;  // --logits-out, row after row
  Dump dump;
  Trace trace0;

  // Prefill: every prompt position, teacher-forced.
  auto start = std::chrono::steady_clock::now();
  std::vector<float> last;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool wantLogits = i + 1 == ids.size() || wantDump || wantRows;
    ref.setTrace(i == 0 && wantDump ? &trace0 : nullptr);
    const std::vector<float>& logits = ref.step(ids[i], wantLogits);
    session.push_back(ids[i]);
    if (!wantLogits) continue;
    if (wantRows) rows.insert(rows.end(), logits.begin(), logits.end());
    if (wantDump) dump.logits.push_back(logits);
    if (i + 1 == ids.size()) last = logits;
  }
  ref.setTrace(nullptr);
  const double prefillMs = msSince(start);

  // Decode: sample (greedy by default), fed back until N tokens, EOS, or a full session.
  Sampler sampler(model.geo.vocab, sampling, seed);
  std::vector<uint32_t> generated;
  uint32_t decodeSteps = 0;
  start = std::chrono::steady_clock::now();
  while (generated.size() < generate) {
    const uint32_t next = sampler.sample(last, session, nullptr);
    generated.push_back(next);
    if (next == eos || generated.size() == generate || ref.position() >= model.geo.max_seq_len) break;
    last = ref.step(next, true);
    session.push_back(next);
    ++decodeSteps;
    if (wantRows) rows.insert(rows.end(), last.begin(), last.end());
  }
  const double decodeMs = msSince(start);

  if (wantRows) cli::writeFile(logitsPath, rows.data(), rows.size() * sizeof(float));
  if (wantDump) {
    dump.archive = archivePath;
    dump.options = options;
    dump.geometry = model.geo;
    dump.ids = ids;
    dump.dequantTensor = "embedding";
    dump.dequantRow = ids[0];
    dump.dequantValues.resize(model.geo.d_model);
    dequantizeRow(model.embedding, ids[0], dump.dequantValues.data());
    const CqMatrix& m = model.layers.at(0).q_proj;
    dump.matvecTensor = "layers.0.q_proj";
    dump.matvecInput = dumpMatvecInput(m.cols);
    dump.matvecOutput.resize(m.rows);
    if (options.a8) cqMatvecA8(m, dump.matvecInput.data(), dump.matvecOutput.data());
    else cqMatvec(m, dump.matvecInput.data(), dump.matvecOutput.data());
    dump.position0 = trace0;
    dump.generated = generated;
    const std::string json = dumpJson(dump);
    cli::writeFile(dumpPath, json.data(), json.size());
  }

  std::string out = "{\"prompt_ids\":" + idsJson(ids) + ",\"generated_ids\":" + idsJson(generated);
  if (tokenizer) out += ",\"text\":" + jsonString(tokenizer->decode(generated));
  out += ",\"prefill_ms\":" + msJson(prefillMs) + ",\"prefill_tokens\":" + std::to_string(ids.size()) +
         ",\"decode_ms\":" + msJson(decodeMs) + ",\"decode_tokens\":" + std::to_string(decodeSteps) +
         ",\"ms_per_token\":" + msJson(decodeSteps ? decodeMs / decodeSteps : 0.0);
  if (wantHeads) out += ",\"heads\":" + headsJson(pooling, model);
  out += "}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run("needle-ref", kUsage, argc, argv, body); }
