// needle-tok, run as a program on the fixture archives and model: its output against the library's,
// and its exit status on bad input.
#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer.hpp"

namespace {

const std::string kModels = NEEDLE_MODELS_DIR;
const std::string kTool = std::string(NEEDLE_BIN_DIR) + "/needle-tok";

struct Result {
  int status;
  std::string output;  // stdout, then stderr when asked for
};

// Runs a shell command line; returns its exit status and what it wrote.
Result run(const std::string& command) {
  Result r{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// A shell word that stands for s exactly.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string idLine(const std::vector<uint32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  return line + "\n";
}

const needle::Tokenizer& reference() {
  static const needle::Tokenizer tok(needle::tokenizerSpecFromSpm(kModels + "/needle-test.model"));
  return tok;
}

}  // namespace

TEST_CASE("needle-tok encodes and decodes as the library does", "[spm][cli]") {
  const needle::Tokenizer& tok = reference();
  const std::string archive = " --archive " + kModels + "/tiny.cact ";
  const std::string spm = " --spm " + kModels + "/needle-test.model ";
  const std::vector<std::string> texts = {
      "Hello world", "<|im_start|>user\n<tools>[]</tools>\nWhat's up?<|im_end|>",
      "  caf\xC3\xA9 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD 'quoted' \"double\" $HOME `x`", "name"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    Result r = run(kTool + archive + "encode " + quoted(text));
    CHECK(r.status == 0);
    CHECK(r.output == idLine(tok.encode(text)));
    r = run(kTool + spm + "encode-raw " + quoted(text));
    CHECK(r.status == 0);
    CHECK(r.output == idLine(tok.encodeRaw(text)));
    // From standard input, byte for byte.
    r = run("printf '%s' " + quoted(text) + " | " + kTool + archive + "encode");
    CHECK(r.output == idLine(tok.encode(text)));
    // decode takes the ids as separate arguments.
    std::string ids = idLine(tok.encode(text));
    ids.pop_back();
    r = run(kTool + archive + "decode " + ids);
    CHECK(r.status == 0);
    CHECK(r.output == text);
  }
  // Or as one comma-separated list; control ids decode to nothing.
  Result r = run(kTool + spm + "decode 2,4,1");
  CHECK(r.output == "<|im_start|>");
  // pieces: one line per id with its surface.
  const std::vector<uint32_t> ids = tok.encode("<|im_end|>");
  REQUIRE(ids.size() == 2);
  r = run(kTool + spm + "pieces " + quoted("<|im_end|>"));
  CHECK(r.output == std::to_string(ids[0]) + "\t\xE2\x96\x81\n5\t<|im_end|>\n");
}

TEST_CASE("needle-tok fails clearly on bad input", "[spm][cli]") {
  const std::string spm = " --spm " + kModels + "/needle-test.model ";
  Result r = run(kTool + " --archive " + kModels + "/tiny-notok.cact encode x 2>&1");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("no tokenizer record"));
  r = run("printf 'ab\\200' | " + kTool + spm + "encode 2>&1");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("invalid UTF-8 at byte 2"));
  r = run(kTool + spm + "decode 5 99999 2>&1");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("99999") && Catch::Contains("past the vocabulary"));
  r = run(kTool + spm + "decode 5 x7 2>&1");
  CHECK(r.status == 2);
  r = run(kTool + " --archive " + kModels + "/no-such.cact encode x 2>&1");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("no-such.cact"));
  r = run(kTool + spm + "2>&1");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("missing COMMAND"));
  r = run(kTool + spm + "frobnicate x 2>&1");
  CHECK(r.status == 2);
  r = run(kTool + " encode x 2>&1");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("exactly one of --archive and --spm"));
  r = run(kTool + spm + "encode a b 2>&1");
  CHECK(r.status == 2);
  r = run(kTool + " --help");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("usage: needle-tok"));
}
