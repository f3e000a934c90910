// The encoder's linear layers in 8-bit integers on the CPU (ComputeDType
// kInt8): y = x·W + b with W quantised once at load, per output column
// (symmetric), and each row of x quantised when the product runs (dynamic,
// asymmetric: its own scale and zero point). The integer sums are exact
// (int32) and dequantised once per output:
//
//   y(i, j) = sx(i) · sw(j) · (Σ_k qx(i, k) · qw(k, j) − zx(i) · Σ_k qw(k, j))
//             + b(j)
//
// On AVX2 the sums run on vpmaddubsw (unsigned × signed bytes, pairs added
// into int16 with saturation) and vpmaddwd: 32 multiply-adds in three
// instructions where float32 does 8 in one. A pair of products must fit
// int16 for the sums to be exact, so activations take 0..kInt8ActivationMax
// and weights −kInt8WeightMax..kInt8WeightMax with 2 · 127 · 127 = 32,258 ≤
// 32,767 (oneDNN takes the other half: 8-bit activations, 7-bit weights).
// With AVX512-VNNI, vpdpbusd does 64 such multiply-adds in one instruction,
// straight into int32 (no int16 step), reading the same packed weight.
//
// The plain-loop kernel reads the same packed weight and makes the same
// int32 sums and the same float epilogue: the same bits as AVX2's and
// AVX512-VNNI's, on any CPU (tests compare them).
//
// Implementation detail of server/attention and server/model: not for other
// modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_H_
#define FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_H_

#include <cstdint>

namespace favor::attention::cpu {

inline constexpr int kInt8ActivationMax = 127;  // qx in [0, 127]
inline constexpr int kInt8WeightMax = 127;      // qw in [−127, 127]

// The kernels GemmInt8 has.
enum class Int8Kernel {
  kPortable,    // plain loops
  kAvx2,        // 4 × 24 tiles of int32 sums (AVX2): three panels
  kAvx512Vnni,  // 6 × 64 tiles on vpdpbusd (AVX512-VNNI): eight panels
};

// Whether this CPU runs `kernel` (DetectedCpuFeatures, so within
// FAVOR_CPU_ISA): AVX2 for kAvx2, AVX-512 F and BW with VNNI for
// kAvx512Vnni.
bool HasInt8Kernel(Int8Kernel kernel);

// The widest kernel the CPU has (HasInt8Kernel) that LimitGemmKernel
// allows: kAvx512Vnni under kAvx512, kAvx2 under kAvx2; else kPortable.
Int8Kernel ActiveInt8Kernel();
// "portable", "avx2", "avx512-vnni"
const char* Int8KernelName(Int8Kernel kernel);

// Depth rounded up to the 4 bytes that one 32-bit lane multiplies.
int64_t Int8PaddedDepth(int64_t depth);
// Columns of one packed panel: 8, one AVX2 vector of int32 sums (the AVX2
// tile reads three; the AVX512-VNNI tile joins two per vector, four
// vectors). A layer's columns can be sliced at any multiple of 8
// (Linear::Columns: the fused query|key|value layer's parts, head groups).
inline constexpr int64_t kInt8PanelColumns = 8;

// A weight quantised by QuantizeWeightInt8: panels of kInt8PanelColumns
// columns, each Int8PaddedDepth(depth) / 4 groups of (8 columns × 4 bytes,
// k fastest), the last panel's missing columns and the padded k zero, then
// two panels of zeros (an AVX2 tile reads three panels from any panel on,
// an AVX512-VNNI vector the panel after its first).
struct Int8Weight {
  const int8_t* packed = nullptr;      // Int8PackedWeightBytes bytes
  const float* scales = nullptr;       // cols: sw(j)
  const int32_t* column_sums = nullptr;  // cols: Σ_k qw(k, j)
};

int64_t Int8PackedWeightBytes(int64_t depth, int64_t cols);

// Quantises b (depth × cols, element (k, j) at b[k * ldb + j]):
// sw(j) = max_k |b(k, j)| / kInt8WeightMax (1 for a zero column), qw =
// round-to-nearest-even(b / sw).
void QuantizeWeightInt8(int64_t depth, int64_t cols, const float* b,
                        int64_t ldb, int8_t* packed, float* scales,
                        int32_t* column_sums);

// Rows of activations quantised by QuantizeRowsInt8.
struct Int8Rows {
  const uint8_t* data = nullptr;  // row i at data + i * stride
  int64_t stride = 0;             // bytes, at least Int8PaddedDepth(depth)
  const float* scales = nullptr;      // sx(i)
  const int32_t* zero_points = nullptr;  // zx(i)
};

// Quantises rows × depth floats of a (row stride lda) into q (row stride
// q_stride ≥ Int8PaddedDepth(depth), the padding zeroed): per row, lo =
// min(0, min x), hi = max(0, max x), sx = (hi − lo) / kInt8ActivationMax (1
// for a zero row), zx = round(−lo / sx), qx = clamp(round(x / sx) + zx, 0,
// kInt8ActivationMax). A non-finite x is a caller's bug (weights are checked
// finite at load); it quantises to 0.
void QuantizeRowsInt8(int64_t rows, int64_t depth, const float* a, int64_t lda,
                      uint8_t* q, int64_t q_stride, float* scales,
                      int32_t* zero_points);

// c(i, j) (+)= the formula above, for i < rows, j < cols; with `accumulate`
// false c is overwritten (need not be initialised); `bias` (cols floats)
// may be null. Rows are independent: a row's result does not depend on the
// others computed with it.
void GemmInt8(int64_t rows, int64_t cols, int64_t depth, const Int8Rows& a,
              const Int8Weight& b, float* c, int64_t ldc, bool accumulate,
              const float* bias = nullptr);
// The same on a chosen kernel (tests; kAvx2 only where the CPU has it).
void GemmInt8With(Int8Kernel kernel, int64_t rows, int64_t cols,
                  int64_t depth, const Int8Rows& a, const Int8Weight& b,
                  float* c, int64_t ldc, bool accumulate,
                  const float* bias = nullptr);

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_GEMM_INT8_H_
