// Writing config.json: ModelConfigToJson. Every field of the schema
// (model_config_fields.h), in its order, written as its member's type says.
#include <string>
#include <type_traits>

#include "nlohmann/json.hpp"
#include "server/model/model_config.h"
#include "server/model/model_config_fields.h"

namespace favor::model {
namespace {

using OrderedJson = nlohmann::ordered_json;
using internal::ConfigFields;

template <typename Config>
OrderedJson FieldsToJson(const Config& config);

template <typename T>
OrderedJson FieldToJson(const T& value) {
  if constexpr (internal::kIsNestedConfig<T>) {
    return FieldsToJson(value);
  } else if constexpr (std::is_same_v<T, attention::Kernel>) {
    return std::string(attention::KernelName(value));
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(NameOf(value));
  } else {
    return value;
  }
}

template <typename Config>
OrderedJson FieldsToJson(const Config& config) {
  OrderedJson json = OrderedJson::object();
  ConfigFields<Config>::ForEach([&](absl::string_view key, auto member) {
    json[std::string(key)] = FieldToJson(config.*member);
  });
  return json;
}

}  // namespace

std::string ModelConfigToJson(const ModelConfig& config) {
  // replace: a version string set in code need not be valid UTF-8, and
  // dump must not throw.
  return FieldsToJson(config).dump(2, ' ', false,
                                   OrderedJson::error_handler_t::replace) +
         "\n";
}

}  // namespace favor::model
