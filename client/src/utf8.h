// The UTF-8 check of the texts a call sends, before anything is sent.
//
// favor.v1 carries text in proto3 `string` fields, which protobuf requires
// to be valid UTF-8: it logs an error when serialising anything else, and
// the server's parser then refuses the whole message before the service
// sees it (the call fails with an empty message, not the INVALID_ARGUMENT
// naming the input and the byte offset that favor.proto promises). So the
// client checks, with protobuf's own test of what it will parse, and
// answers as the server would.
#ifndef FAVOR_CLIENT_SRC_UTF8_H_
#define FAVOR_CLIENT_SRC_UTF8_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "favor/embed.h"

namespace favor::client_internal {

// OK, or INVALID_ARGUMENT "<what> is not valid UTF-8: invalid byte 0xNN at
// byte offset N" for the first byte that cannot start or continue a
// character.
absl::Status CheckUtf8(absl::string_view text, absl::string_view what);

// CheckUtf8 of each input's text ("inputs[i].text").
absl::Status CheckInputTexts(absl::Span<const EmbedInput> inputs);

// CheckUtf8 of each text ("texts[i]").
absl::Status CheckTexts(absl::Span<const std::string> texts);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_UTF8_H_
