// Typed access to the fields of an untrusted tokenizer.json (internal to
// the loader: hf_tokenizer_json.cc and tokenizer_json_*.cc). Every getter
// checks the type and range and answers INVALID_ARGUMENT starting with
// `where` (the file and the field's path) otherwise. Hugging Face writes
// null for "not set": a null member counts as absent.
#ifndef FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_FIELDS_H_
#define FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace favor::tokenizer::tokenizer_json {

using Json = nlohmann::json;

inline constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max() - 1;

absl::Status Invalid(absl::string_view where, absl::string_view message);
// The member `key` of `object`, or nullptr when absent or null.
const Json* Member(const Json& object, const char* key);
absl::StatusOr<bool> GetBool(const Json& object, const char* key,
                             bool fallback, absl::string_view where);
absl::StatusOr<std::string> GetString(const Json& object, const char* key,
                                      absl::string_view fallback,
                                      absl::string_view where);
// An integer in [low, high]; floats, huge numbers and other types refused.
absl::StatusOr<int64_t> GetInt(const Json& value, int64_t low, int64_t high,
                               absl::string_view where);
absl::StatusOr<const Json*> GetObject(const Json& parent, const char* key,
                                      absl::string_view where);
// The stage's "type", refused when missing or empty.
absl::StatusOr<std::string> TypeOf(const Json& stage, absl::string_view where);
// INVALID_ARGUMENT naming the first member of `stage` not in `known`: a
// field Favor does not read could change the ids, so it is not ignored.
absl::Status CheckFields(const Json& stage,
                         std::initializer_list<absl::string_view> known,
                         absl::string_view where);
// "type \"X\" is not supported (supported: ...)".
absl::Status Unsupported(absl::string_view where, absl::string_view type,
                         absl::string_view supported);

}  // namespace favor::tokenizer::tokenizer_json

#endif  // FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_FIELDS_H_
