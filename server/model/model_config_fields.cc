#include "server/model/model_config_fields.h"

#include "server/model/aggregate_field_count.h"

namespace favor::model {
namespace {

using internal::ConfigFieldCount;
using internal::ConfigFields;
using internal::EnumName;
using internal::EnumNames;
using RowNorm = attention::ProjectionOptions::RowNorm;

// A member added to a config struct must get its row in
// model_config_fields.h too, or it would be neither read, written nor
// compared.
static_assert(internal::AggregateFieldCount<AttentionConfig>() ==
                  ConfigFieldCount<AttentionConfig>(),
              "every AttentionConfig member needs a row in "
              "ConfigFields<AttentionConfig> (model_config_fields.h)");
static_assert(internal::AggregateFieldCount<TokenizerConfig>() ==
                  ConfigFieldCount<TokenizerConfig>(),
              "every TokenizerConfig member needs a row in "
              "ConfigFields<TokenizerConfig> (model_config_fields.h)");
static_assert(internal::AggregateFieldCount<ModelConfig>() ==
                  ConfigFieldCount<ModelConfig>(),
              "every ModelConfig member needs a row in "
              "ConfigFields<ModelConfig> (model_config_fields.h)");

template <typename T>
absl::string_view FindName(T value) {
  for (const EnumName<T>& entry : EnumNames(value)) {
    if (entry.value == value) return entry.name;
  }
  return "unknown";
}

template <typename Config>
bool FieldsEqual(const Config& a, const Config& b) {
  bool equal = true;
  ConfigFields<Config>::ForEach([&](absl::string_view, auto member) {
    equal = equal && a.*member == b.*member;
  });
  return equal;
}

}  // namespace

absl::string_view NameOf(Activation value) { return FindName(value); }
absl::string_view NameOf(NormType value) { return FindName(value); }
absl::string_view NameOf(NormPlacement value) { return FindName(value); }
absl::string_view NameOf(PositionEmbedding value) { return FindName(value); }
absl::string_view NameOf(PositionIds value) { return FindName(value); }
absl::string_view NameOf(FeedForward value) { return FindName(value); }
absl::string_view NameOf(BlockType value) { return FindName(value); }
absl::string_view NameOf(Pooling value) { return FindName(value); }
absl::string_view NameOf(RowNorm value) { return FindName(value); }
absl::string_view NameOf(AccentStripping value) { return FindName(value); }

bool operator==(const AttentionConfig& a, const AttentionConfig& b) {
  return FieldsEqual(a, b);
}
bool operator!=(const AttentionConfig& a, const AttentionConfig& b) {
  return !(a == b);
}

bool operator==(const TokenizerConfig& a, const TokenizerConfig& b) {
  return FieldsEqual(a, b);
}
bool operator!=(const TokenizerConfig& a, const TokenizerConfig& b) {
  return !(a == b);
}

bool operator==(const ModelConfig& a, const ModelConfig& b) {
  return FieldsEqual(a, b);
}
bool operator!=(const ModelConfig& a, const ModelConfig& b) {
  return !(a == b);
}

}  // namespace favor::model
