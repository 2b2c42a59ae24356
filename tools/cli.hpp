// cli.hpp: what every needle-* program shares: arguments, files, and the error exit.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <functional>
#include <string>
#include <vector>

namespace needle::cli {

// Arguments after argv[0]. Options look like --name VALUE or --flag; the rest are positionals.
class Args {
 public:
  Args(int argc, char** argv);
  bool flag(const std::string& name);                            // consumes --name
  std::string option(const std::string& name, const std::string& fallback = "");  // consumes --name V
  bool has(const std::string& name) const;
  std::vector<std::string> positionals();                        // everything not consumed
  // Error for any option that no one consumed ("unknown option --foo").
  void finish() const;

 private:
  std::vector<std::string> items_;
  std::vector<bool> used_;
};

std::vector<uint8_t> readFile(const std::string& path);          // Error naming the path
void writeFile(const std::string& path, const void* data, size_t size);
uint64_t parseUint(const std::string& text, const std::string& what);
uint32_t parseU32(const std::string& text, const std::string& what);   // parseUint, at most 2^32 - 1
float parseReal(const std::string& text, const std::string& what);     // any finite decimal number
uint64_t parseSeed(const std::string& text);                           // --seed: 0 .. 2^64 - 1
std::vector<uint32_t> parseIds(const std::string& text);         // "2 4 100" or "2,4,100"

// Runs `body`; prints "PROGRAM: message" on stderr and returns 1 for any Error or exception,
// 2 for a usage error. `usage` is printed for --help and on a usage error.
int run(const char* program, const char* usage, int argc, char** argv,
        const std::function<int(Args&)>& body);

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace needle::cli
