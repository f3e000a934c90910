// A single-threaded fp32 matrix product for the FAVOR+ CPU path, with AVX-512
// register tiles. It beats the BLAS on that path's shapes (a short inner
// dimension, one operand read transposed in place, outputs that fit in the
// L2 cache) because it packs nothing and never zeroes its output first: on
// one core, FAVOR+'s products run at 0.92-0.94 of OpenBLAS's 2048³ sgemm
// rate on this kernel and at 0.80 on OpenBLAS (attention_bench's Products
// rows, docs/performance.md).
//
// Implementation detail of server/attention: not for other modules.
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

// True when Gemm runs its AVX-512 kernel (this CPU has AVX-512 and tests
// have not turned it off); elsewhere it is a plain loop, correct but slower
// than the BLAS, and callers should prefer the BLAS.
bool GemmIsFast();

// For tests and benchmarks (attention_bench --cpu_gemm=0): false makes
// Gemm take its plain loop and GemmIsFast() false, so that callers take
// their other path; true restores the default. Process-wide.
void SetFastGemmEnabled(bool enabled);

// c[i * ldc + j] (+)= Σ_k a(i, k) · b[k * ldb + j] for i < rows, j < cols,
// k < depth; with `accumulate` false, c is overwritten (it need not be
// initialised).
void Gemm(int64_t rows, int64_t cols, int64_t depth, MatrixView a,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_GEMM_H_
