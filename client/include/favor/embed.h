// The Embed call's plain types: what to ask for (EmbedOptions) and what
// comes back (EmbedResult, one Embedding per input). They mirror
// favor.v1.EmbedRequest / EmbedResponse (proto/favor/v1/favor.proto, whose
// comments are the reference for each field) without protobuf.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "favor/call_options.h"
#include "favor/tensor.h"

namespace favor {

// One input of an Embed call: token ids, each below the model's vocab_size,
// already framed as the model expects (the server adds no special tokens).
using TokenIds = std::vector<uint32_t>;

// How a sequence's output vectors become one embedding.
enum class Pooling {
  // The model's default pooling (ModelConfig.default_pooling).
  kModelDefault = 0,
  // The mean of the output vectors.
  kMean = 1,
  // The first output vector (conventionally [CLS]).
  kCls = 2,
  // Learned attention pooling (models with has_attention_pooler only).
  kAttention = 3,
  // No pooled embedding, only Embedding.token_embeddings.
  kNone = 4,
};

// Whether output vectors are L2-normalised.
enum class Normalization {
  // The model's default (ModelConfig.default_normalization).
  kModelDefault = 0,
  // As the model computes them.
  kNone = 1,
  // Each vector divided by max(|v|₂, 1e-12).
  kL2 = 2,
};

// What to do with an input longer than the model's max_tokens_per_input.
enum class Truncation {
  // Refuse the call with INVALID_ARGUMENT naming the input and the limit.
  kNone = 1,
  // Keep the last max_tokens_per_input tokens.
  kLeft = 2,
  // Keep the first max_tokens_per_input tokens.
  kRight = 3,
};

// Everything of an Embed call but its inputs.
struct EmbedOptions {
  // Name of the model; empty means the server's default model.
  std::string model;
  Pooling pooling = Pooling::kModelDefault;
  Normalization normalization = Normalization::kModelDefault;
  Truncation truncation = Truncation::kNone;
  // Also return each input's per-position output vectors.
  bool include_token_embeddings = false;
  // Element type of those per-position outputs; float16 and bfloat16 halve
  // their bytes.
  Dtype token_embeddings_dtype = Dtype::kFloat32;
  Priority priority = Priority::kNormal;
};

// The output for one input.
struct Embedding {
  // The pooled embedding, hidden_size values; empty with Pooling::kNone.
  std::vector<float> values;
  // Per-position output vectors, shape (positions, hidden_size); set only
  // with include_token_embeddings or Pooling::kNone.
  std::optional<Tensor> token_embeddings;
  // Tokens of this input the model read (after truncation).
  int64_t num_tokens = 0;
  // Tokens truncation dropped from this input.
  int64_t num_truncated_tokens = 0;
};

// The answer to one Embed call.
struct EmbedResult {
  // One embedding per input, in input order.
  std::vector<Embedding> embeddings;
  // The model that computed them, and its version.
  std::string model;
  std::string model_version;
  // Tokens read over all inputs.
  int64_t num_tokens = 0;
  // Where the time went on the server (the slowest input's).
  ServerTiming timing;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_H_
