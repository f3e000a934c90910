// The config.json schema (model_config_fields.h): that docs/models.md's field
// tables list exactly its fields, with their types and defaults, and that
// the reader, the writer and operator== cover every field.
#include "server/model/model_config_fields.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/model/aggregate_field_count.h"
#include "server/model/model_config.h"
#include "tests/model/docs_table_test_util.h"
#include "tests/model/model_config_test_util.h"

namespace favor::model {
namespace {

using internal::ConfigFields;
using Json = nlohmann::json;

// The "type" column of docs/models.md for a member type.
template <typename T>
std::string DocsType() {
  if constexpr (internal::kIsNestedConfig<T>) {
    return "object";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return "int";
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return "uint64";
  } else if constexpr (std::is_same_v<T, double>) {
    return "number";
  } else {
    return "string";  // std::string and enums, written by name
  }
}

struct FieldRow {
  std::string name;
  std::string type;
};

template <typename Config>
std::vector<FieldRow> SchemaRows() {
  std::vector<FieldRow> rows;
  ConfigFields<Config>::ForEach([&](absl::string_view name, auto member) {
    using T = std::remove_reference_t<decltype(std::declval<Config>().*member)>;
    rows.push_back({std::string(name), DocsType<T>()});
  });
  return rows;
}

// Compares one docs table with the schema: the same fields in the same
// order (the order ModelConfigToJson writes), their types, and each default
// with the default config's JSON (`defaults`).
template <typename Config>
void ExpectDocsTableMatches(absl::string_view heading, const Json& defaults) {
  const auto table = MarkdownTable(ReadModelsDoc(), heading);
  const std::vector<FieldRow> schema = SchemaRows<Config>();
  std::vector<std::string> docs_names, schema_names;
  for (const auto& row : table) docs_names.push_back(row.at(0));
  for (const FieldRow& row : schema) {
    schema_names.push_back("`" + row.name + "`");
  }
  ASSERT_EQ(docs_names, schema_names) << "docs/models.md, " << heading;
  for (size_t i = 0; i < schema.size(); ++i) {
    SCOPED_TRACE(schema[i].name);
    EXPECT_EQ(table[i].at(1), schema[i].type);
    if (schema[i].type == "object") continue;  // its own table
    const std::string text = absl::StrReplaceAll(
        table[i].at(2), {{"`", ""}, {"−", "-"}});  // "−1" is minus one
    EXPECT_EQ(Json::parse(text), defaults.at(schema[i].name)) << text;
  }
}

TEST(ModelConfigFieldsTest, DocsListEveryFieldWithItsTypeAndDefault) {
  const Json defaults = Json::parse(ModelConfigToJson(ModelConfig()));
  ExpectDocsTableMatches<ModelConfig>("### Top-level fields", defaults);
  ExpectDocsTableMatches<AttentionConfig>("### `attention` fields",
                                          defaults.at("attention"));
  ExpectDocsTableMatches<TokenizerConfig>("### `tokenizer` fields",
                                          defaults.at("tokenizer"));
}

TEST(ModelConfigFieldsTest, EveryMemberHasARow) {
  EXPECT_EQ(internal::AggregateFieldCount<ModelConfig>(),
            internal::ConfigFieldCount<ModelConfig>());
  EXPECT_EQ(internal::AggregateFieldCount<AttentionConfig>(),
            internal::ConfigFieldCount<AttentionConfig>());
  EXPECT_EQ(internal::AggregateFieldCount<TokenizerConfig>(),
            internal::ConfigFieldCount<TokenizerConfig>());
}

// Another value of the same type: the next name of an enum, the number
// plus one, the flag flipped.
template <typename T>
void Change(T& value) {
  if constexpr (std::is_same_v<T, attention::Kernel>) {
    value = value == attention::Kernel::kRelu ? attention::Kernel::kExp
                                              : attention::Kernel::kRelu;
  } else if constexpr (std::is_enum_v<T>) {
    for (const auto& entry : internal::EnumNames(value)) {
      if (entry.value != value) {
        value = entry.value;
        return;
      }
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    value += "x";
  } else {
    value += 1;
  }
}

// fn(name, config) with config the default with only that field changed,
// for every field, attention.* included.
template <typename Fn>
void ForEachChangedField(Fn&& fn) {
  ConfigFields<ModelConfig>::ForEach([&](absl::string_view name, auto member) {
    using T = std::remove_reference_t<decltype(ModelConfig().*member)>;
    if constexpr (internal::kIsNestedConfig<T>) {
      ConfigFields<T>::ForEach(
          [&](absl::string_view nested, auto nested_member) {
            ModelConfig config;
            Change(config.*member.*nested_member);
            fn(absl::StrCat(name, ".", nested), config);
          });
    } else {
      ModelConfig config;
      Change(config.*member);
      fn(std::string(name), config);
    }
  });
}

TEST(ModelConfigFieldsTest, EqualityComparesEveryField) {
  size_t fields = 0;
  ForEachChangedField([&](const std::string& name, const ModelConfig& config) {
    EXPECT_NE(config, ModelConfig()) << name;
    EXPECT_FALSE(config == ModelConfig()) << name;
    ++fields;
  });
  // "attention" and "tokenizer" count as their own fields.
  EXPECT_EQ(fields, internal::ConfigFieldCount<ModelConfig>() - 2 +
                        internal::ConfigFieldCount<AttentionConfig>() +
                        internal::ConfigFieldCount<TokenizerConfig>());
}

// The writer writes every field under its name, and the reader reads it
// back, for every change the validation accepts.
TEST(ModelConfigFieldsTest, WriterAndReaderCoverEveryField) {
  const Json defaults = Json::parse(ModelConfigToJson(ModelConfig()));
  int round_trips = 0;
  ForEachChangedField([&](const std::string& name, const ModelConfig& config) {
    const std::string text = ModelConfigToJson(config);
    const Json::json_pointer pointer("/" +
                                     absl::StrReplaceAll(name, {{".", "/"}}));
    EXPECT_NE(Json::parse(text).at(pointer), defaults.at(pointer)) << name;
    if (!ValidateModelConfig(config).ok()) return;
    auto parsed = Parse(text);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    EXPECT_EQ(*parsed, config) << name;
    ++round_trips;
  });
  EXPECT_GE(round_trips, 20);
}

TEST(ModelConfigFieldsTest, NameOfWritesTheFirstNameOfEachValue) {
  EXPECT_EQ(NameOf(Activation::kGeluTanh), "gelu_tanh");
  EXPECT_EQ(NameOf(NormType::kScaleNorm), "scale_norm");
  EXPECT_EQ(NameOf(NormPlacement::kPre), "pre");
  EXPECT_EQ(NameOf(PositionEmbedding::kNone), "none");
  EXPECT_EQ(NameOf(BlockType::kCrossAttention), "cross_attention");
  EXPECT_EQ(NameOf(Pooling::kAttention), "attention");
  EXPECT_EQ(NameOf(attention::ProjectionOptions::RowNorm::kSqrtDim),
            "sqrt_dim");
  EXPECT_EQ(NameOf(AccentStripping::kAsLowercase), "as_lowercase");
  EXPECT_EQ(NameOf(static_cast<Pooling>(99)), "unknown");
}

}  // namespace
}  // namespace favor::model
