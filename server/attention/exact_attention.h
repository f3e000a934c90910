// Exact softmax attention over head groups. Where LibTorch has
// at::scaled_dot_product_attention (2.x) and AttentionOptions::
// softmax_on_libtorch is set, a group runs on it: fused flash attention on
// the CPU, FlashAttention or memory-efficient attention on a GPU. Those
// fused kernels take no padding mask on every backend, and a backend
// without one falls back to the whole score matrix, so a group with a keep
// mask goes to LibTorch only while its scores stay under kMaxMaskedScores.
// Every other group runs Favor's own kernel: tiles with an online softmax
// (running max and sum per query), so memory is O(tile²) however long the
// sequence; on the CPU's register tiles in float32 or bfloat16 that is
// exact_cpu_path.h, elsewhere a loop of tensor operations. Implementation
// detail of server/attention.
#ifndef FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_
#define FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "server/attention/attention.h"
#include "server/attention/head_group.h"

namespace favor::attention {

// G·Lq·Lk of the largest masked group that LibTorch's attention takes: a
// float32 score matrix of 64 MiB.
inline constexpr int64_t kMaxMaskedScores = int64_t{16} << 20;

// Computes every group's output in place: on the CPU's intra-op threads
// when `parallel`, else in order on the calling thread. May throw c10::Error.
void RunExactAttention(const AttentionOptions& options,
                       const std::vector<HeadGroup>& groups, bool parallel);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_
