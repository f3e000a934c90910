// The pieces that the fused FAVOR+ CPU path's steps (favor_cpu_path.cc) are
// made of: the per-thread work buffers, the single-threaded matrix products
// on the best back end for this CPU, and the value rows with padding zeroed.
// Raw row-major pointers throughout, no tensors: the steps are 64 to 128
// tokens long, short enough for the cost of tensor views to show.
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_FAVOR_CPU_STEPS_H_
#define FAVOR_SERVER_ATTENTION_FAVOR_CPU_STEPS_H_

#include <cstdint>

#include "server/attention/cpu_gemm.h"
#include "server/attention/cpu_gemm_bf16.h"

namespace favor::attention::favor_cpu {

// The path's per-task work buffers, reused by each thread from one call to
// the next. Fresh ones would be mapped anew for every task (glibc maps
// blocks this size) and faulted in page by page when first written:
// measured as three quarters of a 4k-token call's page faults. A thread
// keeps its buffers (chunk × m and chunk × dv floats: 80 KiB on the
// AVX-512 path's 64-token steps, 640 KiB on the BLAS path's 512) until it
// exits. The bfloat16 path adds the bfloat16 operands of its products and,
// under a mask, the value rows with padding zeroed; the packed AVX2 path
// its packed right-hand operands.
enum class ScratchSlot {
  kFeatures = 0,
  kValueRows = 1,
  kKeptValuesBF16 = 2,
  kFeaturesBF16 = 3,
  kValuesBF16 = 4,
  kPackedProjection = 5,
  kPackedProjectionF32 = 6,
  kPackedValues = 7,
  // Exact softmax's CPU path (exact_cpu_path.cc): a query tile transposed,
  // a block of its scores, its running outputs, on AVX2 the first and the
  // second product's right-hand operand packed, and bfloat16 rows widened
  // (one block of queries, keys or values at a time).
  kExactQueries = 8,
  kExactScores = 9,
  kExactOutputs = 10,
  kExactPackedQueries = 11,
  kExactPackedValues = 12,
  kExactWideRows = 13,
  kCount = 14
};
// The thread's buffer in `slot`, at least rows × cols floats (or
// `elements` bfloat16), 64-byte aligned; grown as needed, its contents
// undefined.
float* Scratch(ScratchSlot slot, int64_t rows, int64_t cols);
cpu::BFloat16Bits* ScratchBF16(ScratchSlot slot, int64_t elements);

// Whether the products run on cpu::Gemm's AVX-512 tiles, reading every
// operand in place.
bool ProductsOnGemm();

// Whether they run on its AVX2 tiles with the right-hand operand packed
// (cpu::PackB): the projection and the state once per pass, each step's
// values once per step. Read in place, a tile's pieces of the values (rows
// of the fused query | key | value product, 3 KiB apart) and of the
// projection (1 KiB) ran the products at 0.89-0.91 of the BLAS's rate on
// AMD's Zen 3 (docs/performance.md), so unpacked AVX2 kept the BLAS.
bool ProductsOnPackedAvx2();

// b (depth × cols, row stride ldb) packed for the AVX2 tiles into the
// thread's `slot`.
const float* PackedForAvx2(ScratchSlot slot, int64_t depth, int64_t cols,
                           const float* b, int64_t ldb);

// c (+)= a · b with b packed by PackedForAvx2.
void PackedProduct(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
                   const float* packed, float* c, int64_t ldc, bool accumulate);

// c (+)= a · b (b and c with unit column stride): cpu::Gemm where
// ProductsOnGemm(), else the BLAS.
void MatMul(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
            const float* b, int64_t ldb, float* c, int64_t ldc,
            bool accumulate);

// `rows` rows of values (row stride `stride`) with padding rows zeroed
// (copied into `scratch`, rows × dv, only when there is a mask), and their
// sum and count added to `value_sums` (dv + 1 floats) for the ε term.
// Returns the rows to use.
cpu::MatrixView KeptValues(const float* values, int64_t stride, int64_t rows,
                           int64_t dv, const uint8_t* keep, float* scratch,
                           float* value_sums);

// bfloat16 value rows (row stride `stride`), or, under a mask, their copy
// in `scratch` (rows × dv) with padding rows zeroed: a padding row's
// feature is 0, but 0 · NaN would not be. *kept_stride is the returned
// rows' stride.
const cpu::BFloat16Bits* KeptValueBits(const cpu::BFloat16Bits* values,
                                       int64_t stride, int64_t rows, int64_t dv,
                                       const uint8_t* keep,
                                       cpu::BFloat16Bits* scratch,
                                       int64_t* kept_stride);

}  // namespace favor::attention::favor_cpu

#endif  // FAVOR_SERVER_ATTENTION_FAVOR_CPU_STEPS_H_
