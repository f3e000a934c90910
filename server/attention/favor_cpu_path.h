// FAVOR+'s (and FAVOR++'s) fused CPU path: the key sums and the query outputs
// of one head group in raw-pointer loops around single-threaded matrix products
// (favor_cpu_steps.h: cpu::Gemm's tiles on AVX-512 and AVX2, the BLAS
// elsewhere), in steps small enough that a
// step's features stay in the L2 cache between the product that makes them
// and the one that uses them. It computes what linear_attention.cc's LibTorch
// path computes for Kernel::kFavorPositive and kFavorPlusPlus (whose per-head
// logit map, HeadGroup::logits, the exp loops apply), and is tested against
// it.
// Implementation detail of server/attention (attention.h is the interface).
#ifndef FAVOR_SERVER_ATTENTION_FAVOR_CPU_PATH_H_
#define FAVOR_SERVER_ATTENTION_FAVOR_CPU_PATH_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "server/attention/attention.h"
#include "server/attention/features.h"
#include "server/attention/head_group.h"
#include "server/attention/key_state.h"

namespace favor::attention {

// Whether the fused path serves `group`: FAVOR+ or FAVOR++, on the CPU, one
// head per group, rows with unit column stride, and Q, K, V and the output
// float32 throughout, or bfloat16 throughout where cpu::GemmBF16IsFast()
// (then the products take bfloat16 operands on cpu::GemmBF16 and the exp,
// norms, normaliser and all sums stay float32).
bool FavorCpuPathApplies(const FeatureContext& context, const HeadGroup& group);

// The key sums of tokens [begin, end) of `group`, shifted by their own
// maximum (a scalar shift, as KeyShift::kScalar).
KeyState AccumulateKeysFavorCpu(const FeatureContext& context,
                                const AttentionOptions& options,
                                const HeadGroup& group, int64_t begin,
                                int64_t end);

// Writes the outputs of queries [begin, end) of `group` given `state`, the
// (1, m, dv + 1) query state [Σφ(k)vᵀ | Σφ(k)] with ε folded in.
void QueriesFavorCpu(const FeatureContext& context,
                     const AttentionOptions& options, const HeadGroup& group,
                     const at::Tensor& state, int64_t begin, int64_t end);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_FAVOR_CPU_PATH_H_
