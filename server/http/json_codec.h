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

// INVALID_ARGUMENT unless `json` is valid UTF-8 and nests arrays and objects
// at most kMaxJsonDepth (json_parse.h) deep: no request of the API needs more
// than 6 levels, and protobuf's parser takes time superlinear in the depth
// of nested arrays in a google.protobuf.Value (30 s for a 60 KB body of
// 30,000 '['), on a thread of the HTTP event loop. One pass over the bytes,
// nothing allocated; the JSON itself is not checked (the parser does that).
absl::Status CheckRequestBody(absl::string_view json);

// INVALID_ARGUMENT naming what is wrong: not UTF-8, nested too deep,
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
