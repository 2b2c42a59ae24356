// cq.cpp: Cactus-Quants (docs/cq.md). The codebook generator, the Walsh-Hadamard transform, the
// quantizer that writes CQ blobs, and the packed matrix-vector products (f32 and A8 activations).
#include "cq.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "bytes.hpp"
#include "fp16.hpp"

namespace needle {

// ---------------------------------------------------------------------------------------------
// Codebooks
// ---------------------------------------------------------------------------------------------

namespace {

// numpy's legacy RandomState: MT19937 seeded by init_genrand (what std::mt19937 does), doubles made
// of 53 random bits from two draws, and normals from the polar Box-Muller method, which yields two
// values per accepted pair and hands out the second one first.
class LegacyNormal {
 public:
  explicit LegacyNormal(uint32_t seed) : mt_(seed) {}

  // RandomState.random_sample(): ((a >> 5) * 2^26 + (b >> 6)) / 2^53.
  double uniform() {
    uint32_t a = static_cast<uint32_t>(mt_()) >> 5;
    uint32_t b = static_cast<uint32_t>(mt_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // RandomState.randn() one value at a time (legacy_gauss).
  double next() {
    if (hasCached_) {
      hasCached_ = false;
      return cached_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_ = f * x1;
    hasCached_ = true;
    return f * x2;
  }

 private:
  std::mt19937 mt_;
  bool hasCached_ = false;
  double cached_ = 0;
};

// numpy.quantile(sorted, q) with the default "linear" method: virtual index q (n - 1), interpolated
// between its floor and ceiling the way numpy's _lerp does (from the nearer end).
double linearQuantile(const std::vector<double>& sorted, double q) {
  double virtualIndex = q * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(std::floor(virtualIndex));
  size_t above = std::min(below + 1, sorted.size() - 1);
  double t = virtualIndex - static_cast<double>(below);
  double a = sorted[below], b = sorted[above];
  return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

// Lloyd-Max centroids of the sorted samples for `levels` levels: start at the quantiles
// (k + 1/2) / levels, then 200 rounds of "boundaries at the midpoints, centroid = mean of its cell".
// The iteration count is part of the definition: the centroids are still moving at round 200.
// `prefix[i]` is the sum of the first i samples, so a cell's sum costs one subtraction (the rounding
// this adds is ~1e-16 relative, far below f32; the codebook test pins the result bit for bit).
std::vector<double> lloydMax(const std::vector<double>& sorted, const std::vector<double>& prefix,
                             uint32_t levels) {
  std::vector<double> centroid(levels);
  for (uint32_t k = 0; k < levels; ++k) centroid[k] = linearQuantile(sorted, (k + 0.5) / levels);
  for (int round = 0; round < 200; ++round) {
    size_t begin = 0;
    for (uint32_t k = 0; k < levels; ++k) {
      // Cell k holds the samples below the midpoint to its right neighbour (the last cell the rest).
      size_t end = sorted.size();
      if (k + 1 < levels) {
        double boundary = (centroid[k] + centroid[k + 1]) / 2.0;
        end = static_cast<size_t>(std::lower_bound(sorted.begin() + begin, sorted.end(), boundary) -
                                  sorted.begin());
      }
      if (end > begin) centroid[k] = (prefix[end] - prefix[begin]) / static_cast<double>(end - begin);
      begin = end;
    }
  }
  return centroid;
}

std::array<float, kCodebookLen> generateCodebooks() {
  constexpr size_t kSamples = 400000;
  LegacyNormal normal(0);
  std::vector<double> samples(kSamples);
  for (double& s : samples) s = normal.next();
  std::sort(samples.begin(), samples.end());
  std::vector<double> prefix(kSamples + 1, 0.0);
  for (size_t i = 0; i < kSamples; ++i) prefix[i + 1] = prefix[i] + samples[i];

  std::array<float, kCodebookLen> codebook{};
  const double rootGroup = std::sqrt(128.0);
  size_t at = 0;
  for (uint32_t bits = 2; bits <= 4; ++bits) {
    // Divided in f64 and rounded to f32 once (dividing after the cast changes 14 of the 28 values).
    for (double c : lloydMax(samples, prefix, 1u << bits)) codebook[at++] = static_cast<float>(c / rootGroup);
  }
  return codebook;
}

}  // namespace

std::array<float, kCodebookLen> computeCodebooks() {
  // About 0.3 s of work: done once, on first use (thread-safe static initialisation).
  static const std::array<float, kCodebookLen> codebook = generateCodebooks();
  return codebook;
}

uint32_t codebookOffset(uint32_t bits) {
  switch (bits) {
    case 2: return 0;
    case 3: return 4;
    case 4: return 12;
    default: throw Error("CQ codebook: no codebook for " + std::to_string(bits) + "-bit indices");
  }
}

// ---------------------------------------------------------------------------------------------
// Walsh-Hadamard transform
// ---------------------------------------------------------------------------------------------

namespace {

bool isPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// The butterfly on any arithmetic type (float for the kernels, double for the quantizer).
template <typename T>
void butterfly(T* x, uint32_t n) {
  for (uint32_t stride = 1; stride < n; stride <<= 1) {
    for (uint32_t base = 0; base < n; base += stride << 1) {
      for (uint32_t j = base; j < base + stride; ++j) {
        T a = x[j], b = x[j + stride];
        x[j] = a + b;
        x[j + stride] = a - b;
      }
    }
  }
}

// 1/sqrt(n) correctly rounded to f32 (0.088388346 for n = 128).
float inverseRootF32(uint32_t n) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))); }

}  // namespace

void fwht(float* x, uint32_t n) {
  if (!isPowerOfTwo(n)) throw Error("FWHT: length " + std::to_string(n) + " is not a power of two");
  butterfly(x, n);
}

void fwhtNormalized(float* x, uint32_t n) {
  fwht(x, n);
  const float scale = inverseRootF32(n);
  for (uint32_t i = 0; i < n; ++i) x[i] *= scale;
}

// ---------------------------------------------------------------------------------------------
// Quantizer
// ---------------------------------------------------------------------------------------------

namespace {

// Bits per stored index: ternary (record bits 5) stores 2-bit crumbs.
uint32_t indexBitsOf(uint32_t bits) { return bits == 5 ? 2 : bits; }

// The ternary level c / sqrt(G), rounded to f32 once (0.108187906 for G = 128).
float ternaryLevel(uint32_t group) {
  return static_cast<float>(static_cast<double>(kTernaryC) / std::sqrt(static_cast<double>(group)));
}

// Writes `value` into bits [position, position + width) of an LSB-first bit stream.
void putBits(uint8_t* stream, uint64_t position, uint32_t width, uint32_t value) {
  for (uint32_t bit = 0; bit < width; ++bit) {
    if ((value >> bit) & 1u) {
      uint64_t j = position + bit;
      stream[j >> 3] = static_cast<uint8_t>(stream[j >> 3] | (1u << (j & 7)));
    }
  }
}

}  // namespace

std::vector<uint8_t> quantizeCq(const float* w, uint32_t rows, uint32_t cols, uint32_t bits,
                                uint32_t group, const std::array<float, kCodebookLen>& codebook) {
  if (bits != 2 && bits != 3 && bits != 4 && bits != 5)
    throw Error("CQ quantizer: bit width " + std::to_string(bits) + " is not 2, 3, 4 or 5 (ternary)");
  if (!isPowerOfTwo(group) || group < kA8Block)
    throw Error("CQ quantizer: group " + std::to_string(group) + " is not a power of two >= 32");
  if (rows == 0 || cols == 0) throw Error("CQ quantizer: empty matrix " + std::to_string(rows) + " x " +
                                          std::to_string(cols));

  // The sorted levels an index may take, and the crumb/index written for each.
  std::vector<float> level;
  std::vector<uint32_t> code;
  if (bits == 5) {
    const float t = ternaryLevel(group);
    level = {-t, 0.0f, t};
    code = {3, 0, 1};  // sign-extended crumbs: -1, 0, +1
  } else {
    const uint32_t count = 1u << bits;
    level.assign(codebook.begin() + codebookOffset(bits), codebook.begin() + codebookOffset(bits) + count);
    for (uint32_t k = 0; k < count; ++k) code.push_back(k);
  }
  // Nearest level by midpoints: u goes to level k when it lies above k midpoints. A value exactly on
  // a midpoint stays below it (the lower index). The midpoints of two f32 levels are exact in f64.
  std::vector<double> midpoint;
  for (size_t k = 0; k + 1 < level.size(); ++k) {
    if (!(level[k] < level[k + 1])) throw Error("CQ quantizer: the " + std::to_string(bits) +
                                                "-bit codebook is not strictly ascending");
    midpoint.push_back((static_cast<double>(level[k]) + level[k + 1]) / 2.0);
  }

  const uint32_t indexBits = indexBitsOf(bits);
  const uint64_t groups = (uint64_t{cols} + group - 1) / group;
  const uint64_t colsPadded = checkedMul(groups, group, "CQ quantizer: padded columns");
  const uint64_t rowBytes = colsPadded * indexBits / 8;
  const uint64_t packedBytes = checkedMul(rows, rowBytes, "CQ quantizer: packed rows");
  const uint64_t normBytes = checkedMul(checkedMul(rows, groups, "CQ quantizer: norms"), 2,
                                        "CQ quantizer: norms");
  std::vector<uint8_t> blob(checkedAdd(packedBytes, normBytes, "CQ quantizer: blob"), 0);

  const double inverseRoot = 1.0 / std::sqrt(static_cast<double>(group));
  std::vector<double> r(group);
  for (uint32_t row = 0; row < rows; ++row) {
    uint8_t* packedRow = blob.data() + row * rowBytes;
    for (uint64_t g = 0; g < groups; ++g) {
      // r = H_G w in f64 (the padded columns are zero).
      for (uint32_t k = 0; k < group; ++k) {
        uint64_t col = g * group + k;
        r[k] = col < cols ? static_cast<double>(w[uint64_t{row} * cols + col]) : 0.0;
        if (!std::isfinite(r[k]))
          throw Error("CQ quantizer: weight at row " + std::to_string(row) + ", column " +
                      std::to_string(col) + " is not finite");
      }
      butterfly(r.data(), group);
      double sumSquares = 0;
      for (double& v : r) {
        v *= inverseRoot;
        sumSquares += v * v;
      }
      const double norm = std::sqrt(sumSquares);
      const double divisor = std::max(norm, 1e-12);
      for (uint32_t k = 0; k < group; ++k) {
        const double u = r[k] / divisor;
        const size_t index = static_cast<size_t>(
            std::upper_bound(midpoint.begin(), midpoint.end(), u, [](double a, double m) { return a <= m; }) -
            midpoint.begin());
        putBits(packedRow, (g * group + k) * indexBits, indexBits, code[index]);
      }
      // The stored norm: the f64 norm rounded to f32, then to fp16 (ties to even).
      const uint16_t half = floatToHalf(static_cast<float>(norm));
      if ((half & 0x7FFF) == 0x7C00)
        throw Error("CQ quantizer: row " + std::to_string(row) + ", group " + std::to_string(g) + " has norm " +
                    std::to_string(norm) + ", past the fp16 range (65504)");
      uint8_t* at = blob.data() + packedBytes + (uint64_t{row} * groups + g) * 2;
      at[0] = static_cast<uint8_t>(half & 0xFF);
      at[1] = static_cast<uint8_t>(half >> 8);
    }
  }
  return blob;
}

// ---------------------------------------------------------------------------------------------
// Reading packed rows
// ---------------------------------------------------------------------------------------------

namespace {

// Refuses a CqMatrix whose fields do not describe a consistent packed matrix (every kernel below
// relies on these facts instead of checking per element).
void checkMatrix(const CqMatrix& m, const char* what) {
  auto fail = [&](const std::string& why) { throw Error(std::string(what) + ": CQ matrix " + why); };
  if (m.bits != 2 && m.bits != 3 && m.bits != 4 && m.bits != 5)
    fail("has bit width " + std::to_string(m.bits));
  if (m.indexBits != indexBitsOf(m.bits))
    fail("stores " + std::to_string(m.indexBits) + "-bit indices for bit width " + std::to_string(m.bits));
  if (!isPowerOfTwo(m.group) || m.group < kA8Block) fail("has group " + std::to_string(m.group));
  if (m.colsPadded % m.group != 0 || m.cols > m.colsPadded || m.colsPadded - m.cols >= m.group)
    fail("pads " + std::to_string(m.cols) + " columns to " + std::to_string(m.colsPadded));
  if (m.rowBytes != uint64_t{m.colsPadded} * m.indexBits / 8)
    fail("has " + std::to_string(m.rowBytes) + " bytes per row");
  if (m.rows != 0 && (m.packed == nullptr || m.norms == nullptr)) fail("has no data");
}

// Raw stored index of column `col` in one packed row (an index may straddle two bytes at 3 bits).
inline uint32_t rawIndex(const uint8_t* row, uint32_t indexBits, uint32_t col) {
  const uint32_t bit = col * indexBits;
  const uint32_t byte = bit >> 3, shift = bit & 7;
  uint32_t value = row[byte] >> shift;
  if (shift + indexBits > 8) value |= uint32_t{row[byte + 1]} << (8 - shift);
  return value & ((1u << indexBits) - 1);
}

// The fp16 norm of (row, group g), widened.
inline float groupNorm(const CqMatrix& m, uint32_t row, uint32_t g) {
  const uint8_t* at = m.norms + (uint64_t{row} * m.groups() + g) * 2;
  return halfToFloat(static_cast<uint16_t>(at[0] | (at[1] << 8)));
}

void checkRows(const CqMatrix& m, uint32_t rowBegin, uint32_t rowEnd, const char* what) {
  if (rowBegin > rowEnd || rowEnd > m.rows)
    throw Error(std::string(what) + ": rows [" + std::to_string(rowBegin) + ", " + std::to_string(rowEnd) +
                ") lie outside the matrix's " + std::to_string(m.rows) + " rows");
}

}  // namespace

void dequantizeRow(const CqMatrix& m, uint32_t row, float* out) {
  checkMatrix(m, "dequantizeRow");
  checkRows(m, row, row + 1, "dequantizeRow");
  const uint8_t* packedRow = m.packed + uint64_t{row} * m.rowBytes;
  std::vector<float> values(m.group);
  for (uint32_t g = 0; g < m.groups(); ++g) {
    const float norm = groupNorm(m, row, g);
    for (uint32_t k = 0; k < m.group; ++k)
      values[k] = norm * m.levels[rawIndex(packedRow, m.indexBits, g * m.group + k)];
    fwhtNormalized(values.data(), m.group);
    for (uint32_t k = 0; k < m.group && g * m.group + k < m.cols; ++k) out[g * m.group + k] = values[k];
  }
}

// ---------------------------------------------------------------------------------------------
// f32 activations
// ---------------------------------------------------------------------------------------------

std::vector<float> prepareF32(const CqMatrix& m, const float* x) {
  checkMatrix(m, "prepareF32");
  std::vector<float> prepared(m.colsPadded, 0.0f);
  std::copy(x, x + m.cols, prepared.begin());
  for (uint32_t start = 0; start < m.colsPadded; start += m.group) fwhtNormalized(&prepared[start], m.group);
  return prepared;
}

namespace {

// Per-byte tables of the values a packed byte encodes: 4 crumbs at 2 bits (ternary included) or 2
// nibbles at 4 bits, so that unpacking one byte is one table lookup and a copy, with no shifting.
// T is float (the levels) for the f32 kernel and int8_t (the int8 levels) for the A8 kernel.
template <typename T>
struct ByteTables {
  T byIndex[16];
  T crumbs[256][4];
  T nibbles[256][2];

  explicit ByteTables(const T* levels) {
    std::copy(levels, levels + 16, byIndex);
    for (uint32_t byte = 0; byte < 256; ++byte) {
      for (uint32_t t = 0; t < 4; ++t) crumbs[byte][t] = levels[(byte >> (2 * t)) & 3];
      for (uint32_t t = 0; t < 2; ++t) nibbles[byte][t] = levels[(byte >> (4 * t)) & 15];
    }
  }

  // The values of one group's `group` columns, unpacked from its packed bytes into `out`.
  void unpackGroup(const uint8_t* bytes, uint32_t indexBits, uint32_t group, T* out) const {
    switch (indexBits) {
      case 2:
        for (uint32_t b = 0; b < group / 4; ++b) std::memcpy(out + 4 * b, crumbs[bytes[b]], sizeof crumbs[0]);
        break;
      case 4:
        for (uint32_t b = 0; b < group / 2; ++b) std::memcpy(out + 2 * b, nibbles[bytes[b]], sizeof nibbles[0]);
        break;
      default:  // 3 bits: every 3 bytes are one little-endian 24-bit word holding 8 indices
        for (uint32_t k = 0; k < group; k += 8, bytes += 3) {
          const uint32_t word = uint32_t{bytes[0]} | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16);
          for (uint32_t t = 0; t < 8; ++t) out[k + t] = byIndex[(word >> (3 * t)) & 7];
        }
        break;
    }
  }
};

// sum_k w_k x_k over n (a multiple of 8) values, in 8 interleaved partial sums that are added
// pairwise at the end. That order is ours (docs/cq.md); it lets the compiler use SIMD registers.
float dot8(const float* w, const float* x, uint32_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (uint32_t k = 0; k < n; k += 8)
    for (uint32_t j = 0; j < 8; ++j) s[j] += w[k + j] * x[k + j];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

void cqMatvecPrepared(const CqMatrix& m, const float* prepared, float* y, uint32_t rowBegin,
                      uint32_t rowEnd) {
  checkMatrix(m, "cqMatvecPrepared");
  checkRows(m, rowBegin, rowEnd, "cqMatvecPrepared");
  const ByteTables<float> tables(m.levels.data());
  const uint32_t groupBytes = m.group * m.indexBits / 8;
  std::vector<float> w(m.group);  // one group of levels, unpacked
  for (uint32_t row = rowBegin; row < rowEnd; ++row) {
    const uint8_t* packedRow = m.packed + uint64_t{row} * m.rowBytes;
    float acc = 0;
    for (uint32_t g = 0; g < m.groups(); ++g) {
      tables.unpackGroup(packedRow + uint64_t{g} * groupBytes, m.indexBits, m.group, w.data());
      acc += groupNorm(m, row, g) * dot8(w.data(), prepared + uint64_t{g} * m.group, m.group);
    }
    y[row - rowBegin] = acc;
  }
}

void cqMatvec(const CqMatrix& m, const float* x, float* y) {
  const std::vector<float> prepared = prepareF32(m, x);
  cqMatvecPrepared(m, prepared.data(), y, 0, m.rows);
}

// ---------------------------------------------------------------------------------------------
// A8 activations (docs/numerics.md, "A8")
// ---------------------------------------------------------------------------------------------

float quantizeBlockInt8(const float* x, uint32_t n, int8_t* q) {
  float amax = 0;
  for (uint32_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));  // a NaN is skipped
  if (amax == 0) {
    std::fill(q, q + n, int8_t{0});
    return 0;
  }
  const float inverse = 127.0f / amax;
  for (uint32_t i = 0; i < n; ++i) {
    const float rounded = std::nearbyint(x[i] * inverse);  // ties to even in the default mode
    // Clamped by comparison, so that an infinite or NaN product can never reach the int8 cast.
    q[i] = rounded >= 127.0f ? int8_t{127}
         : rounded <= -127.0f ? int8_t{-127}
         : rounded == rounded ? static_cast<int8_t>(rounded)
         : int8_t{0};
  }
  return amax / 127.0f;
}

PreparedA8 prepareA8(const CqMatrix& m, const float* x) {
  const std::vector<float> prepared = prepareF32(m, x);
  PreparedA8 out;
  out.q.resize(m.colsPadded);
  out.scale.resize(m.colsPadded / kA8Block);
  for (uint32_t b = 0; b < out.scale.size(); ++b)
    out.scale[b] = quantizeBlockInt8(&prepared[b * kA8Block], kA8Block, &out.q[b * kA8Block]);
  return out;
}

LevelsA8 levelsA8(const CqMatrix& m) {
  checkMatrix(m, "levelsA8");
  // The same rule as an activation block, over the 16 level slots. Unused slots hold 0 and do not
  // change the maximum; for ternary the slots are {0, +t, 0, -t}, which gives {0, 127, 0, -127} and
  // the scale t / 127 that docs/numerics.md names.
  LevelsA8 out;
  out.scale = quantizeBlockInt8(m.levels.data(), 16, out.q.data());
  return out;
}

void cqMatvecA8Prepared(const CqMatrix& m, const PreparedA8& x, float* y, uint32_t rowBegin,
                        uint32_t rowEnd) {
  checkMatrix(m, "cqMatvecA8Prepared");
  checkRows(m, rowBegin, rowEnd, "cqMatvecA8Prepared");
  if (x.q.size() != m.colsPadded || x.scale.size() != m.colsPadded / kA8Block)
    throw Error("cqMatvecA8Prepared: the prepared activation has " + std::to_string(x.q.size()) +
                " values, the matrix " + std::to_string(m.colsPadded) + " padded columns");
  const LevelsA8 levels = levelsA8(m);
  const ByteTables<int8_t> tables(levels.q.data());
  const uint32_t groupBytes = m.group * m.indexBits / 8;
  const uint32_t blocksPerGroup = m.group / kA8Block;
  std::vector<int8_t> cbq(m.group);  // int8 level of each column of one group
  for (uint32_t row = rowBegin; row < rowEnd; ++row) {
    const uint8_t* packedRow = m.packed + uint64_t{row} * m.rowBytes;
    float acc = 0;
    for (uint32_t g = 0; g < m.groups(); ++g) {
      tables.unpackGroup(packedRow + uint64_t{g} * groupBytes, m.indexBits, m.group, cbq.data());
      float gsum = 0;
      for (uint32_t b = 0; b < blocksPerGroup; ++b) {
        const int8_t* levelQ = cbq.data() + b * kA8Block;
        const int8_t* xq = x.q.data() + uint64_t{g} * m.group + b * kA8Block;
        int32_t isum = 0;  // exact: at most 32 x 127 x 127
        for (uint32_t k = 0; k < kA8Block; ++k) isum += int32_t{levelQ[k]} * int32_t{xq[k]};
        gsum += static_cast<float>(isum) * x.scale[g * blocksPerGroup + b];
      }
      acc += groupNorm(m, row, g) * gsum;
    }
    y[row - rowBegin] = acc * levels.scale;
  }
}

void cqMatvecA8(const CqMatrix& m, const float* x, float* y) {
  const PreparedA8 prepared = prepareA8(m, x);
  cqMatvecA8Prepared(m, prepared, y, 0, m.rows);
}

}  // namespace needle
