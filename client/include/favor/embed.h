// The Embed call's plain types: what to ask for (EmbedOptions) and what
// comes back (EmbedResult, one Embedding per input). They mirror
// favor.v1.EmbedRequest / EmbedResponse (proto/favor/v1/favor.proto, whose
// comments are the reference for each field) without protobuf.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "favor/call_options.h"
#include "favor/tensor.h"

namespace favor {

// Token ids, each below the model's vocab_size, already framed as the model
// expects (the server adds no special tokens). The Embed overloads that take
// TokenIds send each sequence as one input.
using TokenIds = std::vector<uint32_t>;

// A part of one input to pool on its own (late chunking): [begin, end). For
// a text input, byte offsets into the text (a span covers the tokens whose
// byte ranges overlap it; the special tokens belong to no span); for a
// token id input, positions in token_ids. The server refuses an empty span,
// one past the input's end, or one left without tokens by truncation.
struct InputSpan {
  int64_t begin = 0;
  int64_t end = 0;
};

// One input of an Embed call: text or token ids (exactly one: the server
// answers INVALID_ARGUMENT when both or neither are set), and optional spans.
//
// Text converts implicitly, so that {"a text", "another"} is a list of
// inputs; token ids need the explicit constructor, so that a braced list of
// ids ({{101, 2023, 102}}) still means the TokenIds overloads.
struct EmbedInput {
  EmbedInput() = default;
  // A text input: UTF-8, tokenised by the model's tokenizer, which adds the
  // model's special tokens. A model without a tokenizer answers
  // FAILED_PRECONDITION.
  template <typename Text, typename = std::enable_if_t<std::is_convertible<
                               const Text&, absl::string_view>::value>>
  EmbedInput(const Text& text_in,  // NOLINT(google-explicit-constructor)
             std::vector<InputSpan> spans_in = {})
      : text(absl::string_view(text_in)), spans(std::move(spans_in)) {}
  // A token id input (TokenIds above).
  explicit EmbedInput(TokenIds token_ids_in,
                      std::vector<InputSpan> spans_in = {})
      : token_ids(std::move(token_ids_in)), spans(std::move(spans_in)) {}

  // Not empty; at most ModelLimits.max_text_bytes_per_call bytes over all
  // inputs of a call. Text that is not valid UTF-8 is INVALID_ARGUMENT
  // naming the input and the byte offset, from the client before anything is
  // sent (protobuf could not carry it).
  std::string text;
  TokenIds token_ids;
  // Late chunking: the whole input runs through the encoder once, then each
  // span is mean-pooled from the contextual token vectors into
  // Embedding::spans, in order. At most ModelLimits.max_spans_per_input.
  std::vector<InputSpan> spans;
};

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
  // The per-feature maximum of the output vectors.
  kMax = 5,
  // The last output vector.
  kLastToken = 6,
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
  // Split the input into windows of max_tokens_per_input tokens that overlap
  // by EmbedOptions::chunk_overlap_tokens, embed each and pool the windows'
  // embeddings into one, weighted by their token counts (text windows are
  // each framed with the model's special tokens). Not with spans or token
  // embeddings (INVALID_ARGUMENT).
  kChunk = 4,
};

// A form in which embeddings are answered (EmbedOptions::embedding_types;
// docs/http.md, "Embedding types"), each computed by the server from the
// float values, value by value.
enum class EmbeddingType {
  // Embedding::values.
  kFloat = 1,
  // round(127·x), clipped to [-127, 127].
  kInt8 = 2,
  // round(127.5·x + 127.5), clipped to [0, 255].
  kUint8 = 3,
  // Sign bits (1 for x > 0), eight to a byte, most significant first; each
  // byte minus 128.
  kBinary = 4,
  // The same bits as unsigned bytes.
  kUbinary = 5,
};

// The quantised forms of one embedding that EmbedOptions::embedding_types
// asked for; the others are empty.
struct QuantizedEmbedding {
  std::vector<int8_t> int8;
  std::vector<uint8_t> uint8;
  std::vector<int8_t> binary;    // ceil(values / 8) bytes
  std::vector<uint8_t> ubinary;  // ceil(values / 8) bytes
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
  // Matryoshka: only the first `dimensions` values of each pooled embedding
  // (Embedding::values and every span's), renormalised when the call
  // normalises. 0 means all (hidden_size); otherwise 1 to hidden_size.
  int32_t dimensions = 0;
  // Tokens shared by consecutive windows with Truncation::kChunk; below
  // max_tokens_per_input / 2.
  int64_t chunk_overlap_tokens = 0;
  // Empty: Embedding::values only. Otherwise each type listed (at most
  // once): Embedding::quantized (and each span's) holds the quantised
  // types, and Embedding::values is filled only when kFloat is listed.
  std::vector<EmbeddingType> embedding_types;
};

// The pooled embedding of one span of an input.
struct SpanEmbedding {
  // Mean of the span's token vectors, `dimensions` long, normalised as the
  // call asks.
  std::vector<float> values;
  // Tokens the span covers.
  int64_t num_tokens = 0;
  // Its quantised forms (EmbedOptions::embedding_types).
  QuantizedEmbedding quantized;
};

// The output for one input.
struct Embedding {
  // The pooled embedding, hidden_size values (or EmbedOptions::dimensions);
  // empty with Pooling::kNone.
  std::vector<float> values;
  // Per-position output vectors, shape (positions, hidden_size); set only
  // with include_token_embeddings or Pooling::kNone.
  std::optional<Tensor> token_embeddings;
  // Tokens of this input the model read (after truncation).
  int64_t num_tokens = 0;
  // Tokens truncation dropped from this input.
  int64_t num_truncated_tokens = 0;
  // One per EmbedInput::spans entry, in order.
  std::vector<SpanEmbedding> spans;
  // With Truncation::kChunk: the windows the input was split into (1 when it
  // fitted); 0 otherwise.
  int64_t num_chunks = 0;
  // The pooled embedding's quantised forms (EmbedOptions::embedding_types).
  QuantizedEmbedding quantized;
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
