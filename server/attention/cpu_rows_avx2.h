// The feature maps' row loops on AVX2 and FMA intrinsics, for CPUs whose
// widest ISA is AVX2 (cpu_kernels.cc picks them; AVX-512 keeps its own).
// Each takes one row of `cols` floats; the last cols % 16 columns are done
// in scalar code.
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_ROWS_AVX2_H_
#define FAVOR_SERVER_ATTENTION_CPU_ROWS_AVX2_H_

#include <cstdint>

#include "server/attention/cpu_kernels.h"
#include "server/common/multiversion.h"

namespace favor::attention::cpu {

#ifdef FAVOR_X86_TARGETS
// Whether the row loops should take these versions: AVX2 and FMA are the
// widest this CPU has (within FAVOR_CPU_ISA). Decided once.
bool RowsOnAvx2();

// row[c] = exp(row[c] − offset) + epsilon; or, when column_sums is not
// null, row[c] = exp(row[c] − offset) and column_sums[c] += it. Needs AVX2
// and FMA (cpu_features.h), whatever RowsOnAvx2() says.
void RowExpAvx2(float* row, int64_t cols, float offset, float epsilon,
                float* column_sums);

// The row mapped in place by `logits` (when it has a bias), and its max.
float MapRowAndMaxAvx2(float* row, int64_t cols, LogitAffine logits);

// Σ a[c]·b[c].
float RowDotAvx2(const float* a, const float* b, int64_t cols);

// RowExpAvx2 without column sums fused with the dot product that follows
// it: row[c] = exp(row[c] − offset) + epsilon; returns Σ row[c]·z[c].
float RowExpDotAvx2(float* row, int64_t cols, float offset, float epsilon,
                    const float* z);
#endif

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_ROWS_AVX2_H_
