// A single-threaded fp32 matrix product with register tiles (AVX-512, or
// AVX2 with FMA), for the FAVOR+ CPU path and the encoder's linear layers.
// It beats the BLAS on their shapes (a few hundred rows of activations
// against a weight matrix, a short inner dimension, one operand read
// transposed in place, outputs that fit in the L2 cache) because it packs
// nothing and never zeroes its output first: the BLAS packs its weight
// operand again on every call, which costs about a fifth of a 256-row
// product (docs/performance.md).
//
// Each row of c is the same sequence of fused multiply-adds over k whatever
// the number of rows computed with it, so a row's result does not depend on
// its batch.
//
// Implementation detail of server/attention and server/model: not for other
// modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_GEMM_H_
#define FAVOR_SERVER_ATTENTION_CPU_GEMM_H_

#include <cstdint>

namespace favor::attention::cpu {

// An operand by element strides: element (i, k) is data[i * row_stride +
// k * column_stride], so a transposed view costs nothing.
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t column_stride = 1;
};

// The kernels Gemm has, narrowest first.
enum class GemmKernel {
  kPortable,  // plain loops: correct, slower than the BLAS
  kAvx2,      // 4 × 24 tiles of 256-bit registers (AVX2 and FMA)
  kAvx512,    // 6 × 64 tiles of 512-bit registers (AVX-512F)
};

// The kernel Gemm runs: the widest that this CPU has (DetectedCpuFeatures,
// so within FAVOR_CPU_ISA) and that LimitGemmKernel allows.
GemmKernel ActiveGemmKernel();
const char* GemmKernelName(GemmKernel kernel);  // "portable", "avx2", ...

// True unless Gemm runs its plain loops (then callers should prefer the
// BLAS).
bool GemmIsFast();

// For tests and benchmarks: Gemm runs no kernel wider than `kernel`
// (kAvx512: no limit). Process-wide.
void LimitGemmKernel(GemmKernel kernel);
// LimitGemmKernel(kAvx512) or LimitGemmKernel(kPortable).
void SetFastGemmEnabled(bool enabled);

// What is applied to each sum as it is stored.
enum class Epilogue {
  kNone,
  // GELU, erf form (cpu_gelu.h): within 1 ulp or so of x·Φ(x). Applied in
  // the AVX-512 tiles' registers; the other kernels apply the same
  // arithmetic in a pass over c after the product (GemmFusesGelu).
  kGelu,
};

// Whether Epilogue::kGelu runs inside the tiles (the AVX-512 kernel), so
// that asking for it saves the activation's pass; elsewhere it costs more
// than LibTorch's own GELU.
bool GemmFusesGelu();

// c[i * ldc + j] (+)= Σ_k a(i, k) · b[k * ldb + j] for i < rows, j < cols,
// k < depth; with `accumulate` false, c is overwritten (it need not be
// initialised). With `bias` (cols floats) the sums also start from bias[j]:
// y = x·W + b, or with `accumulate` a residual r += x·W + b, in one pass.
// `epilogue` is applied to each finished sum (after the accumulation).
void Gemm(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
          const float* bias = nullptr, Epilogue epilogue = Epilogue::kNone);

// A constant b (a layer's weight) packed once for `kernel`'s tiles, so that
// each tile reads its panel of b as one contiguous run: b's columns go in
// panels of PanelColumns(kernel), each stored as `depth` rows of the panel's
// width, the last panel padded with zeros. Unpacked, a tile reads `depth`
// short pieces a whole row of b apart; on AMD's Zen 3 (AVX2) rows 3 or 4
// KiB apart (768 or 1,024 columns) ran the product at half the speed
// (docs/performance.md).
//
// The columns of one panel: 24 for AVX2, 64 for AVX-512; 0 for kPortable,
// which has nothing to pack for.
int64_t PanelColumns(GemmKernel kernel);
// Floats that PackB writes (0 for kPortable).
int64_t PackedBSize(int64_t depth, int64_t cols, GemmKernel kernel);
// Packs b (depth × cols, row stride ldb) into `packed` (PackedBSize floats)
// for `kernel` (not kPortable).
void PackB(int64_t depth, int64_t cols, const float* b, int64_t ldb,
           GemmKernel kernel, float* packed);
// Gemm with b packed by PackB for `packed_for`, which must be the kernel
// that Gemm would run (ActiveGemmKernel()): the same fused multiply-adds in
// the same order, so the same bits as Gemm on the unpacked b.
void GemmPackedB(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
                 const float* packed, GemmKernel packed_for, float* c,
                 int64_t ldc, bool accumulate, const float* bias = nullptr,
                 Epilogue epilogue = Epilogue::kNone);

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_GEMM_H_
