// cli.cpp: shared argument handling for the needle-* programs.
#include "cli.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "bytes.hpp"

namespace needle::cli {

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) items_.emplace_back(argv[i]);
  used_.assign(items_.size(), false);
}

bool Args::flag(const std::string& name) {
  bool found = false;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!used_[i] && items_[i] == name) used_[i] = found = true;
  return found;
}

std::string Args::option(const std::string& name, const std::string& fallback) {
  for (size_t i = 0; i < items_.size(); ++i) {
    if (used_[i] || items_[i] != name) continue;
    if (i + 1 >= items_.size()) throw UsageError("option " + name + " needs a value");
    used_[i] = used_[i + 1] = true;
    return items_[i + 1];
  }
  return fallback;
}

bool Args::has(const std::string& name) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (!used_[i] && items_[i] == name) return true;
  return false;
}

std::vector<std::string> Args::positionals() {
  std::vector<std::string> out;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (used_[i]) continue;
    if (items_[i].size() > 2 && items_[i].rfind("--", 0) == 0) continue;  // left for finish()
    used_[i] = true;
    out.push_back(items_[i]);
  }
  return out;
}

void Args::finish() const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (!used_[i]) throw UsageError("unexpected argument " + items_[i]);
}

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": read failed");
  return bytes;
}

void writeFile(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot create");
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw Error(path + ": write failed");
}

uint64_t parseUint(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(what + ": '" + text + "' is not a non-negative integer");
  return std::stoull(text);
}

uint32_t parseU32(const std::string& text, const std::string& what) {
  const uint64_t v = parseUint(text, what);
  if (v > 0xFFFFFFFFull) throw UsageError(what + ": " + text + " is too large");
  return static_cast<uint32_t>(v);
}

// As tools/needle-wasm.mjs reads a number option.
float parseReal(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw UsageError(what + ": '" + text + "' is not a number");
  return static_cast<float>(v);
}

uint64_t parseSeed(const std::string& text) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("--seed: '" + text + "' is not a non-negative integer");
  uint64_t v = 0;
  for (char c : text) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) throw UsageError("--seed: " + text + " is larger than 2^64 - 1");
    v = v * 10 + digit;
  }
  return v;
}

std::vector<uint32_t> parseIds(const std::string& text) {
  std::vector<uint32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) {
      uint64_t v = parseUint(cur, "token id");
      if (v > 0xFFFFFFFFu) throw UsageError("token id " + cur + " is too large");
      ids.push_back(static_cast<uint32_t>(v));
    }
    cur.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n') flush();
    else cur += c;
  }
  flush();
  return ids;
}

int run(const char* program, const char* usage, int argc, char** argv,
        const std::function<int(Args&)>& body) {
  Args args(argc, argv);
  if (args.flag("--help") || args.flag("-h")) {
    std::fputs(usage, stdout);
    return 0;
  }
  try {
    return body(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n\n%s", program, e.what(), usage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace needle::cli
