// ModelConfigToJson (model_config_json.cc).
#include <string>

#include "gtest/gtest.h"
#include "server/model/model_config.h"
#include "tests/model/model_config_test_util.h"

namespace favor::model {
namespace {

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

}  // namespace
}  // namespace favor::model
