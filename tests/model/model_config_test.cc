#include "server/model/model_config.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"

namespace favor::model {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<ModelConfig> Parse(const std::string& json) {
  return ParseModelConfig(json, "test/config.json");
}

// Parses `json` and expects INVALID_ARGUMENT whose message names the source
// and contains every one of `parts`.
void ExpectInvalid(const std::string& json,
                   const std::vector<std::string>& parts) {
  auto config = Parse(json);
  ASSERT_FALSE(config.ok()) << json << " was accepted";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(config.status().message());
  EXPECT_THAT(message, HasSubstr("test/config.json"));
  for (const std::string& part : parts) {
    EXPECT_THAT(message, HasSubstr(part)) << json;
  }
}

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

TEST(ModelConfigTest, EmptyObjectGivesBertBaseWithFavorPlus) {
  auto config = Parse("{}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->vocab_size, 30522);
  EXPECT_EQ(config->hidden_size, 768);
  EXPECT_EQ(config->head_dim(), 64);
  EXPECT_EQ(config->attention.kernel, attention::Kernel::kFavorPositive);
  EXPECT_EQ(config->attention.num_random_features, 256);
  EXPECT_EQ(config->pooling, Pooling::kMean);
  EXPECT_EQ(*config, ModelConfig());
}

TEST(ModelConfigTest, ReadsEveryField) {
  auto config = Parse(R"({
    "version": "2024-05-01", "vocab_size": 1000, "type_vocab_size": 0,
    "pad_token_id": 1, "unk_token_id": -1, "cls_token_id": 2,
    "sep_token_id": 3, "mask_token_id": 4, "hidden_size": 128,
    "num_hidden_layers": 3, "num_attention_heads": 4,
    "intermediate_size": 512, "hidden_act": "gelu_new",
    "norm": "scale_norm", "norm_placement": "pre", "layer_norm_eps": 1e-5,
    "position_embedding_type": "rotary", "rotary_base": 500.5,
    "max_position_embeddings": 16, "max_sequence_length": 65536,
    "attention": {"kernel": "hyperbolic", "num_random_features": 64,
                  "orthogonal": false, "row_norm": "sqrt_dim",
                  "projection_seed": 18446744073709551615, "causal": true,
                  "feature_epsilon": 0.001},
    "block": "encoder", "pooling": "cls", "normalize": true
  })");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->version, "2024-05-01");
  EXPECT_EQ(config->unk_token_id, -1);
  EXPECT_EQ(config->hidden_act, Activation::kGeluTanh);
  EXPECT_EQ(config->norm, NormType::kScaleNorm);
  EXPECT_EQ(config->norm_placement, NormPlacement::kPre);
  EXPECT_EQ(config->position_embedding_type, PositionEmbedding::kRotary);
  EXPECT_DOUBLE_EQ(config->rotary_base, 500.5);
  EXPECT_EQ(config->max_sequence_length, 65536);
  EXPECT_EQ(config->attention.kernel, attention::Kernel::kFavorHyperbolic);
  EXPECT_FALSE(config->attention.orthogonal);
  EXPECT_EQ(config->attention.row_norm,
            attention::ProjectionOptions::RowNorm::kSqrtDim);
  EXPECT_EQ(config->attention.projection_seed, ~uint64_t{0});
  EXPECT_TRUE(config->attention.causal);
  EXPECT_EQ(config->pooling, Pooling::kCls);
  EXPECT_TRUE(config->normalize);
}

TEST(ModelConfigTest, RoundTripsThroughJson) {
  ModelConfig config;
  config.version = "v7 \"quoted\"";
  config.vocab_size = 777;
  config.type_vocab_size = 0;
  config.pad_token_id = -1;
  config.hidden_size = 96;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 3;
  config.layer_norm_eps = 1.0 / 3.0;
  config.position_embedding_type = PositionEmbedding::kNone;
  config.max_sequence_length = 1 << 20;
  config.attention.kernel = attention::Kernel::kRelu;
  config.attention.projection_seed = 42;
  config.attention.feature_epsilon = 0.1;
  config.block = BlockType::kIsab;
  config.num_inducing_points = 16;
  config.pooling = Pooling::kAttention;
  config.normalize = true;
  ASSERT_TRUE(ValidateModelConfig(config).ok());
  const std::string json = ModelConfigToJson(config);
  auto parsed = Parse(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << json;
  EXPECT_EQ(*parsed, config) << json;
  EXPECT_EQ(ModelConfigToJson(*parsed), json);
}

TEST(ModelConfigTest, RejectsUnknownFieldsByName) {
  ExpectInvalid(R"({"hidden_sise": 64})", {"unknown field 'hidden_sise'"});
  ExpectInvalid(R"({"attention": {"kernal": "relu"}})",
                {"unknown field 'attention.kernal'"});
}

TEST(ModelConfigTest, IgnoresCommentsAndHuggingFaceBookkeeping) {
  auto config = Parse(R"({
    "_comment": "converted from bert-base-uncased",
    "_name_or_path": "bert-base-uncased",
    "architectures": ["BertModel"], "model_type": "bert",
    "transformers_version": "4.40.0", "torch_dtype": "float32",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02, "use_cache": true,
    "position_embedding_type": "absolute",
    "attention": {"_comment": "FAVOR+ replaces softmax"}
  })");
  EXPECT_TRUE(config.ok()) << config.status();
}

TEST(ModelConfigTest, RejectsWrongTypes) {
  ExpectInvalid(R"({"hidden_size": "768"})",
                {"field 'hidden_size' must be a 64-bit integer, got string"});
  ExpectInvalid(R"({"hidden_size": 768.0})",
                {"field 'hidden_size' must be a 64-bit integer"});
  ExpectInvalid(R"({"normalize": 1})",
                {"field 'normalize' must be true or false, got number 1"});
  ExpectInvalid(R"({"attention": {"projection_seed": -1}})",
                {"field 'attention.projection_seed' must be a non-negative"});
  ExpectInvalid(R"({"attention": "favor+"})",
                {"field 'attention' must be an object"});
  ExpectInvalid(R"({"vocab_size": 9223372036854775808})",
                {"field 'vocab_size' must be a 64-bit integer"});
}

TEST(ModelConfigTest, RejectsUnknownEnumValuesListingTheKnownOnes) {
  ExpectInvalid(R"({"hidden_act": "swish"})",
                {"field 'hidden_act' must be one of \"gelu\", "
                 "\"gelu_tanh\", \"relu\""});
  ExpectInvalid(R"({"norm": "rms_norm"})", {"field 'norm'", "scale_norm"});
  ExpectInvalid(R"({"pooling": "max"})", {"field 'pooling'", "\"attention\""});
  ExpectInvalid(R"({"block": "decoder"})", {"field 'block'", "\"isab\""});
  ExpectInvalid(R"({"position_embedding_type": "learned"})",
                {"field 'position_embedding_type'", "\"absolute\""});
  ExpectInvalid(
      R"({"attention": {"kernel": "cosformer"}})",
      {"field 'attention.kernel'", "unknown attention kernel", "favor+"});
  ExpectInvalid(R"({"attention": {"row_norm": "unit"}})",
                {"field 'attention.row_norm'", "\"sqrt_dim\""});
}

TEST(ModelConfigTest, AcceptsEveryKernelName) {
  for (const char* kernel :
       {"softmax", "favor+", "hyperbolic", "trig", "relu", "elu+1", "exp"}) {
    auto config =
        Parse(absl::StrCat(R"({"attention": {"kernel": ")", kernel, "\"}}"));
    ASSERT_TRUE(config.ok()) << kernel << ": " << config.status();
    EXPECT_EQ(attention::KernelName(config->attention.kernel), kernel);
  }
}

TEST(ModelConfigTest, ValidatesSizes) {
  ExpectInvalid(R"({"hidden_size": 0})",
                {"field 'hidden_size' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"hidden_size": 100, "num_attention_heads": 12})",
                {"field 'hidden_size' is 100; must be divisible by "
                 "num_attention_heads (12)"});
  ExpectInvalid(R"({"num_hidden_layers": -2})",
                {"field 'num_hidden_layers' is -2"});
  ExpectInvalid(R"({"num_attention_heads": 0})",
                {"field 'num_attention_heads' is 0"});
  ExpectInvalid(R"({"intermediate_size": 0})",
                {"field 'intermediate_size' is 0"});
  ExpectInvalid(R"({"vocab_size": 0})", {"field 'vocab_size' is 0"});
  ExpectInvalid(R"({"layer_norm_eps": 0})",
                {"field 'layer_norm_eps' is 0; must be finite and above 0"});
  ExpectInvalid(R"({"hidden_size": 8192, "num_attention_heads": 1})",
                {"head size limit 4096"});
  ExpectInvalid(R"({"version": ")" + std::string(300, 'v') + "\"}",
                {"field 'version' is 300 bytes long"});
}

TEST(ModelConfigTest, ValidatesSpecialTokenIds) {
  ExpectInvalid(R"({"vocab_size": 100, "cls_token_id": 100})",
                {"field 'cls_token_id' is 100; must be -1 (none) or below "
                 "vocab_size (100)"});
  ExpectInvalid(R"({"pad_token_id": -2})", {"field 'pad_token_id' is -2"});
  EXPECT_TRUE(Parse(R"({"vocab_size": 10, "pad_token_id": 9,
      "unk_token_id": -1, "cls_token_id": -1, "sep_token_id": -1,
      "mask_token_id": -1})")
                  .ok());
}

TEST(ModelConfigTest, LearnedPositionsBoundTheSequenceLength) {
  ExpectInvalid(R"({"max_position_embeddings": 512,
                    "max_sequence_length": 1024})",
                {"field 'max_position_embeddings' is 512; learned absolute "
                 "positions need at least max_sequence_length (1024) rows"});
  // Rotary and none accept any length.
  EXPECT_TRUE(Parse(R"({"position_embedding_type": "rotary",
      "max_position_embeddings": 512, "max_sequence_length": 1048576})")
                  .ok());
  EXPECT_TRUE(Parse(R"({"position_embedding_type": "none",
      "max_sequence_length": 1048576})")
                  .ok());
  ExpectInvalid(R"({"max_sequence_length": 0})",
                {"field 'max_sequence_length' is 0"});
}

TEST(ModelConfigTest, ValidatesRotary) {
  ExpectInvalid(R"({"position_embedding_type": "rotary", "hidden_size": 12,
                    "num_attention_heads": 4})",
                {"even head size"});
  ExpectInvalid(R"({"position_embedding_type": "rotary", "rotary_base": 1})",
                {"field 'rotary_base'"});
  ExpectInvalid(R"({"position_embedding_type": "rotary",
                    "block": "cross_attention", "num_latents": 8})",
                {"field 'position_embedding_type'", "cross_attention"});
}

TEST(ModelConfigTest, ValidatesAttention) {
  ExpectInvalid(R"({"attention": {"num_random_features": 0}})",
                {"field 'attention.num_random_features' is 0; must be in "
                 "[1, 65536]"});
  ExpectInvalid(R"({"attention": {"kernel": "trig",
                                  "num_random_features": 100000}})",
                {"field 'attention.num_random_features' is 100000"});
  // Kernels without a projection ignore the feature count.
  EXPECT_TRUE(
      Parse(R"({"attention": {"kernel": "elu+1", "num_random_features": 0}})")
          .ok());
  ExpectInvalid(R"({"attention": {"feature_epsilon": -1}})",
                {"field 'attention.feature_epsilon' is -1"});
  ExpectInvalid(R"({"block": "isab", "num_inducing_points": 4,
                    "attention": {"causal": true}})",
                {"field 'attention.causal'", "isab"});
}

TEST(ModelConfigTest, ValidatesBlocks) {
  ExpectInvalid(R"({"block": "cross_attention"})",
                {"field 'num_latents' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"block": "isab"})",
                {"field 'num_inducing_points' is 0; must be in [1, 65536]"});
  ExpectInvalid(R"({"num_latents": 8})",
                {"field 'num_latents' is 8; must be in [0, 0]"});
  EXPECT_TRUE(Parse(R"({"block": "cross_attention", "num_latents": 8})").ok());
}

TEST(ModelConfigTest, RejectsDuplicateKeysAndNonObjects) {
  ExpectInvalid(R"({"hidden_size": 64, "hidden_size": 128})",
                {"duplicate key 'hidden_size'"});
  ExpectInvalid("[]", {"must be a JSON object"});
  ExpectInvalid("{", {"not valid JSON"});
}

class LoadModelConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "model_config_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/config.json";
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(LoadModelConfigTest, LoadsAFile) {
  auto config = LoadModelConfig(Write(R"({"hidden_size": 64,
      "num_attention_heads": 2})"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->hidden_size, 64);
}

TEST_F(LoadModelConfigTest, ErrorsNameThePath) {
  const std::string path = Write(R"({"hidden_size": -1})");
  auto config = LoadModelConfig(path);
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(HasSubstr(path), HasSubstr("hidden_size")));
  auto missing = LoadModelConfig(dir_ + "/absent.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("absent.json"));
}

TEST_F(LoadModelConfigTest, RejectsHugeFiles) {
  auto config = LoadModelConfig(Write(std::string(2 << 20, ' ')));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("config size limit"));
}

// ---- Expected weights ----

ModelConfig SmallConfig() {
  ModelConfig config;
  config.vocab_size = 50;
  config.type_vocab_size = 2;
  config.hidden_size = 8;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.intermediate_size = 16;
  config.max_position_embeddings = 32;
  config.max_sequence_length = 32;
  config.attention.num_random_features = 6;
  return config;
}

TEST(ExpectedWeightsTest, PostNormEncoderUsesBertNames) {
  const auto weights = ByName(ExpectedWeights(SmallConfig()));
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

TEST(ExpectedWeightsTest, PreNormScaleNormRotaryAttentionPooling) {
  ModelConfig config = SmallConfig();
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

TEST(ExpectedWeightsTest, CrossAttentionHasLatents) {
  ModelConfig config = SmallConfig();
  config.block = BlockType::kCrossAttention;
  config.num_latents = 5;
  const auto weights = ByName(ExpectedWeights(config));
  EXPECT_EQ(weights.at("encoder.latents").shape, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(weights.count("encoder.layer.0.attention.self.query.weight"), 1u);
}

TEST(ExpectedWeightsTest, IsabHasInducingPointsAndASecondBlock) {
  ModelConfig config = SmallConfig();
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
TEST_F(LoadModelConfigTest, ExpectedWeightsMatchAWrittenModel) {
  const ModelConfig config = SmallConfig();
  const std::vector<ExpectedTensor> expected = ExpectedWeights(config);
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorToWrite> tensors;
  storage.reserve(expected.size());
  for (const ExpectedTensor& tensor : expected) {
    int64_t count = 1;
    for (int64_t dim : tensor.shape) count *= dim;
    storage.emplace_back(static_cast<size_t>(count) * 2);
    tensors.push_back(
        {tensor.name, DType::kBF16, tensor.shape, storage.back()});
  }
  const std::string path = dir_ + "/model.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
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

}  // namespace
}  // namespace favor::model
