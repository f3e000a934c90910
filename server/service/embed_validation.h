// Edge checks of an Embed call, before anything is queued: every bad input
// is INVALID_ARGUMENT with a message naming the field (with its index) and
// the limit. Nothing is allocated in proportion to a size the client only
// claims: token counts are read from the parsed message, whose size gRPC's
// max_message_bytes already bounds.
#ifndef FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_
#define FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/model/model.h"

namespace favor::service {

// What one Embed call may ask of one model.
struct EmbedLimits {
  int64_t max_inputs_per_call = 1024;
  int64_t max_tokens_per_call = int64_t{1} << 20;
  int64_t max_tokens_per_input = 512;  // the model's max_sequence_length
  int64_t vocab_size = 30522;
};

// One input, checked and truncated, ready for the batcher.
struct PreparedInput {
  std::vector<int32_t> token_ids;
  int64_t num_truncated_tokens = 0;
};

// The request's per-call choices, resolved against the model's defaults.
struct ResolvedEmbedOptions {
  model::Pooling pooling = model::Pooling::kMean;  // kNone: no pooled vector
  bool normalize = false;
  bool include_token_embeddings = false;  // always true with kNone
  v1::Dtype token_embeddings_dtype = v1::DTYPE_FLOAT32;
};

EmbedLimits LimitsFor(const model::ModelDescription& model,
                      int64_t max_inputs_per_call, int64_t max_tokens_per_call);

// Checks the inputs against `limits` and applies the truncation policy.
absl::StatusOr<std::vector<PreparedInput>> PrepareEmbedInputs(
    const v1::EmbedRequest& request, const EmbedLimits& limits);

// Checks the enums (pooling, normalization, truncation, dtype, priority) and
// resolves the unspecified ones against `model`.
absl::StatusOr<ResolvedEmbedOptions> ResolveEmbedOptions(
    const v1::EmbedRequest& request, const model::ModelDescription& model);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_
