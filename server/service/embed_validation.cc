#include "server/service/embed_validation.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace favor::service {
namespace {

// The tokens input `index` keeps under `truncation`, or INVALID_ARGUMENT.
absl::StatusOr<int64_t> KeptTokens(int index, int64_t num_tokens,
                                   v1::Truncation truncation,
                                   const EmbedLimits& limits) {
  if (num_tokens == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs[", index,
                     "].token_ids is empty; each input needs at least 1 "
                     "token"));
  }
  if (num_tokens <= limits.max_tokens_per_input) return num_tokens;
  if (truncation == v1::TRUNCATION_LEFT || truncation == v1::TRUNCATION_RIGHT) {
    return limits.max_tokens_per_input;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "inputs[", index, "].token_ids has ", num_tokens, " tokens; at most ",
      limits.max_tokens_per_input,
      " (max_tokens_per_input) unless truncation is TRUNCATION_LEFT or "
      "TRUNCATION_RIGHT"));
}

absl::Status CheckCounts(const v1::EmbedRequest& request,
                         const EmbedLimits& limits) {
  if (request.inputs_size() == 0) {
    return absl::InvalidArgumentError(
        "inputs is empty; an Embed call needs at least 1 input");
  }
  if (request.inputs_size() > limits.max_inputs_per_call) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs has ", request.inputs_size(), " inputs; at most ",
                     limits.max_inputs_per_call, " (max_inputs_per_call)"));
  }
  switch (request.truncation()) {
    case v1::TRUNCATION_UNSPECIFIED:
    case v1::TRUNCATION_NONE:
    case v1::TRUNCATION_LEFT:
    case v1::TRUNCATION_RIGHT:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("truncation has unknown value ", request.truncation()));
  }
}

absl::Status CheckTokenIds(int index, const v1::EmbedInput& input,
                           int64_t vocab_size) {
  for (int j = 0; j < input.token_ids_size(); ++j) {
    if (static_cast<int64_t>(input.token_ids(j)) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", index, "].token_ids[", j, "] is ", input.token_ids(j),
          "; must be in [0, ", vocab_size, ") (vocab_size)"));
    }
  }
  return absl::OkStatus();
}

PreparedInput Truncate(const v1::EmbedInput& input, int64_t kept,
                       v1::Truncation truncation) {
  PreparedInput prepared;
  const int64_t size = input.token_ids_size();
  const int64_t begin = truncation == v1::TRUNCATION_LEFT ? size - kept : 0;
  prepared.token_ids.assign(input.token_ids().begin() + begin,
                            input.token_ids().begin() + begin + kept);
  prepared.num_truncated_tokens = size - kept;
  return prepared;
}

}  // namespace

EmbedLimits LimitsFor(const model::ModelDescription& model,
                      int64_t max_inputs_per_call,
                      int64_t max_tokens_per_call) {
  EmbedLimits limits;
  limits.max_inputs_per_call = max_inputs_per_call;
  limits.max_tokens_per_call = max_tokens_per_call;
  limits.max_tokens_per_input = model.config.max_sequence_length;
  limits.vocab_size = model.config.vocab_size;
  return limits;
}

absl::StatusOr<std::vector<PreparedInput>> PrepareEmbedInputs(
    const v1::EmbedRequest& request, const EmbedLimits& limits) {
  RETURN_IF_ERROR(CheckCounts(request, limits));
  std::vector<int64_t> kept(request.inputs_size());
  int64_t total = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(kept[i], KeptTokens(i, request.inputs(i).token_ids_size(),
                                         request.truncation(), limits));
    RETURN_IF_ERROR(CheckTokenIds(i, request.inputs(i), limits.vocab_size));
    total += kept[i];
  }
  if (total > limits.max_tokens_per_call) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs have ", total, " tokens in all (after truncation); at most ",
        limits.max_tokens_per_call, " (max_tokens_per_call)"));
  }
  std::vector<PreparedInput> prepared;
  prepared.reserve(request.inputs_size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    prepared.push_back(
        Truncate(request.inputs(i), kept[i], request.truncation()));
  }
  return prepared;
}

namespace {

absl::StatusOr<model::Pooling> ResolvePooling(
    v1::Pooling pooling, const model::ModelDescription& model) {
  switch (pooling) {
    case v1::POOLING_UNSPECIFIED:
      return model.config.pooling;
    case v1::POOLING_MEAN:
      return model::Pooling::kMean;
    case v1::POOLING_CLS:
      return model::Pooling::kCls;
    case v1::POOLING_NONE:
      return model::Pooling::kNone;
    case v1::POOLING_ATTENTION:
      if (model.has_attention_pooling) return model::Pooling::kAttention;
      return absl::InvalidArgumentError(absl::StrCat(
          "pooling POOLING_ATTENTION needs a model with an attention pooler "
          "(has_attention_pooler); model '",
          model.name, "' has none"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("pooling has unknown value ", pooling));
  }
}

absl::StatusOr<bool> ResolveNormalize(v1::Normalization normalization,
                                      const model::ModelDescription& model) {
  switch (normalization) {
    case v1::NORMALIZATION_UNSPECIFIED:
      return model.config.normalize;
    case v1::NORMALIZATION_NONE:
      return false;
    case v1::NORMALIZATION_L2:
      return true;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("normalization has unknown value ", normalization));
  }
}

absl::StatusOr<v1::Dtype> ResolveOutputDtype(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_UNSPECIFIED:
    case v1::DTYPE_FLOAT32:
      return v1::DTYPE_FLOAT32;
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
      return dtype;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "token_embeddings_dtype has unknown value ", dtype,
          "; supported: DTYPE_FLOAT32, DTYPE_FLOAT16, DTYPE_BFLOAT16"));
  }
}

}  // namespace

absl::StatusOr<ResolvedEmbedOptions> ResolveEmbedOptions(
    const v1::EmbedRequest& request, const model::ModelDescription& model) {
  ResolvedEmbedOptions resolved;
  ASSIGN_OR_RETURN(resolved.pooling, ResolvePooling(request.pooling(), model));
  ASSIGN_OR_RETURN(resolved.normalize,
                   ResolveNormalize(request.normalization(), model));
  ASSIGN_OR_RETURN(resolved.token_embeddings_dtype,
                   ResolveOutputDtype(request.token_embeddings_dtype()));
  resolved.include_token_embeddings = request.include_token_embeddings() ||
                                      resolved.pooling == model::Pooling::kNone;
  if (!v1::Priority_IsValid(request.priority())) {
    return absl::InvalidArgumentError(
        absl::StrCat("priority has unknown value ", request.priority()));
  }
  return resolved;
}

}  // namespace favor::service
