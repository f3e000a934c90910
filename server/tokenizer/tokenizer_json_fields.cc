#include "server/tokenizer/tokenizer_json_fields.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"

namespace favor::tokenizer::tokenizer_json {

absl::Status Invalid(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

const Json* Member(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

absl::StatusOr<bool> GetBool(const Json& object, const char* key, bool fallback,
                             absl::string_view where) {
  const Json* value = Member(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be a boolean, got ",
                                       DescribeJson(*value)));
  }
  return value->get<bool>();
}

absl::StatusOr<std::string> GetString(const Json& object, const char* key,
                                      absl::string_view fallback,
                                      absl::string_view where) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::string(fallback);
  if (!value->is_string()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be a string, got ",
                                       DescribeJson(*value)));
  }
  return value->get<std::string>();
}

absl::StatusOr<int64_t> GetInt(const Json& value, int64_t low, int64_t high,
                               absl::string_view where) {
  const bool fits = value.is_number_unsigned()
                        ? value.get<uint64_t>() <= static_cast<uint64_t>(high)
                        : value.is_number_integer();
  if (fits) {
    const auto number = value.get<int64_t>();
    if (number >= low && number <= high) return number;
  }
  return Invalid(where, absl::StrCat("must be an integer in [", low, ", ", high,
                                     "], got ", DescribeJson(value)));
}

absl::StatusOr<const Json*> GetObject(const Json& parent, const char* key,
                                      absl::string_view where) {
  const Json* value = Member(parent, key);
  if (value == nullptr) return value;
  if (!value->is_object()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be an object, got ",
                                       DescribeJson(*value)));
  }
  return value;
}

absl::StatusOr<std::string> TypeOf(const Json& stage, absl::string_view where) {
  if (!stage.is_object()) {
    return Invalid(where,
                   absl::StrCat("must be an object, got ", DescribeJson(stage)));
  }
  ASSIGN_OR_RETURN(std::string type, GetString(stage, "type", "", where));
  if (type.empty()) return Invalid(where, "\"type\" is missing");
  return type;
}

absl::Status CheckFields(const Json& stage,
                         std::initializer_list<absl::string_view> known,
                         absl::string_view where) {
  for (const auto& [key, value] : stage.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Invalid(where, absl::StrCat("field ", Quote(key),
                                         " is not supported (known: ",
                                         absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Unsupported(absl::string_view where, absl::string_view type,
                         absl::string_view supported) {
  return Invalid(where, absl::StrCat("type \"", type,
                                     "\" is not supported (supported: ",
                                     supported, ")"));
}

}  // namespace favor::tokenizer::tokenizer_json
