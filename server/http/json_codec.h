// Protobuf's JSON utilities as the HTTP front uses them: parsing refuses
// unknown fields and anything but UTF-8, printing keeps the proto field
// names (OpenAI's and favor.proto's, snake_case) and, where asked, fields at
// their default values.
#ifndef FAVOR_SERVER_HTTP_JSON_CODEC_H_
#define FAVOR_SERVER_HTTP_JSON_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace favor::http {

// The service's per-call limits (FavorService::Options' fields of the same
// names; favor-server's flags), which bound what a request body may hold.
struct CallLimits {
  int64_t max_inputs_per_call = 1024;
  int64_t max_tokens_per_call = int64_t{1} << 20;
  int64_t max_spans_per_input = 1024;
};

// What a request body may hold before protobuf parses it. Parsed, a JSON
// value takes 50 to 500 times its bytes (a google.protobuf.Value tree, or
// protobuf's stream writer's state), and the parse runs on a thread of the
// HTTP event loop, so the service's limits are applied to the JSON first:
// a 32 MiB body of 8 million one-token inputs takes 19 s and 4 GB to parse
// before the service could refuse it.
struct JsonBodyLimits {
  int64_t max_values = 0;      // every value, objects and arrays included
  int64_t max_strings = 0;     // string values (keys not counted)
  int64_t max_containers = 0;  // objects and arrays
  // Objects and arrays in one array (a repeated message: inputs, spans).
  int64_t max_nested_in_array = 0;
  // Members of one object: the API's messages have fewer than 32 fields.
  int64_t max_object_members = 64;
  // Appended to the message of a count past its limit: where it comes from.
  std::string why;
};

// OpenAI's embeddings request: a string, strings, token ids or token
// lists, each at most one input.
JsonBodyLimits EmbeddingsBodyLimits(const CallLimits& limits);
// favor.proto's requests (EmbedRequest: inputs with token ids, text and
// spans; TokenizeRequest: texts; AttendRequest: tensors).
JsonBodyLimits FavorBodyLimits(const CallLimits& limits);

// INVALID_ARGUMENT unless `json` is strict JSON (RFC 8259: protobuf's own
// parser also takes single quotes, bare keys, trailing commas and raw
// control characters in strings), valid UTF-8, without duplicate keys,
// nested at most kMaxJsonDepth (json_parse.h) deep (protobuf's parser takes
// time superlinear in the depth: 30 s for a 60 KB body of 30,000 '['), and
// within `limits`, saying which limit it passed. One pass; nothing is kept
// but the keys of the open objects.
absl::Status CheckRequestBody(absl::string_view json,
                              const JsonBodyLimits& limits);

// CheckRequestBody, then protobuf's parse: INVALID_ARGUMENT naming what is
// wrong, an unknown field or a value of the wrong type included.
absl::Status ParseJson(absl::string_view json, const JsonBodyLimits& limits,
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
