// Exact softmax attention's CPU path on the register-tile products: one
// query tile of a head group, its scores for a block of keys made by one
// product laid out keys × queries (so that the online softmax's running
// maximum and sum are per column, and vectorise across the queries), the
// exp and the masks in one pass over the block while it is in the L2 cache,
// and the block's probabilities times the values by a second product into
// the tile's running outputs. It computes what exact_attention.cc's tensor
// loop computes (padding, causal and sliding-window masks; a query that
// sees no key gets zeros), and is tested against it and against the
// softmax written out.
//
// Implementation detail of server/attention (attention.h is the interface).
#ifndef FAVOR_SERVER_ATTENTION_EXACT_CPU_PATH_H_
#define FAVOR_SERVER_ATTENTION_EXACT_CPU_PATH_H_

#include <cstdint>

#include "server/attention/attention.h"
#include "server/attention/head_group.h"

namespace favor::attention {

// Whether the path serves `group`: on the CPU, Q, K, V and the output all
// float32 or all bfloat16 (a bfloat16 model's attention inputs: widened
// exactly a block at a time, everything computed in float32 and the output
// rounded back) with unit column stride, a keep mask (if any) on the CPU,
// and the products on cpu::Gemm's tiles (AVX-512, or AVX2 with packed
// operands).
bool ExactCpuPathApplies(const HeadGroup& group);

// Writes the outputs of queries [q_begin, q_end) of every head of `group`.
void ExactQueryTileCpu(const HeadGroup& group, const AttentionOptions& options,
                       int64_t q_begin, int64_t q_end);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_EXACT_CPU_PATH_H_
