// Edge checks of an Embed call, before anything is queued or tokenised:
// every bad request is INVALID_ARGUMENT (FAILED_PRECONDITION for text to a
// model without a tokenizer) with a message naming the field (with its
// index) and the limit. Nothing is allocated in proportion to a size the
// client only claims: counts are read from the parsed message, whose size
// gRPC's max_message_bytes already bounds, and the text's bytes are summed
// before anything is made from them. What the inputs become is
// embed_inputs.h.
#ifndef FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_
#define FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "favor/v1/favor.pb.h"
#include "server/model/model.h"
#include "server/service/output_vectors.h"

namespace favor::service {

// What one Embed call (or Tokenize call) may ask of one model.
struct EmbedLimits {
  int64_t max_inputs_per_call = 1024;
  int64_t max_tokens_per_call = int64_t{1} << 20;
  int64_t max_tokens_per_input = 512;  // the model's max_sequence_length
  int64_t vocab_size = 30522;
  int64_t max_text_bytes_per_call = int64_t{16} << 20;
  int64_t max_spans_per_input = 1024;
};

// The request's per-call choices, resolved against the model's defaults.
struct ResolvedEmbedOptions {
  model::Pooling pooling = model::Pooling::kMean;  // kNone: no pooled vector
  bool normalize = false;
  bool include_token_embeddings = false;  // always true with kNone
  v1::Dtype token_embeddings_dtype = v1::DTYPE_FLOAT32;
  // Values kept of each pooled and span embedding; 0: all (hidden_size).
  int64_t dimensions = 0;
  // TRUNCATION_NONE, _LEFT, _RIGHT or _CHUNK (UNSPECIFIED resolved).
  v1::Truncation truncation = v1::TRUNCATION_NONE;
  int64_t chunk_overlap_tokens = 0;
  // The text put before each text input (the request's prompt_name, else
  // the model's default prompt); whether the request named it.
  std::string prompt;
  bool prompt_named = false;
  // The forms of each pooled and span embedding to answer.
  EmbeddingTypes embedding_types;
};

// `call_limits`' call-wide limits, with the model's own (max_tokens_per_input
// is its max_sequence_length, vocab_size its vocab_size).
EmbedLimits LimitsFor(const model::ModelDescription& model,
                      const EmbedLimits& call_limits);

// Checks the enums (pooling, normalization, truncation, dtype, priority),
// dimensions and chunk_overlap_tokens, and resolves the unspecified ones
// against `model`.
absl::StatusOr<ResolvedEmbedOptions> ResolveEmbedOptions(
    const v1::EmbedRequest& request, const model::ModelDescription& model,
    const EmbedLimits& limits);

// Checks what can be checked before tokenising: the number of inputs, that
// each has token ids or text (exactly one), the call's bytes of text, that
// the model has a tokenizer when there is text, and the spans' count and
// bounds; and that the choices in `options` go together (no spans or token
// embeddings with TRUNCATION_CHUNK).
absl::Status CheckEmbedRequest(const v1::EmbedRequest& request,
                               const model::ModelDescription& model,
                               const ResolvedEmbedOptions& options,
                               const EmbedLimits& limits);

// What EmbedStream checks of each message before its request: the
// request_id's length (at most 128 bytes, since every answer echoes it) and
// that timeout_micros is not negative.
absl::Status CheckEmbedStreamMessage(const v1::EmbedStreamRequest& message);

// The same for Tokenize: the number of texts, none empty, their bytes, and
// the model's tokenizer.
absl::Status CheckTokenizeRequest(const v1::TokenizeRequest& request,
                                  const model::ModelDescription& model,
                                  const EmbedLimits& limits);

// An upper bound of the wire size of `request`'s EmbedResponse, from what
// is known before tokenising (a text has at most as many tokens as bytes,
// plus its special tokens): per input its vectors (pooled, spans) and token
// embeddings, of `model`'s embedding_dim (or options.dimensions) values at
// their dtype's width, and each message's own fields. Counted by
// EmbedStream's backpressure until the answer is computed. `request` has
// passed CheckEmbedRequest with `options`. Given `tokens_per_input` (each
// input's tokens once prepared, one per input), those replace the bounds:
// what the service checks against the message limit before queueing.
int64_t AnswerBytesBound(const v1::EmbedRequest& request,
                         const model::ModelDescription& model,
                         const ResolvedEmbedOptions& options,
                         const EmbedLimits& limits,
                         absl::Span<const int64_t> tokens_per_input = {});

// Whether any input of `request` is text.
bool HasText(const v1::EmbedRequest& request);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_VALIDATION_H_
