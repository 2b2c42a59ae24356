// needle-pack: float weights (random, or from safetensors) -> a Needle 2 archive.
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "archive.hpp"
#include "cli.hpp"
#include "writer.hpp"

using namespace needle;

namespace {

const char* kUsage =
    "usage: needle-pack (--random --geometry micro|tiny|small|base [--seed N] | --safetensors FILE [--geometry G])\n"
    "                   [--bits-map MAP] [--spm FILE.model] [--heads|--no-heads] [--vocab N]\n"
    "                   [--save-safetensors FILE] -o FILE\n"
    "\n"
    "Writes a Needle 2 archive (.cact) and checks that it loads.\n"
    "  --random              deterministic random weights for a geometry preset (--seed, default 1)\n"
    "  --safetensors FILE    weights named by needlework's keys; geometry from the file's metadata,\n"
    "                        else from --geometry\n"
    "  --bits-map MAP        CQ widths by longest prefix of the upstream names\n"
    "                        (default \"embedding=4,mhc=4,default=2\", the real Needle 2 map;\n"
    "                        widths 2, 3, 4 or 1.58 for ternary)\n"
    "  --spm FILE.model      add a SentencePiece tokenizer as the last record; with --random the\n"
    "                        vocabulary becomes its piece count unless --vocab is given\n"
    "  --heads, --no-heads   probe heads (default: on for base, off for tiny and small; with\n"
    "                        --safetensors, whatever the file holds)\n"
    "  --vocab N             vocabulary size for --random\n"
    "  --save-safetensors F  also write the float weights that were packed, so that another packer\n"
    "                        can pack the same weights\n"
    "  -o FILE               the archive to write\n";

}  // namespace

int main(int argc, char** argv) {
  return cli::run("needle-pack", kUsage, argc, argv, [](cli::Args& args) {
    const bool random = args.flag("--random");
    const std::string safetensors = args.option("--safetensors");
    const std::string geometryName = args.option("--geometry");
    const std::string seedText = args.option("--seed");
    const std::string bitsText = args.option("--bits-map", kRealBitsMap);
    const std::string spmPath = args.option("--spm");
    const bool heads = args.flag("--heads");
    const bool noHeads = args.flag("--no-heads");
    const std::string vocabText = args.option("--vocab");
    const std::string savePath = args.option("--save-safetensors");
    const std::string outPath = args.option("-o");
    if (!args.positionals().empty()) throw cli::UsageError("needle-pack takes no positional arguments");
    args.finish();

    if (random == !safetensors.empty()) throw cli::UsageError("give exactly one of --random and --safetensors");
    if (outPath.empty()) throw cli::UsageError("-o FILE is required");
    if (heads && noHeads) throw cli::UsageError("--heads and --no-heads exclude each other");
    if (random && geometryName.empty()) throw cli::UsageError("--random needs --geometry micro|tiny|small|base");
    if (!random && !seedText.empty()) throw cli::UsageError("--seed applies to --random only");
    if (!random && !vocabText.empty())
      throw cli::UsageError("--vocab applies to --random only (a safetensors file fixes its vocabulary)");

    PackOptions options;
    try {
      options.bits = BitsMap::parse(bitsText);
    } catch (const Error& e) {
      throw cli::UsageError(std::string("--bits-map: ") + e.what());
    }
    if (!spmPath.empty()) options.tokenizer = tokenizerSpecFromSpm(spmPath);

    FloatModel model;
    if (random) {
      Geometry g = presetGeometry(geometryName);
      if (!vocabText.empty()) {
        const uint64_t vocab = cli::parseUint(vocabText, "--vocab");
        if (vocab == 0 || vocab > 0xFFFFFFFFu) throw cli::UsageError("--vocab " + vocabText + " is out of range");
        g.vocab = static_cast<uint32_t>(vocab);
      } else if (options.tokenizer) {
        g.vocab = static_cast<uint32_t>(options.tokenizer->pieces.size());
      }
      validateGeometry(g);  // before randomModel sizes anything from it
      const uint64_t seed = seedText.empty() ? 1 : cli::parseUint(seedText, "--seed");
      const bool withHeads = heads || (!noHeads && geometryName == "base");
      model = randomModel(g, seed, withHeads);
    } else {
      std::optional<Geometry> fallback;
      if (!geometryName.empty()) fallback = presetGeometry(geometryName);
      model = readSafetensors(safetensors, fallback);
      if (heads && model.headCodes.empty())
        throw Error(safetensors + ": --heads given but the file holds no probe heads");
      if (noHeads) {
        model.headCodes.clear();
        for (auto it = model.tensors.begin(); it != model.tensors.end();)
          it = it->first.rfind("heads.", 0) == 0 ? model.tensors.erase(it) : std::next(it);
      }
    }

    const std::vector<uint8_t> bytes = writeArchive(model, options);
    // The packer never leaves behind a file that needlework would refuse.
    const Model check = readArchive(ByteView(bytes.data(), bytes.size()));
    if (!savePath.empty()) writeSafetensors(model, savePath);
    cli::writeFile(outPath, bytes.data(), bytes.size());

    std::printf("wrote %s: %zu bytes, %zu records (vocab %u, d_model %u, %u layers, %zu probe heads, %s), "
                "bits map \"%s\"\n",
                outPath.c_str(), bytes.size(), check.records.size(), check.geo.vocab, check.geo.d_model,
                check.geo.num_layers, check.heads.size(),
                check.tokenizer.empty() ? "no tokenizer" : "with tokenizer", bitsText.c_str());
    return 0;
  });
}
