// ExpectedWeights and VisitWeightLayout (weight_layout.cc).
#include "server/model/weight_layout.h"

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"
#include "tests/model/docs_table_test_util.h"
#include "tests/model/model_config_test_util.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The tensors of `expected`, by name.
std::map<std::string, ExpectedTensor> ByName(
    const std::vector<ExpectedTensor>& expected) {
  std::map<std::string, ExpectedTensor> map;
  for (const ExpectedTensor& tensor : expected) {
    EXPECT_TRUE(map.emplace(tensor.name, tensor).second)
        << "listed twice: " << tensor.name;
  }
  return map;
}

using ExpectedWeightsTest = TempDirTest;

TEST_F(ExpectedWeightsTest, PostNormEncoderUsesBertNames) {
  const auto weights = ByName(ExpectedWeights(TinyConfig()));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"embeddings.word_embeddings.weight", {50, 8}},
      {"embeddings.position_embeddings.weight", {32, 8}},
      {"embeddings.token_type_embeddings.weight", {2, 8}},
      {"embeddings.LayerNorm.weight", {8}},
      {"embeddings.LayerNorm.bias", {8}},
      {"encoder.layer.1.attention.self.query.weight", {8, 8}},
      {"encoder.layer.1.attention.self.key.bias", {8}},
      {"encoder.layer.1.attention.self.value.weight", {8, 8}},
      {"encoder.layer.1.attention.self.projection", {6, 4}},
      {"encoder.layer.1.attention.output.dense.weight", {8, 8}},
      {"encoder.layer.1.attention.output.LayerNorm.weight", {8}},
      {"encoder.layer.1.intermediate.dense.weight", {16, 8}},
      {"encoder.layer.1.intermediate.dense.bias", {16}},
      {"encoder.layer.1.output.dense.weight", {8, 16}},
      {"encoder.layer.1.output.dense.bias", {8}},
      {"encoder.layer.1.output.LayerNorm.bias", {8}},
      {"pooler.dense.weight", {8, 8}},
  };
  for (const auto& [name, shape] : expected) {
    ASSERT_EQ(weights.count(name), 1u) << name;
    EXPECT_EQ(weights.at(name).shape, shape) << name;
  }
  // 5 embedding tensors, 17 per layer (16 and the optional projection),
  // 3 pooler tensors.
  EXPECT_EQ(weights.size(), 5u + 2 * 17u + 3u);
  EXPECT_FALSE(
      weights.at("encoder.layer.0.attention.self.projection").required);
  EXPECT_FALSE(weights.at("embeddings.token_type_embeddings.weight").required);
  EXPECT_FALSE(weights.at("pooler.query").required);
  EXPECT_TRUE(weights.at("encoder.layer.0.output.dense.weight").required);
  EXPECT_EQ(weights.count("encoder.final_norm.weight"), 0u);
  EXPECT_EQ(weights.count("encoder.layer.2.output.dense.weight"), 0u);
}

TEST_F(ExpectedWeightsTest, PreNormScaleNormRotaryAttentionPooling) {
  ModelConfig config = TinyConfig();
  config.norm = NormType::kScaleNorm;
  config.norm_placement = NormPlacement::kPre;
  config.position_embedding_type = PositionEmbedding::kRotary;
  config.type_vocab_size = 0;
  config.pooling = Pooling::kAttention;
  config.attention.kernel = attention::Kernel::kEluPlusOne;
  ASSERT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config);
  const auto weights = ByName(ExpectedWeights(config));
  EXPECT_EQ(weights.at("encoder.final_norm.scale").shape,
            std::vector<int64_t>{1});
  EXPECT_EQ(weights.at("embeddings.LayerNorm.scale").shape,
            std::vector<int64_t>{1});
  EXPECT_EQ(weights.at("encoder.layer.0.output.LayerNorm.scale").shape,
            std::vector<int64_t>{1});
  EXPECT_EQ(weights.count("encoder.layer.0.output.LayerNorm.weight"), 0u);
  EXPECT_EQ(weights.count("embeddings.position_embeddings.weight"), 0u);
  EXPECT_EQ(weights.count("embeddings.token_type_embeddings.weight"), 0u);
  EXPECT_EQ(weights.count("encoder.layer.0.attention.self.projection"), 0u);
  EXPECT_TRUE(weights.at("pooler.query").required);
  EXPECT_EQ(weights.at("pooler.query").shape, std::vector<int64_t>{8});
}

TEST_F(ExpectedWeightsTest, CrossAttentionHasLatents) {
  ModelConfig config = TinyConfig();
  config.block = BlockType::kCrossAttention;
  config.num_latents = 5;
  const auto weights = ByName(ExpectedWeights(config));
  EXPECT_EQ(weights.at("encoder.latents").shape, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(weights.count("encoder.layer.0.attention.self.query.weight"), 1u);
}

TEST_F(ExpectedWeightsTest, IsabHasInducingPointsAndASecondBlock) {
  ModelConfig config = TinyConfig();
  config.block = BlockType::kIsab;
  config.num_inducing_points = 3;
  const auto weights = ByName(ExpectedWeights(config));
  EXPECT_EQ(weights.at("encoder.layer.1.inducing_points").shape,
            (std::vector<int64_t>{3, 8}));
  for (const char* name :
       {"encoder.layer.1.induced.attention.self.query.weight",
        "encoder.layer.1.induced.attention.output.LayerNorm.bias",
        "encoder.layer.1.induced.intermediate.dense.weight",
        "encoder.layer.1.induced.output.LayerNorm.weight",
        "encoder.layer.1.attention.self.query.weight"}) {
    EXPECT_EQ(weights.count(name), 1u) << name;
  }
}

// ExpectedWeights and CheckTensors together: a file written with exactly the
// expected tensors passes, and one without a layer fails naming its tensors.
TEST_F(ExpectedWeightsTest, MatchAWrittenModel) {
  const ModelConfig config = TinyConfig();
  const std::vector<ExpectedTensor> expected = ExpectedWeights(config);
  const std::string path = dir_ + "/model.safetensors";
  ASSERT_TRUE(WriteZeroTensors(path, expected, DType::kBF16).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(CheckTensors(**file, expected).ok());

  ModelConfig deeper = config;
  deeper.num_hidden_layers = 3;
  const absl::Status status = CheckTensors(**file, ExpectedWeights(deeper));
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(path), HasSubstr("16 missing"),
                    HasSubstr("'encoder.layer.2.attention.self.query.weight'"),
                    Not(HasSubstr("unexpected"))));
}

// Records the names in the parts it is handed.
class NameRecorder final : public WeightLayoutVisitor {
 public:
  void WordEmbeddings(const ExpectedTensor& t) override { Add(t); }
  void PositionEmbeddings(const ExpectedTensor& t) override { Add(t); }
  void TokenTypeEmbeddings(const ExpectedTensor& t) override { Add(t); }
  void EmbeddingsNorm(const NormTensors& norm) override { Add(norm); }
  void Latents(const ExpectedTensor& t) override { Add(t); }
  void InducingPoints(const ExpectedTensor& t) override { Add(t); }
  void InducedLayer(const LayerTensors& layer) override { Add(layer); }
  void Layer(const LayerTensors& layer) override { Add(layer); }
  void FinalNorm(const NormTensors& norm) override { Add(norm); }
  void PoolerQuery(const ExpectedTensor& t) override { Add(t); }
  void Unused(const ExpectedTensor& t) override { Add(t); }

  std::vector<std::string> names;

 private:
  void Add(const ExpectedTensor& tensor) { names.push_back(tensor.name); }
  void Add(const std::optional<ExpectedTensor>& tensor) {
    if (tensor.has_value()) Add(*tensor);
  }
  void Add(const LinearTensors& linear) {
    Add(linear.weight);
    Add(linear.bias);
  }
  void Add(const NormTensors& norm) {
    Add(norm.weight);
    Add(norm.bias);
    Add(norm.scale);
  }
  void Add(const LayerTensors& layer) {
    const AttentionTensors& attention = layer.attention;
    for (const LinearTensors* linear :
         {&attention.query, &attention.key, &attention.value}) {
      Add(*linear);
    }
    Add(attention.projection);
    Add(attention.output);
    Add(layer.attention_norm);
    Add(layer.intermediate);
    if (layer.gate.has_value()) Add(*layer.gate);
    Add(layer.output);
    Add(layer.output_norm);
  }
};

// The visitor gets every tensor the layout lists, in the same order: the
// loader, which sees only what the visitor is handed, can read them all.
TEST_F(ExpectedWeightsTest, TheVisitorIsHandedEveryListedTensor) {
  for (const ModelConfig& config : EveryKindOfModel()) {
    NameRecorder recorder;
    const std::vector<ExpectedTensor> listed =
        VisitWeightLayout(config, {}, recorder);
    std::vector<std::string> names;
    for (const ExpectedTensor& tensor : listed) names.push_back(tensor.name);
    EXPECT_EQ(recorder.names, names) << NameOf(config.block);
  }
}

// A name pattern of docs/models.md's weight tables as a regular expression:
// `<norm>` stands for a norm's tensors and N for a layer index.
std::string DocsPatternToRegex(std::string pattern) {
  pattern = absl::StrReplaceAll(pattern, {{".", "\\."}});
  return absl::StrReplaceAll(pattern, {{"<norm>", "\\.(weight|bias|scale)"},
                                       {"\\.N\\.", "\\.[0-9]+\\."}});
}

// The names of a table's first column; a span starting with "." replaces
// the last component of the one before it (`P.x.weight`, `.bias`).
std::vector<std::string> DocsNames(
    const std::vector<std::vector<std::string>>& table) {
  std::vector<std::string> names;
  for (const auto& row : table) {
    std::string previous;
    for (std::string span : CodeSpans(row.at(0))) {
      if (span[0] == '.') {
        span = previous.substr(0, previous.rfind('.')) + span;
      }
      names.push_back(span);
      previous = span;
    }
  }
  return names;
}

// Every name ExpectedWeights returns is in docs/models.md's tables, and
// every name there is returned for some config.
TEST_F(ExpectedWeightsTest, DocsListEveryTensor) {
  const std::string doc = ReadModelsDoc();
  const auto layer = DocsNames(MarkdownTable(doc, "## model.safetensors", 1));
  std::vector<std::string> patterns;
  for (const std::string& name :
       DocsNames(MarkdownTable(doc, "## model.safetensors", 0))) {
    if (!absl::StrContains(name, "<layer tensors>")) {
      patterns.push_back(name);
      continue;
    }
    for (const std::string& tensor : layer) {  // P.<tensor>
      patterns.push_back(
          absl::StrReplaceAll(name, {{"<layer tensors>", tensor.substr(2)}}));
    }
  }
  ASSERT_GT(layer.size(), 10u);
  std::vector<bool> used(patterns.size());
  for (const ModelConfig& config : EveryKindOfModel()) {
    for (const ExpectedTensor& tensor : ExpectedWeights(config)) {
      bool found = false;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (std::regex_match(tensor.name,
                             std::regex(DocsPatternToRegex(patterns[i])))) {
          used[i] = found = true;
        }
      }
      EXPECT_TRUE(found) << tensor.name << " is not in docs/models.md";
    }
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    EXPECT_TRUE(used[i]) << "docs/models.md lists " << patterns[i]
                         << ", which no config has";
  }
}

}  // namespace
}  // namespace favor::model
