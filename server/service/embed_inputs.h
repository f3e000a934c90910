// What an Embed call's inputs become before they are queued: the token ids
// the model reads (truncated, or cut into windows with TRUNCATION_CHUNK),
// and each late-chunking span as a range of those tokens. The request has
// passed CheckEmbedRequest (embed_validation.h).
//
// Token id inputs are prepared on the reactor thread (a copy of the ids).
// Text inputs are prepared on the tokenizer threads, never in a gRPC
// reactor: the model's tokenizer encodes the text once, without its special
// tokens; truncation (or TRUNCATION_CHUNK's windows) then works on the
// text's tokens, and the kept tokens (every window) are framed with the
// special tokens, so that [CLS] and [SEP] stay in place. Each span, a byte
// range of the text, becomes the range of the tokens whose byte ranges
// overlap it (special tokens, whose ranges are empty, belong to none).
#ifndef FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_
#define FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/service/embed_validation.h"
#include "server/service/token_range.h"
#include "server/tokenizer/encoding.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::service {

// One input, checked, ready for the batcher.
struct PreparedInput {
  // What the model reads: one sequence, or with TRUNCATION_CHUNK every
  // window back to back.
  std::vector<int32_t> token_ids;
  // TRUNCATION_CHUNK only: window w is token_ids[window_offsets[w],
  // window_offsets[w + 1]); empty otherwise.
  std::vector<int64_t> window_offsets;
  // Late chunking: one range of token_ids per EmbedInput.spans entry.
  std::vector<TokenRange> spans;
  // Tokens truncation dropped (not with TRUNCATION_CHUNK, which drops none).
  int64_t num_truncated_tokens = 0;

  int64_t num_windows() const {
    return window_offsets.empty()
               ? 0
               : static_cast<int64_t>(window_offsets.size()) - 1;
  }
};

// The windows TRUNCATION_CHUNK cuts `length` tokens into: `window` tokens
// each (the last may be shorter), consecutive ones sharing `overlap`
// tokens (0 <= overlap < window); one window when length <= window.
std::vector<TokenRange> ChunkWindows(int64_t length, int64_t window,
                                     int64_t overlap);

// The tokens that TRUNCATION_NONE, _LEFT or _RIGHT keep of `length` when at
// most `budget` fit: all, the last `budget` or the first `budget`; with
// TRUNCATION_NONE, INVALID_ARGUMENT naming `field` ("inputs[2].text"), its
// `length` tokens and the limit `limit` (max_tokens_per_input).
absl::StatusOr<TokenRange> KeptTokens(const std::string& field, int64_t length,
                                      int64_t budget, int64_t limit,
                                      v1::Truncation truncation);

// Input `index`, made of token ids.
absl::StatusOr<PreparedInput> PrepareTokenIdInput(
    int index, const v1::EmbedInput& input, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits);

// Input `index`, whose text is set. INVALID_ARGUMENT naming the input for
// invalid UTF-8 (with the byte offset), a text over max_tokens_per_input
// without truncation, a model whose special tokens leave no room for text,
// or a span that covers no token left after truncation.
absl::StatusOr<PreparedInput> PrepareTextInput(
    int index, const v1::EmbedInput& input,
    const tokenizer::Tokenizer& tokenizer, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits);

// The tokens of `encoding` (ordered, as tokenizers make them) whose
// non-empty byte ranges overlap [begin, end); empty when none does.
TokenRange TokensOfBytes(const tokenizer::Encoding& encoding, int64_t begin,
                         int64_t end);

// INVALID_ARGUMENT: span `span` of input `index` covers no token.
absl::Status SpanCoversNoToken(int index, int span_index, const v1::Span& span);

// Every input of `request` (text inputs with `tokenizer`, which is then not
// null), and the call's token total against max_tokens_per_call.
absl::StatusOr<std::vector<PreparedInput>> PrepareEmbedInputs(
    const v1::EmbedRequest& request, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits, const tokenizer::Tokenizer* tokenizer);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_
