#include "server/service/embed_validation.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"

namespace favor::service {
namespace {

absl::Status CheckCounts(int num_inputs, const EmbedLimits& limits,
                         absl::string_view field, absl::string_view call) {
  if (num_inputs == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is empty; ", call, " call needs at least 1 ",
                     field == "inputs" ? "input" : "text"));
  }
  if (num_inputs > limits.max_inputs_per_call) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", num_inputs, " ", field, "; at most ",
                     limits.max_inputs_per_call, " (max_inputs_per_call)"));
  }
  return absl::OkStatus();
}

// Exactly one of token_ids and text.
absl::Status CheckInputKind(int index, const v1::EmbedInput& input) {
  if (input.token_ids_size() == 0 && input.text().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs[", index, "].token_ids is empty and inputs[", index,
        "].text is empty; each input needs at least 1 token id or a "
        "non-empty text"));
  }
  if (input.token_ids_size() != 0 && !input.text().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs[", index,
                     "] sets both token_ids and text; exactly one of the two"));
  }
  return absl::OkStatus();
}

absl::Status CheckTextBytes(int64_t bytes, const EmbedLimits& limits,
                            absl::string_view field) {
  if (bytes <= limits.max_text_bytes_per_call) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " hold ", bytes, " bytes of text in all; at most ",
      limits.max_text_bytes_per_call, " (max_text_bytes_per_call)"));
}

absl::Status CheckTokenizer(const model::ModelDescription& model,
                            absl::string_view field) {
  if (model.tokenizer != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      field, ": model '", model.name,
      "' has no tokenizer (its config.json names no tokenizer file), so it "
      "takes token_ids only"));
}

// The spans' count and bounds: [begin, end) inside the input's token ids or
// text bytes.
absl::Status CheckSpans(int index, const v1::EmbedInput& input,
                        const EmbedLimits& limits) {
  if (input.spans_size() > limits.max_spans_per_input) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs[", index, "].spans has ", input.spans_size(),
                     " spans; at most ", limits.max_spans_per_input,
                     " (max_spans_per_input)"));
  }
  const bool text = !input.text().empty();
  const int64_t length =
      text ? static_cast<int64_t>(input.text().size()) : input.token_ids_size();
  for (int j = 0; j < input.spans_size(); ++j) {
    const v1::Span& span = input.spans(j);
    const std::string name =
        absl::StrCat("inputs[", index, "].spans[", j, "] is [", span.begin(),
                     ", ", span.end(), ")");
    if (span.begin() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "; begin must be >= 0"));
    }
    if (span.end() <= span.begin()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": empty; a span needs begin < end"));
    }
    if (span.end() > length) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": past the end of the input's ", length,
                       text ? " bytes of text" : " token ids"));
    }
  }
  return absl::OkStatus();
}

// What TRUNCATION_CHUNK and late chunking cannot do together.
absl::Status CheckChoices(const v1::EmbedRequest& request,
                          const model::ModelDescription& model,
                          const ResolvedEmbedOptions& options) {
  const bool chunk = options.truncation == v1::TRUNCATION_CHUNK;
  if (chunk && options.include_token_embeddings) {
    return absl::InvalidArgumentError(
        "truncation TRUNCATION_CHUNK gives one pooled embedding per input, "
        "pooled from its windows; it cannot return token embeddings "
        "(include_token_embeddings, POOLING_NONE)");
  }
  for (int i = 0; i < request.inputs_size(); ++i) {
    if (request.inputs(i).spans_size() == 0) continue;
    if (chunk) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", i,
          "].spans: late chunking pools spans from one pass over the whole "
          "input; not with truncation TRUNCATION_CHUNK"));
    }
    if (model.vectors_per_sequence != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", i, "].spans: model '", model.name,
          "' outputs latents, not one vector per token, so it has no span "
          "to pool"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

EmbedLimits LimitsFor(const model::ModelDescription& model,
                      const EmbedLimits& call_limits) {
  EmbedLimits limits = call_limits;
  limits.max_tokens_per_input = model.config.max_sequence_length;
  limits.vocab_size = model.config.vocab_size;
  return limits;
}

bool HasText(const v1::EmbedRequest& request) {
  for (const v1::EmbedInput& input : request.inputs()) {
    if (!input.text().empty()) return true;
  }
  return false;
}

absl::Status CheckEmbedRequest(const v1::EmbedRequest& request,
                               const model::ModelDescription& model,
                               const ResolvedEmbedOptions& options,
                               const EmbedLimits& limits) {
  RETURN_IF_ERROR(
      CheckCounts(request.inputs_size(), limits, "inputs", "an Embed"));
  int64_t text_bytes = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    RETURN_IF_ERROR(CheckInputKind(i, request.inputs(i)));
    text_bytes += static_cast<int64_t>(request.inputs(i).text().size());
  }
  RETURN_IF_ERROR(CheckTextBytes(text_bytes, limits, "inputs"));
  for (int i = 0; i < request.inputs_size(); ++i) {
    if (!request.inputs(i).text().empty()) {
      RETURN_IF_ERROR(
          CheckTokenizer(model, absl::StrCat("inputs[", i, "].text")));
    }
    RETURN_IF_ERROR(CheckSpans(i, request.inputs(i), limits));
  }
  return CheckChoices(request, model, options);
}

absl::Status CheckTokenizeRequest(const v1::TokenizeRequest& request,
                                  const model::ModelDescription& model,
                                  const EmbedLimits& limits) {
  RETURN_IF_ERROR(
      CheckCounts(request.texts_size(), limits, "texts", "a Tokenize"));
  int64_t text_bytes = 0;
  for (int i = 0; i < request.texts_size(); ++i) {
    if (request.texts(i).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "texts[", i, "] is empty; each text needs at least 1 byte"));
    }
    text_bytes += static_cast<int64_t>(request.texts(i).size());
  }
  RETURN_IF_ERROR(CheckTextBytes(text_bytes, limits, "texts"));
  return CheckTokenizer(model, "texts");
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
    case v1::POOLING_MAX:
      return model::Pooling::kMax;
    case v1::POOLING_LAST_TOKEN:
      return model::Pooling::kLastToken;
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

absl::StatusOr<v1::Truncation> ResolveTruncation(v1::Truncation truncation) {
  switch (truncation) {
    case v1::TRUNCATION_UNSPECIFIED:
      return v1::TRUNCATION_NONE;
    case v1::TRUNCATION_NONE:
    case v1::TRUNCATION_LEFT:
    case v1::TRUNCATION_RIGHT:
    case v1::TRUNCATION_CHUNK:
      return truncation;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("truncation has unknown value ", truncation));
  }
}

// dimensions in [1, hidden_size] or 0; chunk_overlap_tokens in
// [0, max_tokens_per_input / 2).
absl::Status CheckSizes(const v1::EmbedRequest& request,
                        const model::ModelDescription& model,
                        const EmbedLimits& limits) {
  const int64_t hidden = model.embedding_dim;
  if (request.dimensions() < 0 || request.dimensions() > hidden) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dimensions is ", request.dimensions(), "; must be in [1, ", hidden,
        "] (hidden_size), or 0 for all"));
  }
  const int64_t overlap = request.chunk_overlap_tokens();
  // overlap >= max - overlap: 2 × overlap, past 2^62, would overflow.
  if (overlap < 0 || overlap >= limits.max_tokens_per_input - overlap) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_overlap_tokens is ", overlap,
                     "; must be >= 0 and below half of max_tokens_per_input (",
                     limits.max_tokens_per_input, ")"));
  }
  return absl::OkStatus();
}

// The prompt's text: the request's prompt_name, else the model's default.
absl::Status ResolvePrompt(const v1::EmbedRequest& request,
                           const model::ModelDescription& model,
                           ResolvedEmbedOptions* resolved) {
  resolved->prompt_named = !request.prompt_name().empty();
  const std::string& name = resolved->prompt_named ? request.prompt_name()
                                                   : model.default_prompt_name;
  if (name.empty()) return absl::OkStatus();
  const auto prompt = model.prompts.find(name);
  if (prompt == model.prompts.end()) {
    std::vector<std::string> names;
    for (const auto& [known, text] : model.prompts) names.push_back(known);
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt_name ", Quote(name, 100), " is not one of model '", model.name,
        "''s prompts (",
        names.empty() ? "it has none" : absl::StrJoin(names, ", "), ")"));
  }
  resolved->prompt = prompt->second;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResolvedEmbedOptions> ResolveEmbedOptions(
    const v1::EmbedRequest& request, const model::ModelDescription& model,
    const EmbedLimits& limits) {
  ResolvedEmbedOptions resolved;
  ASSIGN_OR_RETURN(resolved.pooling, ResolvePooling(request.pooling(), model));
  ASSIGN_OR_RETURN(resolved.normalize,
                   ResolveNormalize(request.normalization(), model));
  ASSIGN_OR_RETURN(resolved.token_embeddings_dtype,
                   ResolveOutputDtype(request.token_embeddings_dtype()));
  ASSIGN_OR_RETURN(resolved.truncation,
                   ResolveTruncation(request.truncation()));
  resolved.include_token_embeddings = request.include_token_embeddings() ||
                                      resolved.pooling == model::Pooling::kNone;
  if (!v1::Priority_IsValid(request.priority())) {
    return absl::InvalidArgumentError(
        absl::StrCat("priority has unknown value ", request.priority()));
  }
  RETURN_IF_ERROR(CheckSizes(request, model, limits));
  resolved.dimensions = request.dimensions();
  resolved.chunk_overlap_tokens = request.chunk_overlap_tokens();
  RETURN_IF_ERROR(ResolvePrompt(request, model, &resolved));
  ASSIGN_OR_RETURN(resolved.embedding_types,
                   ResolveEmbeddingTypes(request.embedding_types()));
  if (!request.embedding_types().empty() &&
      resolved.pooling == model::Pooling::kNone) {
    return absl::InvalidArgumentError(
        "embedding_types needs a pooled embedding to quantise; POOLING_NONE "
        "has none");
  }
  return resolved;
}

absl::Status CheckEmbedStreamMessage(const v1::EmbedStreamRequest& message) {
  constexpr size_t kMaxRequestIdBytes = 128;
  if (message.request_id().size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id has ", message.request_id().size(),
                     " bytes; at most ", kMaxRequestIdBytes));
  }
  if (message.timeout_micros() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timeout_micros is ", message.timeout_micros(), "; must be >= 0"));
  }
  return absl::OkStatus();
}

namespace {

// Bounds of what the wire format adds around values: a field's tag and
// length, an int64 field, a message's own fields (model names, timing).
constexpr int64_t kFieldBytes = 16;
constexpr int64_t kInputBytes = 8 * kFieldBytes;
constexpr int64_t kResponseBytes = 64 * kFieldBytes;

int64_t DtypeBytes(v1::Dtype dtype) {
  return dtype == v1::DTYPE_FLOAT16 || dtype == v1::DTYPE_BFLOAT16 ? 2 : 4;
}

// At most the ids given, or the text's bytes plus the special tokens that
// frame a sequence; TRUNCATION_LEFT and _RIGHT keep at most a sequence.
int64_t TokensBound(const v1::EmbedInput& input,
                    const ResolvedEmbedOptions& options,
                    const EmbedLimits& limits) {
  constexpr int64_t kSpecialTokens = 4;
  const int64_t tokens =
      input.token_ids_size() > 0
          ? input.token_ids_size()
          : static_cast<int64_t>(input.text().size()) + kSpecialTokens;
  const bool cut = options.truncation == v1::TRUNCATION_LEFT ||
                   options.truncation == v1::TRUNCATION_RIGHT;
  return cut ? std::min(tokens, limits.max_tokens_per_input) : tokens;
}

}  // namespace

int64_t AnswerBytesBound(const v1::EmbedRequest& request,
                         const model::ModelDescription& model,
                         const ResolvedEmbedOptions& options,
                         const EmbedLimits& limits,
                         absl::Span<const int64_t> tokens_per_input) {
  const int64_t dim = model.embedding_dim;
  const int64_t vector_values =
      options.dimensions > 0 ? std::min(options.dimensions, dim) : dim;
  const EmbeddingTypes& types = options.embedding_types;
  const int64_t bit_bytes = (vector_values + 7) / 8;
  const int64_t vector_bytes =
      vector_values * 4 + kFieldBytes +
      (types.any_quantized() ? kFieldBytes * 5 : 0) +
      (types.int8 ? vector_values : 0) + (types.uint8 ? vector_values : 0) +
      (types.binary ? bit_bytes : 0) + (types.ubinary ? bit_bytes : 0);
  int64_t bytes = kResponseBytes + static_cast<int64_t>(
                                       request.model().size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::EmbedInput& input = request.inputs(i);
    bytes += kInputBytes;
    if (options.pooling != model::Pooling::kNone) bytes += vector_bytes;
    bytes += input.spans_size() * (vector_bytes + kFieldBytes);
    if (options.include_token_embeddings) {
      const int64_t rows = model.vectors_per_sequence > 0
                               ? model.vectors_per_sequence
                           : tokens_per_input.empty()
                               ? TokensBound(input, options, limits)
                               : tokens_per_input[i];
      bytes += rows * dim * DtypeBytes(options.token_embeddings_dtype) +
               kFieldBytes;
    }
  }
  return bytes;
}

}  // namespace favor::service
