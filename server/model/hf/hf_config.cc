#include "server/model/hf/hf_config.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/json_parse.h"

namespace favor::model::hf {

using Json = nlohmann::json;

const Json* HfConfig::Find(absl::string_view key) const {
  const auto it = json_.find(std::string(key));
  if (it == json_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool HfConfig::Has(absl::string_view key) const { return Find(key) != nullptr; }

absl::Status HfConfig::Error(absl::string_view key,
                             absl::string_view problem) const {
  return absl::InvalidArgumentError(
      absl::StrCat(source_, ": field '", prefix_, key, "' ", problem));
}

absl::StatusOr<std::optional<HfConfig>> HfConfig::Object(
    absl::string_view key) const {
  const Json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_object()) {
    return Error(key, absl::StrCat("must be an object, got ",
                                   DescribeJson(*value)));
  }
  HfConfig child(*value, source_);
  child.prefix_ = absl::StrCat(prefix_, key, ".");
  return child;
}

absl::StatusOr<std::vector<std::string>> HfConfig::Strings(
    absl::string_view key) const {
  const Json* value = Find(key);
  std::vector<std::string> strings;
  if (value == nullptr) return strings;
  if (!value->is_array()) {
    return Error(key, absl::StrCat("must be a list of strings, got ",
                                   DescribeJson(*value)));
  }
  for (const Json& entry : *value) {
    if (!entry.is_string()) {
      return Error(key, absl::StrCat("must be a list of strings, holds ",
                                     DescribeJson(entry)));
    }
    strings.push_back(entry.get<std::string>());
  }
  return strings;
}

absl::StatusOr<int64_t> HfConfig::Int(absl::string_view key,
                                      std::optional<int64_t> fallback) const {
  const Json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "is missing");
  }
  if (!value->is_number_integer() ||
      (value->is_number_unsigned() &&
       value->get<uint64_t>() >
           uint64_t{std::numeric_limits<int64_t>::max()})) {
    return Error(key, absl::StrCat("must be an integer, got ",
                                   DescribeJson(*value)));
  }
  return value->get<int64_t>();
}

absl::StatusOr<double> HfConfig::Number(absl::string_view key,
                                        std::optional<double> fallback) const {
  const Json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "is missing");
  }
  if (!value->is_number()) {
    return Error(key,
                 absl::StrCat("must be a number, got ", DescribeJson(*value)));
  }
  return value->get<double>();
}

absl::StatusOr<bool> HfConfig::Bool(absl::string_view key,
                                    std::optional<bool> fallback) const {
  const Json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "is missing");
  }
  if (!value->is_boolean()) {
    return Error(key, absl::StrCat("must be true or false, got ",
                                   DescribeJson(*value)));
  }
  return value->get<bool>();
}

absl::StatusOr<std::string> HfConfig::String(
    absl::string_view key, std::optional<std::string> fallback) const {
  const Json* value = Find(key);
  if (value == nullptr) {
    if (fallback.has_value()) return *fallback;
    return Error(key, "is missing");
  }
  if (!value->is_string()) {
    return Error(key,
                 absl::StrCat("must be a string, got ", DescribeJson(*value)));
  }
  return value->get<std::string>();
}

absl::Status HfConfig::ExpectOneOf(absl::string_view key,
                                   std::initializer_list<Json> accepted,
                                   absl::string_view what_favor_runs) const {
  const Json* value = Find(key);
  if (value == nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (const Json& option : accepted) {
    if (*value == option) return absl::OkStatus();
    names.push_back(option.dump());
  }
  return Error(key, absl::StrCat("is ", Quote(value->dump(), 100), "; Favor runs ",
                                 what_favor_runs, " (",
                                 absl::StrJoin(names, ", "), ")"));
}

}  // namespace favor::model::hf
