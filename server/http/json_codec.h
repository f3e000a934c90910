// Protobuf's JSON utilities as the HTTP front uses them: parsing refuses
// unknown fields and anything but UTF-8, printing keeps the proto field
// names (OpenAI's and favor.proto's, snake_case) and, where asked, fields at
// their default values.
#ifndef FAVOR_SERVER_HTTP_JSON_CODEC_H_
#define FAVOR_SERVER_HTTP_JSON_CODEC_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace favor::http {

// INVALID_ARGUMENT naming what is wrong: not UTF-8,
// not JSON, an unknown field, a value of the wrong type.
absl::Status ParseJson(absl::string_view json,
                       google::protobuf::Message* message);

// `message` as JSON; `with_defaults` also prints fields at their default
// value (OpenAI's shapes always have `index`, even 0).
std::string PrintJson(const google::protobuf::Message& message,
                      bool with_defaults);

// INVALID_ARGUMENT naming `what` unless `text` is valid UTF-8.
absl::Status CheckUtf8(absl::string_view text, absl::string_view what);

// `text` with each byte that is not part of valid UTF-8 replaced by '?': an
// error message may quote what a client sent (a path, a field), and
// protobuf's JSON printer refuses a string that is not UTF-8.
std::string CoerceToUtf8(absl::string_view text);

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_JSON_CODEC_H_
