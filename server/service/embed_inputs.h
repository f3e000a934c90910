// What an Embed call's inputs become before they are queued: the token ids
// the model reads (truncated, or cut into windows with TRUNCATION_CHUNK),
// and each late-chunking span as a range of those tokens. Token id inputs
// are prepared on the reactor thread (a copy of the ids); text inputs on the
// tokenizer threads (text_input.h), never in a reactor. The request has
// passed CheckEmbedRequest (embed_validation.h).
#ifndef FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_
#define FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/service/embed_validation.h"
#include "server/service/token_range.h"
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

// Every input of `request` (text inputs with `tokenizer`, which is then not
// null), and the call's token total against max_tokens_per_call.
absl::StatusOr<std::vector<PreparedInput>> PrepareEmbedInputs(
    const v1::EmbedRequest& request, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits, const tokenizer::Tokenizer* tokenizer);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_INPUTS_H_
