// A Hugging Face config.json, read field by field by an architecture's
// adapter (hf_architecture.h). Hugging Face's configs hold many fields that
// say nothing about inference (dropout, initialisation, generation), so
// unknown fields are not errors here, as they are in Favor's own format;
// each adapter instead checks the fields that would change the forward pass
// and refuses values it does not implement, naming the field.
//
// No LibTorch.
#ifndef FAVOR_SERVER_MODEL_HF_HF_CONFIG_H_
#define FAVOR_SERVER_MODEL_HF_HF_CONFIG_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace favor::model::hf {

class HfConfig {
 public:
  // `json` is config.json's object; `source` names the file in errors.
  HfConfig(nlohmann::json json, std::string source)
      : json_(std::move(json)), source_(std::move(source)) {}

  const std::string& source() const { return source_; }
  bool Has(absl::string_view key) const;

  // The field as a JSON integer, a number, a boolean or a string; absent
  // (or null, as Hugging Face writes unset values): `fallback`, or
  // INVALID_ARGUMENT naming the field when there is none. A value of
  // another type is INVALID_ARGUMENT naming the field and what it holds.
  absl::StatusOr<int64_t> Int(absl::string_view key,
                              std::optional<int64_t> fallback) const;
  absl::StatusOr<double> Number(absl::string_view key,
                                std::optional<double> fallback) const;
  absl::StatusOr<bool> Bool(absl::string_view key,
                            std::optional<bool> fallback) const;
  absl::StatusOr<std::string> String(
      absl::string_view key, std::optional<std::string> fallback) const;

  // OK when the field is absent or null or equal to one of `accepted`;
  // else INVALID_ARGUMENT: Favor does not implement that value.
  absl::Status ExpectOneOf(absl::string_view key,
                           std::initializer_list<nlohmann::json> accepted,
                           absl::string_view what_favor_runs) const;

  // The field as an object, read the same way (its fields named
  // "key.field" in errors); absent or null: nullopt. INVALID_ARGUMENT when
  // it is not an object.
  absl::StatusOr<std::optional<HfConfig>> Object(absl::string_view key) const;
  // The field as a list of strings; absent or null: empty.
  absl::StatusOr<std::vector<std::string>> Strings(absl::string_view key) const;

  // INVALID_ARGUMENT naming the file and the field.
  absl::Status Error(absl::string_view key, absl::string_view problem) const;

 private:
  const nlohmann::json* Find(absl::string_view key) const;

  nlohmann::json json_;
  std::string source_;
  std::string prefix_;  // "rope_parameters." for a nested object
};

}  // namespace favor::model::hf

#endif  // FAVOR_SERVER_MODEL_HF_HF_CONFIG_H_
