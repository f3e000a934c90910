// A text input of an Embed call, tokenised (on the tokenizer threads, never
// in a gRPC reactor): the model's tokenizer encodes the text once, without
// its special tokens; truncation (or TRUNCATION_CHUNK's windows) then works
// on the text's tokens, and the kept tokens (every window) are framed with
// the special tokens, so that [CLS] and [SEP] stay in place. Each span, a
// byte range of the text, becomes the range of the tokens whose byte ranges
// overlap it (special tokens, whose ranges are empty, belong to none).
#ifndef FAVOR_SERVER_SERVICE_TEXT_INPUT_H_
#define FAVOR_SERVER_SERVICE_TEXT_INPUT_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/service/embed_inputs.h"
#include "server/service/embed_validation.h"
#include "server/tokenizer/encoding.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::service {

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

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TEXT_INPUT_H_
