// The work of a Tokenize call, run on the tokenizer threads: every text
// encoded by the model's tokenizer, as Embed would read it (with the special
// tokens unless the call leaves them out; no truncation), into parallel
// arrays of ids, token strings, byte offsets and special flags.
#ifndef FAVOR_SERVER_SERVICE_TOKENIZE_TEXTS_H_
#define FAVOR_SERVER_SERVICE_TOKENIZE_TEXTS_H_

#include "absl/status/status.h"
#include "favor/v1/favor.pb.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::service {

// Fills response->texts, one per request text. INVALID_ARGUMENT naming the
// text ("texts[2]: text is not valid UTF-8: ... at byte offset 4") for a
// text the tokenizer refuses, or once the texts have more than `max_tokens`
// tokens in all (an Embed call's max_tokens_per_call: the answer of
// 16 MiB of "!" would be 142 MB, over gRPC's largest message, and was
// built before gRPC refused to send it); the request passed
// CheckTokenizeRequest.
absl::Status TokenizeTexts(const v1::TokenizeRequest& request,
                           const tokenizer::Tokenizer& tokenizer,
                           int64_t max_tokens, v1::TokenizeResponse* response);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TOKENIZE_TEXTS_H_
