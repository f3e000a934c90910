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
// text the tokenizer refuses; the request passed CheckTokenizeRequest.
absl::Status TokenizeTexts(const v1::TokenizeRequest& request,
                           const tokenizer::Tokenizer& tokenizer,
                           v1::TokenizeResponse* response);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TOKENIZE_TEXTS_H_
