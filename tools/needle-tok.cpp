// needle-tok: encode and decode text with the tokenizer of a .cact archive or a SentencePiece model.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "archive.hpp"
#include "cli.hpp"
#include "tokenizer.hpp"

namespace {

const char* const kUsage =
    "usage: needle-tok (--archive FILE.cact | --spm FILE.model) COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  encode [TEXT]       ids of TEXT at the start of a sequence (with the dummy prefix)\n"
    "  encode-raw [TEXT]   ids of TEXT as a fragment inside a sequence (no dummy prefix)\n"
    "  pieces [TEXT]       one line per id of encode: the id, a tab, the piece's surface\n"
    "  decode ID...        the text of the ids (given as separate arguments or as one list\n"
    "                      separated by spaces or commas), written exactly, with no newline added\n"
    "\n"
    "Without TEXT the text is read from standard input, byte for byte. Ids are written on one line,\n"
    "separated by spaces. --archive reads the tokenizer blob of a Needle 2 archive; --spm imports a\n"
    "SentencePiece model the way needle-pack does. Exit status: 0 on success, 1 for invalid input\n"
    "(an unreadable file, invalid UTF-8, an id past the vocabulary), 2 for a usage error.\n";

needle::Tokenizer loadTokenizer(const std::string& archivePath, const std::string& spmPath) {
  if (archivePath.empty() == spmPath.empty())
    throw needle::cli::UsageError("give exactly one of --archive and --spm");
  if (!spmPath.empty()) return needle::Tokenizer(needle::tokenizerSpecFromSpm(spmPath));
  const std::vector<uint8_t> bytes = needle::cli::readFile(archivePath);
  const needle::Model model = needle::readArchive(needle::ByteView(bytes.data(), bytes.size()));
  if (model.tokenizer.empty())
    throw needle::Error(archivePath + ": the archive has no tokenizer record");
  try {
    return needle::Tokenizer::fromBlob(model.tokenizer);
  } catch (const needle::Error& e) {
    throw needle::Error(archivePath + ": " + e.what());
  }
}

// The one TEXT argument, or all of standard input when there is none.
std::string textArgument(const std::vector<std::string>& rest) {
  if (rest.size() > 1)
    throw needle::cli::UsageError("expected one TEXT argument (quote it), got " +
                                  std::to_string(rest.size()));
  if (rest.size() == 1) return rest[0];
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return text;
}

void printIds(const std::vector<uint32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return needle::cli::run("needle-tok", kUsage, argc, argv, [](needle::cli::Args& args) {
    const std::string archivePath = args.option("--archive");
    const std::string spmPath = args.option("--spm");
    std::vector<std::string> positionals = args.positionals();
    args.finish();
    if (positionals.empty()) throw needle::cli::UsageError("missing COMMAND");
    const std::string command = positionals[0];
    const std::vector<std::string> rest(positionals.begin() + 1, positionals.end());
    if (command != "encode" && command != "encode-raw" && command != "pieces" && command != "decode")
      throw needle::cli::UsageError("unknown command '" + command + "'");

    const needle::Tokenizer tokenizer = loadTokenizer(archivePath, spmPath);
    if (command == "decode") {
      if (rest.empty()) throw needle::cli::UsageError("decode needs at least one ID");
      std::vector<uint32_t> ids;
      for (const std::string& arg : rest) {
        std::vector<uint32_t> some = needle::cli::parseIds(arg);
        ids.insert(ids.end(), some.begin(), some.end());
      }
      const std::string text = tokenizer.decode(ids);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    const std::string text = textArgument(rest);
    const std::vector<uint32_t> ids =
        command == "encode-raw" ? tokenizer.encodeRaw(text) : tokenizer.encode(text);
    if (command == "pieces") {
      for (uint32_t id : ids) std::printf("%u\t%s\n", id, tokenizer.spec().pieces[id].surface.c_str());
    } else {
      printIds(ids);
    }
    return 0;
  });
}
