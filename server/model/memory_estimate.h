// What embedding a batch costs a model in memory: the estimate favor-server's
// memory budget (batching/memory_budget.h, --max_memory_bytes) reserves for
// a batch before it runs. docs/performance.md ("The memory budget") derives
// the formula and checks it against measured peaks.
//
// The estimate follows the encoder's allocations (encoder.cc) at the layer
// where they peak, for an encoder block (cross-attention and ISAB blocks
// allocate less: it bounds them too). Per token of an input:
//   the input's ids on the way in (proto, int32 copies, int64 tensor): 24
//   positions (absolute or rotary):                                    8
//   rotary cos/sin tables, when made whole (≤ max_rotary_table_bytes):  4·d
//   the vectors between layers (H in the weights' dtype):              H·e
//   one attention pass's float32 Q, K, V and output, for the c heads a
//     pass holds (c = max_attention_pass_bytes / (16·d·n), 1 to heads): 16·d·c
//   the gathered attention output when heads run in several passes:    H·e
//   token vectors returned (token embeddings, spans, no pooling): host
//     copy, response and its serialisation:                            12·H
// with H the hidden size, d the head size, e the bytes of the weights'
// dtype (4 float32, 2 bfloat16) and n the input's tokens. A batch adds,
// once, each CPU thread's block buffers (block_tokens rows of the
// feed-forward and the norms: block·(8·I + 16·H), I the feed-forward size)
// and library work space (4 MiB). On a CUDA device the tensors live in GPU
// memory, which this budget does not cover: only the ids and the returned
// vectors count there.
//
// Summing inputs bounds the batch from above: the encoder chooses its heads
// per pass from the batch's total, never more heads than for each input
// alone. LibTorch-free.
#ifndef FAVOR_SERVER_MODEL_MEMORY_ESTIMATE_H_
#define FAVOR_SERVER_MODEL_MEMORY_ESTIMATE_H_

#include <cstdint>

#include "server/model/model_config.h"

namespace favor::model {

// The numbers the estimate depends on, fixed when the model loads
// (ModelDescription::memory).
struct MemoryProfile {
  // The shape, from the config (MemoryProfileOf).
  int64_t hidden_size = 0;
  int64_t head_dim = 0;
  int64_t num_heads = 1;
  int64_t intermediate_size = 0;
  bool positions = false;  // absolute or rotary position ids
  bool rotary = false;
  // Bytes of one element of the weights and of the vectors between layers.
  int64_t value_bytes = 4;
  // The encoder's limits (ModelOptions).
  int64_t max_attention_pass_bytes = int64_t{1} << 30;
  int64_t max_rotary_table_bytes = int64_t{64} << 20;
  int64_t block_tokens = 256;
  // CPU threads that run blocks at once.
  int64_t num_threads = 1;
  // False on a CUDA device: only host memory is counted.
  bool on_host = true;
};

// The shape fields of `config`; the others keep their defaults.
MemoryProfile MemoryProfileOf(const ModelConfig& config);

// Bytes one input of `num_tokens` tokens adds to the peak of its batch;
// `token_vectors`: its token vectors are returned (token embeddings,
// late-chunking spans, or no pooling).
int64_t EstimateInputMemoryBytes(const MemoryProfile& profile,
                                 int64_t num_tokens, bool token_vectors);

// Bytes any batch needs besides its inputs' (per-thread block buffers and
// library work space).
int64_t EstimateBatchOverheadBytes(const MemoryProfile& profile);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MEMORY_ESTIMATE_H_
