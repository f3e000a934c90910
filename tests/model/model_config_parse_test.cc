// ParseModelConfig and LoadModelConfig (model_config_parse.cc).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/model_config.h"
#include "tests/model/model_config_test_util.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

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
  ExpectInvalid(R"({"pooling": "weighted_mean"})",
                {"field 'pooling'", "\"attention\"", "\"last_token\""});
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

TEST(ModelConfigTest, RejectsDuplicateKeysAndNonObjects) {
  ExpectInvalid(R"({"hidden_size": 64, "hidden_size": 128})",
                {"duplicate key 'hidden_size'"});
  ExpectInvalid("[]", {"must be a JSON object"});
  ExpectInvalid("{", {"not valid JSON"});
}

class LoadModelConfigTest : public TempDirTest {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/config.json";
    std::ofstream(path) << text;
    return path;
  }
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

// A named pipe must not make the loader wait for a writer: a config.json
// FIFO would hang favor-server for good. If it blocks, the test opens the
// pipe's other end itself to free the thread.
TEST_F(LoadModelConfigTest, RefusesANamedPipeWithoutWaiting) {
  const std::string path = dir_ + "/config.json";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto loading = std::async(std::launch::async,
                            [&path] { return LoadModelConfig(path); });
  if (loading.wait_for(std::chrono::seconds(10)) !=
      std::future_status::ready) {
    const int writer = open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) close(writer);
    FAIL() << "LoadModelConfig waited on a named pipe";
  }
  const absl::StatusOr<ModelConfig> config = loading.get();
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(HasSubstr(path), HasSubstr("not a regular file")));
}

TEST_F(LoadModelConfigTest, RejectsHugeFiles) {
  auto config = LoadModelConfig(Write(std::string(2 << 20, ' ')));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("config size limit"));
}

}  // namespace
}  // namespace favor::model
