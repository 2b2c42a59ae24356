// bytes.hpp: the one place where archive bytes are range-checked and read.
//
// Every read of untrusted bytes goes through ByteView::require(); every shape product goes through
// checkedMul() before anything is allocated from it. Offsets are relative to the view, which may start
// at any byte offset in memory (a slice of a larger buffer).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace needle {

// Every failure in reading, writing or running a model. The message says what was wrong and where,
// e.g. "layer 3 key projection: blob [18112, 18240) ends past the archive (size 9000)".
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Largest integer that both C++ and JavaScript (Number.MAX_SAFE_INTEGER) represent exactly.
constexpr uint64_t kMaxSafeInteger = (uint64_t{1} << 53) - 1;

// a*b, or an Error naming `what` when the product would pass kMaxSafeInteger.
inline uint64_t checkedMul(uint64_t a, uint64_t b, const std::string& what) {
  if (a != 0 && b > kMaxSafeInteger / a)
    throw Error(what + ": size " + std::to_string(a) + " x " + std::to_string(b) + " overflows");
  return a * b;
}

// a+b, or an Error naming `what` when the sum would pass kMaxSafeInteger.
inline uint64_t checkedAdd(uint64_t a, uint64_t b, const std::string& what) {
  if (a > kMaxSafeInteger || b > kMaxSafeInteger - a)
    throw Error(what + ": offset " + std::to_string(a) + " + " + std::to_string(b) + " overflows");
  return a + b;
}

// A read-only little-endian view of bytes that belong to someone else (the caller keeps them alive).
class ByteView {
 public:
  ByteView() = default;
  ByteView(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The range check used before every read: [offset, offset+length) must lie inside the view.
  void require(uint64_t offset, uint64_t length, const std::string& what) const {
    if (offset > size_ || length > size_ - offset)
      throw Error(what + ": bytes [" + std::to_string(offset) + ", " +
                  (length > kMaxSafeInteger ? std::string("...") : std::to_string(offset + length)) +
                  ") lie outside the archive (size " + std::to_string(size_) + ")");
  }
  ByteView slice(uint64_t offset, uint64_t length, const std::string& what) const {
    require(offset, length, what);
    return ByteView(data_ + offset, static_cast<size_t>(length));
  }
  uint8_t u8(uint64_t off, const std::string& what) const {
    require(off, 1, what);
    return data_[off];
  }
  uint16_t u16(uint64_t off, const std::string& what) const {
    require(off, 2, what);
    return static_cast<uint16_t>(data_[off] | (data_[off + 1] << 8));
  }
  uint32_t u32(uint64_t off, const std::string& what) const {
    require(off, 4, what);
    return loadU32(data_ + off);
  }
  uint64_t u64(uint64_t off, const std::string& what) const {
    require(off, 8, what);
    return uint64_t{loadU32(data_ + off)} | (uint64_t{loadU32(data_ + off + 4)} << 32);
  }
  float f32(uint64_t off, const std::string& what) const {
    uint32_t bits = u32(off, what);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

 private:
  static uint32_t loadU32(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
  }
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace needle
