#include "server/model/memory_estimate.h"

#include <algorithm>

namespace favor::model {
namespace {

// The ids of one token on their way in: varint in the request (about 3
// bytes), the request's int32 field, the service's and the batch's int32
// copies, the model's int64 tensor, rounded up.
constexpr int64_t kInputBytesPerToken = 24;
// Library work space per thread (BLAS buffers, the attention kernels'
// chunk buffers, malloc arenas), from the measured peaks' intercept.
constexpr int64_t kWorkSpaceBytesPerThread = int64_t{4} << 20;

// The heads one attention pass holds for `tokens` rows (Encoder::
// HeadsPerPass, with as many key rows as query rows).
int64_t HeadsPerPass(const MemoryProfile& profile, int64_t tokens) {
  const int64_t bytes_per_head =
      16 * profile.head_dim * std::max<int64_t>(1, tokens);
  return std::clamp<int64_t>(
      profile.max_attention_pass_bytes / std::max<int64_t>(1, bytes_per_head),
      1, std::max<int64_t>(1, profile.num_heads));
}

// Per token, on the model's device.
int64_t DeviceBytesPerToken(const MemoryProfile& profile, int64_t tokens) {
  const int64_t hidden = profile.hidden_size * profile.value_bytes;
  const int64_t heads = HeadsPerPass(profile, tokens);
  int64_t bytes = hidden + 16 * profile.head_dim * heads;
  if (heads < profile.num_heads) bytes += hidden;  // gathered passes
  if (profile.positions) bytes += 8;
  const int64_t rotary_table = 4 * profile.head_dim;
  if (profile.rotary &&
      tokens * rotary_table <= profile.max_rotary_table_bytes) {
    bytes += rotary_table;
  }
  return bytes;
}

}  // namespace

MemoryProfile MemoryProfileOf(const ModelConfig& config) {
  MemoryProfile profile;
  profile.hidden_size = config.hidden_size;
  profile.head_dim = config.head_dim();
  profile.num_heads = config.num_attention_heads;
  // A gated feed-forward's product is twice as wide (x·[W1 | Wg]), then
  // its half-width result: count it as twice the width.
  profile.intermediate_size =
      config.intermediate_size *
      (config.feed_forward == FeedForward::kGated ? 2 : 1);
  profile.positions =
      config.position_embedding_type != PositionEmbedding::kNone;
  profile.rotary = config.position_embedding_type == PositionEmbedding::kRotary;
  return profile;
}

int64_t EstimateInputMemoryBytes(const MemoryProfile& profile,
                                 int64_t num_tokens, bool token_vectors) {
  int64_t per_token = kInputBytesPerToken;
  if (profile.on_host) per_token += DeviceBytesPerToken(profile, num_tokens);
  if (token_vectors) per_token += 12 * profile.hidden_size;
  return num_tokens * per_token;
}

int64_t EstimateBatchOverheadBytes(const MemoryProfile& profile) {
  if (!profile.on_host) return kWorkSpaceBytesPerThread;
  const int64_t block_buffers =
      profile.block_tokens *
      (8 * profile.intermediate_size + 16 * profile.hidden_size);
  return profile.num_threads * (block_buffers + kWorkSpaceBytesPerThread);
}

}  // namespace favor::model
