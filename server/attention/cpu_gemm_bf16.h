// A single-threaded bfloat16 matrix product with float32 accumulation, for
// FAVOR+'s products in bfloat16: AVX512-BF16 register tiles (`vdpbf16ps`,
// two bfloat16 products per float32 lane and instruction), with a portable
// loop elsewhere that computes the same sums in the same order.
//
// vdpbf16ps multiplies pairs of adjacent bfloat16 elements along the inner
// dimension, so the right-hand operand is packed once into pairs
// (PackBF16): FAVOR+'s right-hand operands are the projection (packed once
// per call), the value rows of a step and the query state (packed once per
// query pass). The left-hand operand is read in place, row-major with unit
// column stride, as FAVOR+'s inputs and features are laid out.
//
// Rounding float32 to bfloat16 is round-to-nearest-even everywhere
// (ToBFloat16), in the packing and the conversions alike, so that the fast
// and portable paths see the same inputs.
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_GEMM_BF16_H_
#define FAVOR_SERVER_ATTENTION_CPU_GEMM_BF16_H_

#include <cstdint>

#include "server/attention/cpu_gemm.h"

namespace favor::attention::cpu {

// The raw 16 bits of a bfloat16 (the upper half of a float32).
using BFloat16Bits = uint16_t;

// float32 → bfloat16, round to nearest even; NaN stays a (quiet) NaN.
inline BFloat16Bits ToBFloat16(float value) {
  uint32_t bits;
  __builtin_memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<BFloat16Bits>((bits >> 16) | 0x40u);
  }
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<BFloat16Bits>(bits >> 16);
}

inline float FromBFloat16(BFloat16Bits value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  __builtin_memcpy(&result, &bits, sizeof(result));
  return result;
}

// True when GemmBF16 runs its AVX512-BF16 kernel (this CPU has AVX512-BF16
// per cpu_features.h, and tests have not turned it off); elsewhere it is a
// plain loop, correct but far slower than oneDNN's emulation.
bool GemmBF16IsFast();

// For tests and benchmarks: false makes GemmBF16 take its plain loop and
// GemmBF16IsFast() false; true restores the default. Process-wide.
void SetFastGemmBF16Enabled(bool enabled);

// bfloat16 elements a packed (depth × cols) right-hand operand occupies:
// ⌈depth / 2⌉ rows of `cols` pairs.
inline int64_t PackedBF16Size(int64_t depth, int64_t cols) {
  return (depth + 1) / 2 * cols * 2;
}

// Packs b (depth × cols, float32, element (k, j) at b.data[k * row_stride
// + j * column_stride]) for GemmBF16: element (k, j) goes to packed[(k / 2)
// * 2 * cols + 2 * j + k % 2], rounded to bfloat16; an odd depth's last
// pair is completed with zeros. `packed` holds PackedBF16Size elements.
void PackBF16(int64_t depth, int64_t cols, MatrixView b, BFloat16Bits* packed);
// The same from a bfloat16 b, row-major with leading dimension ldb (no
// rounding; vectorised where GemmBF16 is fast).
void PackBF16(int64_t depth, int64_t cols, const BFloat16Bits* b, int64_t ldb,
              BFloat16Bits* packed);

// out[i * ldo + j] = ToBFloat16(x(i, j)) for i < rows, j < cols: float32
// features or a transposed view to bfloat16 left-hand operands.
// Vectorised (AVX-512) for a unit column stride, as is PackBF16 from
// float32.
void ConvertToBF16(int64_t rows, int64_t cols, MatrixView x, BFloat16Bits* out,
                   int64_t ldo);

// out[i * ldo + j] = x[i * row_stride + j * column_stride]: a bfloat16
// operand laid out row-major, e.g. value rows transposed.
void CopyBF16(int64_t rows, int64_t cols, const BFloat16Bits* x,
              int64_t row_stride, int64_t column_stride, BFloat16Bits* out,
              int64_t ldo);

// c[i * ldc + j] (+)= Σ_k a[i * lda + k] · b(k, j) for i < rows, j < cols,
// k < depth, with b packed by PackBF16(depth, cols, ...). Products of
// bfloat16 are exact in float32; the sum is float32, pair by pair (element
// 2p + 1's product, then 2p's, as vdpbf16ps adds them). With `accumulate`
// false, c is overwritten (it need not be initialised).
void GemmBF16(int64_t rows, int64_t cols, int64_t depth, const BFloat16Bits* a,
              int64_t lda, const BFloat16Bits* packed_b, float* c, int64_t ldc,
              bool accumulate);

// The same product with a given transposed and packed along the depth:
// packed_a = PackBF16(depth, rows, aᵀ), so that a row's pairs are adjacent
// as vdpbf16ps reads them. The same sums, in the same order, as GemmBF16.
// FAVOR+'s key pass: Σφ(k)ᵀv (m × dv) from the step's features and values,
// both packed along the tokens.
void GemmBF16PackedA(int64_t rows, int64_t cols, int64_t depth,
                     const BFloat16Bits* packed_a, const BFloat16Bits* packed_b,
                     float* c, int64_t ldc, bool accumulate);

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_GEMM_BF16_H_
