// Strict JSON parsing for files Favor does not trust (safetensors headers,
// model configs, tokenizer.json), and quoting of their text in error
// messages. In namespace favor, so that the model and tokenizer modules call
// it unqualified; no LibTorch, no gRPC.
//
// nlohmann::json reports errors by throwing and keeps the last of duplicate
// keys silently; this adapter catches every exception, rejects duplicate
// keys (a second "dtype" or a repeated tensor name must not win quietly) and
// bounds the nesting depth, so nothing from the file can escape as an
// exception or recurse without limit.
#ifndef FAVOR_SERVER_COMMON_JSON_PARSE_H_
#define FAVOR_SERVER_COMMON_JSON_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace favor {

// Objects and arrays nested deeper than this are rejected. Favor's formats
// need depth 3; the cap keeps hostile input from costing memory per level.
inline constexpr int kMaxJsonDepth = 32;

struct JsonParseOptions {
  // Every value counts, containers and the values in them alike. A parsed
  // value costs far more memory than its text (a number in an object about
  // 100 bytes for its 10), so a caller that knows how many values a valid
  // file can hold caps the memory a file can take here, not only its size.
  size_t max_values = SIZE_MAX;
  // Why there are no more, for the error message (e.g. "a tokenizer of 200
  // ids needs fewer").
  std::string max_values_reason;
};

// Parses `text` as one JSON value of any kind (sentence-transformers'
// modules.json is an array), with the checks below.
absl::StatusOr<nlohmann::json> ParseJsonValue(
    absl::string_view text, absl::string_view what,
    const JsonParseOptions& options = {});

// Parses `text` as one JSON value that must be an object. Errors are
// INVALID_ARGUMENT and start with `what` (e.g. "model.safetensors: header"):
// not JSON (with nlohmann's position), not an object, a duplicate key (with
// the keys that lead to it), nesting deeper than kMaxJsonDepth, more than
// `options.max_values` values (found when the next one is read).
absl::StatusOr<nlohmann::json> ParseJsonObject(
    absl::string_view text, absl::string_view what,
    const JsonParseOptions& options = {});

// `text` in single quotes, non-printable bytes C-escaped and cut after
// `max_bytes` with "...", for echoing names from a file in a message.
std::string Quote(absl::string_view text, size_t max_bytes = 200);

// A short description of a JSON value for "expected X, got Y" messages,
// e.g. `string "abc"`, `number -1`, `array`, `null`.
std::string DescribeJson(const nlohmann::json& value);

}  // namespace favor

#endif  // FAVOR_SERVER_COMMON_JSON_PARSE_H_
