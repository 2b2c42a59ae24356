// cq.hpp: Cactus-Quants. The codebooks, the Walsh-Hadamard transform, the quantizer that writes CQ
// blobs, and the two ways the reference multiplies by a packed matrix: f32 activations, and the A8
// activations that the wasm engine uses (see docs/numerics.md).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "archive.hpp"

namespace needle {

// The 28 header floats cb2[4] | cb3[8] | cb4[16], recomputed from their definition (Lloyd-Max on
// 400,000 draws of numpy's legacy RandomState(0).randn, 200 iterations, divided by sqrt(128)).
std::array<float, kCodebookLen> computeCodebooks();
// Offset of the codebook for `bits` (2, 3, 4) inside the 28 floats, and its length.
uint32_t codebookOffset(uint32_t bits);
constexpr float kTernaryC = 1.2240064f;  // ternary levels are {-c, 0, +c} / sqrt(group)

// Unnormalised in-place Walsh-Hadamard butterfly over n (a power of two) values, natural order.
void fwht(float* x, uint32_t n);
// fwht followed by x 1/sqrt(n): the orthonormal Sylvester transform H_n.
void fwhtNormalized(float* x, uint32_t n);

// CQ blob (packed rows, then fp16 norms) of a float matrix w [rows, cols], row-major.
std::vector<uint8_t> quantizeCq(const float* w, uint32_t rows, uint32_t cols, uint32_t bits,
                                uint32_t group, const std::array<float, kCodebookLen>& codebook);

// Row `row` of the matrix, dequantised to `m.cols` floats: H_G (fp16(n) * level[idx]) per group.
void dequantizeRow(const CqMatrix& m, uint32_t row, float* out);

// f32 activation side: x (m.cols) zero-padded to colsPadded, H_G applied per group.
std::vector<float> prepareF32(const CqMatrix& m, const float* x);
// y[r - rowBegin] = sum_g norm(r,g) * sum_k level[idx(r,k)] * prepared[k], for rows [rowBegin, rowEnd).
void cqMatvecPrepared(const CqMatrix& m, const float* prepared, float* y, uint32_t rowBegin,
                      uint32_t rowEnd);
// Both steps for all rows: y (m.rows) = W x.
void cqMatvec(const CqMatrix& m, const float* x, float* y);

// A8 activation side: the prepared activation quantised to int8 per block of 32 (docs/numerics.md).
constexpr uint32_t kA8Block = 32;
struct PreparedA8 {
  std::vector<int8_t> q;      // colsPadded values in [-127, 127]
  std::vector<float> scale;   // colsPadded / 32 block scales: value ~= q * scale
};
PreparedA8 prepareA8(const CqMatrix& m, const float* x);
// int8 codebook levels of a matrix's width, and the one scale that turns them back into levels.
struct LevelsA8 {
  std::array<int8_t, 16> q{};
  float scale = 0;
};
LevelsA8 levelsA8(const CqMatrix& m);
// y = W x with integer block sums (exact), as the wasm engine computes it.
void cqMatvecA8Prepared(const CqMatrix& m, const PreparedA8& x, float* y, uint32_t rowBegin,
                        uint32_t rowEnd);
void cqMatvecA8(const CqMatrix& m, const float* x, float* y);

// Symmetric int8 quantisation used by A8 and the KV cache: scale = amax/127, q = roundEven(x *
// (127/amax)) clamped to [-127, 127]; an all-zero block gets scale 0 and zeros.
float quantizeBlockInt8(const float* x, uint32_t n, int8_t* q);

}  // namespace needle
