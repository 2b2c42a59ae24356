// Tests of the dump JSON writer (host/dump.cpp) and of needle-ref end to end on a tiny archive
// written to a temporary file (no tokenizer, so the prompt is given as ids).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "archive.hpp"
#include "dump.hpp"
#include "reference.hpp"
#include "tokenizer.hpp"
#include "writer.hpp"

using namespace needle;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh path in the temporary directory (this process and a counter make it unique).
std::string tempPath(const std::string& suffix) {
  static int counter = 0;
  return (std::filesystem::temp_directory_path() /
          ("needle-ref-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + suffix))
      .string();
}

// Runs a shell command; returns its exit status and stdout.
int shell(const std::string& command, std::string& out) {
  const std::string outPath = tempPath(".out");
  const int status = std::system((command + " >" + outPath + " 2>/dev/null").c_str());
  out = slurp(outPath);
  std::remove(outPath.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "[a,b,c]" for ids.
std::string idList(const std::vector<uint32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

// A small byte-fallback tokenizer: the four specials, the 256 byte pieces, and a few merges.
TokenizerSpec smallTokenizer() {
  TokenizerSpec spec;
  auto add = [&](const std::string& surface, PieceType type, float score) {
    spec.pieces.push_back({surface, score, type});
  };
  add("<pad>", PieceType::Control, 0);
  add("</s>", PieceType::Control, 0);
  add("<s>", PieceType::Control, 0);
  add("<unk>", PieceType::Unknown, 0);
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", PieceType::Byte, 0);
  const std::string space = "\xe2\x96\x81";
  float score = -1;
  for (const std::string& piece : {space, std::string("h"), std::string("e"), std::string("l"),
                                   std::string("o"), space + "h", std::string("ll"), std::string("he"),
                                   std::string("hell"), space + "hell", space + "hello"})
    add(piece, PieceType::Normal, score--);
  return spec;
}

}  // namespace

TEST_CASE("jsonFloat writes %.9g and null for non-finite values", "[dump]") {
  CHECK(jsonFloat(1.0f) == "1");
  CHECK(jsonFloat(-0.5f) == "-0.5");
  CHECK(jsonFloat(0.1f) == "0.100000001");  // 9 digits: the f32 nearest 0.1, exactly recoverable
  CHECK(jsonFloat(22.627417f) == "22.6274166");
  CHECK(jsonFloat(1e-20f) == "9.99999968e-21");
  CHECK(jsonFloat(std::numeric_limits<float>::infinity()) == "null");
  CHECK(jsonFloat(-std::numeric_limits<float>::infinity()) == "null");
  CHECK(jsonFloat(std::numeric_limits<float>::quiet_NaN()) == "null");
  // Every f32 round-trips through its text.
  for (float x : {3.14159274f, -1.17549435e-38f, 3.40282347e38f, 1.40129846e-45f, 0.3f})
    CHECK(std::strtof(jsonFloat(x).c_str(), nullptr) == x);
}

TEST_CASE("jsonString escapes quotes, backslashes and control characters", "[dump]") {
  CHECK(jsonString("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(jsonString("line\nnext\ttab") == "\"line\\nnext\\ttab\"");
  CHECK(jsonString(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(jsonString("caf\xc3\xa9 \xe2\x96\x81") == "\"caf\xc3\xa9 \xe2\x96\x81\"");  // UTF-8 as is
}

TEST_CASE("dumpJson writes every field of docs/dump-format.md in order", "[dump]") {
  Dump d;
  d.archive = "build/models/tiny.cact";
  d.options.kvInt8 = true;
  d.options.a8 = true;
  d.options.sink = 4;
  d.geometry = presetGeometry("tiny");
  d.ids = {2, 4, 100};
  d.dequantRow = 2;
  d.dequantValues = {0.5f, -1.0f};
  d.matvecTensor = "layers.0.q_proj";
  d.matvecInput = dumpMatvecInput(3);
  d.matvecOutput = {1.0f, std::nanf("")};
  d.position0.embedding = {1.5f};
  d.position0.engramE = {{0.0f}, {0.0f}};
  d.position0.engramK = {{1.0f}, {2.0f}};
  d.position0.engramV = {{3.0f}, {4.0f}};
  d.position0.laneIn = {{1.0f, 2.0f}};
  d.position0.laneOut = {{3.0f, 4.0f}};
  d.logits = {{0.25f, 0.75f}, {1.0f, 2.0f}};
  d.generated = {17, 99};
  for (uint32_t i = 0; i < 3; ++i) CHECK(std::fabs(d.matvecInput[i] - std::sin(0.37 * i + 0.11)) < 1e-6);
  const std::string matvec = "\"matvec\":{\"tensor\":\"layers.0.q_proj\",\"input\":[" +
                             jsonFloat(d.matvecInput[0]) + "," + jsonFloat(d.matvecInput[1]) + "," +
                             jsonFloat(d.matvecInput[2]) + "],\"output\":[1,null]}";
  const std::string json = dumpJson(d);
  const std::string parts[] = {
      "\"format\":\"needle-dump/1\"",
      "\"archive\":\"build/models/tiny.cact\"",
      "\"options\":{\"kv\":\"int8\",\"act\":\"a8\",\"sink\":4}",
      "\"geometry\":{\"num_tensors\":0,\"codebook_len\":28,\"kv_window\":32,",
      "\"engram_orders\":[2,3,0,0],\"num_engram_sites\":2,\"engram_sites\":[1,3,0,0],\"rope_theta\":10000}",
      "\"ids\":[2,4,100]",
      "\"dequant_row\":{\"tensor\":\"embedding\",\"row\":2,\"values\":[0.5,-1]}",
      matvec,
      "\"position0\":{\"embedding\":[1.5]",
      "{\"site\":0,\"layer\":1,\"e\":[0],\"k\":[1],\"v\":[3]}",
      "{\"site\":1,\"layer\":3,\"e\":[0],\"k\":[2],\"v\":[4]}",
      "{\"in\":[1,2],\"out\":[3,4]}",
      "\"logits\":[\n[0.25,0.75],\n[1,2]]",
      "\"generated\":[17,99]"};
  size_t at = 0;
  for (const std::string& part : parts) {
    INFO(part);
    const size_t found = json.find(part, at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  CHECK(json.front() == '{');
  CHECK(json.substr(json.size() - 2) == "}\n");
}

TEST_CASE("needle-ref: logits rows, dump, greedy ids and exit codes", "[dump][tool]") {
  const std::string bin = std::string(NEEDLE_BIN_DIR) + "/needle-ref";
  if (!std::ifstream(bin)) {
    WARN("needle-ref is not built at " << bin << "; skipping");
    return;
  }
  std::vector<uint8_t> bytes = writeArchive(randomModel(presetGeometry("tiny"), 11, false), PackOptions{});
  const std::string archive = tempPath(".cact");
  {
    std::ofstream out(archive, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const Model model = readArchive(ByteView(bytes.data(), bytes.size()));
  const std::vector<uint32_t> ids = {2, 40, 7, 300, 12};
  const std::string logitsPath = archive + ".logits", dumpPath = archive + ".json";

  std::string out;
  REQUIRE(shell(bin + " --archive " + archive + " --ids '2 40 7 300 12' --generate 4 --kv f32 --act a8" +
                    " --sink 2 --logits-out " + logitsPath + " --dump " + dumpPath,
                out) == 0);

  // The same session in process: prompt rows, then one row per generated token fed back.
  ReferenceOptions o;
  o.kvInt8 = false;
  o.a8 = true;
  o.sink = 2;
  Reference ref(model, o);
  std::vector<float> rows, last;
  for (uint32_t id : ids) {
    last = ref.step(id, true);
    rows.insert(rows.end(), last.begin(), last.end());
  }
  std::vector<uint32_t> generated;
  for (int n = 0; n < 4; ++n) {
    const uint32_t next = static_cast<uint32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    generated.push_back(next);
    if (next == 1 || n == 3) break;
    last = ref.step(next, true);
    rows.insert(rows.end(), last.begin(), last.end());
  }
  const std::string written = slurp(logitsPath);
  REQUIRE(written.size() == rows.size() * sizeof(float));
  CHECK(std::memcmp(written.data(), rows.data(), written.size()) == 0);

  const std::string generatedJson = idList(generated);
  CHECK(out.find("{\"prompt_ids\":[2,40,7,300,12],\"generated_ids\":" + generatedJson) == 0);
  CHECK(out.find("\"prefill_tokens\":5") != std::string::npos);
  CHECK(out.find("\"text\"") == std::string::npos);  // no tokenizer in this archive

  const std::string dump = slurp(dumpPath);
  CHECK(dump.find("\"options\":{\"kv\":\"f32\",\"act\":\"a8\",\"sink\":2}") != std::string::npos);
  CHECK(dump.find("\"generated\":" + generatedJson) != std::string::npos);
  CHECK(dump.find("null") == std::string::npos);
  CHECK(dump.find("\"logits\":[\n[" + jsonFloat(rows[0]) + ",") != std::string::npos);

  // Exit codes: 2 for usage errors, 1 for errors in the run.
  CHECK(shell(bin + " --archive " + archive, out) == 2);                             // no prompt
  CHECK(shell(bin + " --archive " + archive + " --ids 2 --kv int4", out) == 2);      // bad --kv
  CHECK(shell(bin + " --archive " + archive + " --ids 2 --bogus", out) == 2);        // unknown option
  CHECK(shell(bin + " --archive " + archive + " --ids '2 512'", out) == 1);          // past the vocab
  CHECK(shell(bin + " --archive " + archive + " --prompt hello", out) == 1);         // no tokenizer
  CHECK(shell(bin + " --archive " + archive + ".missing --ids 2", out) == 1);        // no file
  CHECK(shell(bin + " --help", out) == 0);
  CHECK(out.find("--logits-out") != std::string::npos);

  for (const std::string& path : {archive, logitsPath, dumpPath}) std::remove(path.c_str());
}

TEST_CASE("needle-ref --prompt encodes with the archive's tokenizer and decodes the reply", "[dump][tool]") {
  const std::string bin = std::string(NEEDLE_BIN_DIR) + "/needle-ref";
  if (!std::ifstream(bin)) {
    WARN("needle-ref is not built at " << bin << "; skipping");
    return;
  }
  PackOptions pack;
  pack.tokenizer = smallTokenizer();
  std::vector<uint8_t> bytes = writeArchive(randomModel(presetGeometry("tiny"), 12, false), pack);
  const std::string archive = tempPath(".cact");
  {
    std::ofstream out(archive, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const Model model = readArchive(ByteView(bytes.data(), bytes.size()));
  const Tokenizer tok = Tokenizer::fromBlob(model.tokenizer);
  std::vector<uint32_t> ids = {2};
  for (uint32_t id : tok.encode("hello hello!")) ids.push_back(id);

  Reference ref(model, ReferenceOptions{});
  std::vector<float> last;
  for (uint32_t id : ids) last = ref.step(id, true);
  std::vector<uint32_t> generated;
  for (int n = 0; n < 3; ++n) {
    generated.push_back(static_cast<uint32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
    if (generated.back() == 1 || n == 2) break;
    last = ref.step(generated.back(), true);
  }
  const std::string idsJson = idList(ids), generatedJson = idList(generated);

  std::string out;
  REQUIRE(shell(bin + " --archive " + archive + " --prompt 'hello hello!' --generate 3", out) == 0);
  CHECK(out.find("{\"prompt_ids\":" + idsJson + ",\"generated_ids\":" + generatedJson +
                 ",\"text\":" + jsonString(tok.decode(generated)) + ",") == 0);
  CHECK(ids.size() > 3);  // the merges applied: fewer ids than bytes, more than one
  std::remove(archive.c_str());
}
