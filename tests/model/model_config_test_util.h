// Helpers of the model config and weight layout tests.
#ifndef FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/model_config.h"
#include "server/model/safetensors.h"

namespace favor::model {

inline absl::StatusOr<ModelConfig> Parse(const std::string& json) {
  return ParseModelConfig(json, "test/config.json");
}

// Parses `json` and expects INVALID_ARGUMENT whose message names the source
// and contains every one of `parts`.
inline void ExpectInvalid(const std::string& json,
                          const std::vector<std::string>& parts) {
  auto config = Parse(json);
  ASSERT_FALSE(config.ok()) << json << " was accepted";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(config.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("test/config.json"));
  for (const std::string& part : parts) {
    EXPECT_THAT(message, ::testing::HasSubstr(part)) << json;
  }
}

// A model small enough to write and load in milliseconds, with two layers,
// two heads and a projection (favor+).
inline ModelConfig TinyConfig() {
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

// TinyConfig and variants of it that between them take every branch of the
// weight layout: post and pre norm, LayerNorm and ScaleNorm, every position
// embedding, every block, kernels with and without a projection, token
// types or none, attention pooling.
inline std::vector<ModelConfig> EveryKindOfModel() {
  std::vector<ModelConfig> configs(4, TinyConfig());
  ModelConfig& pre = configs[1];
  pre.norm = NormType::kScaleNorm;
  pre.norm_placement = NormPlacement::kPre;
  pre.position_embedding_type = PositionEmbedding::kRotary;
  pre.attention.kernel = attention::Kernel::kRelu;
  pre.pooling = Pooling::kAttention;
  pre.local_attention_window = 4;
  pre.global_attention_every_n_layers = 2;
  pre.first_layer_attention_norm = false;
  ModelConfig& isab = configs[2];
  isab.position_embedding_type = PositionEmbedding::kNone;
  isab.block = BlockType::kIsab;
  isab.num_inducing_points = 3;
  isab.feed_forward = FeedForward::kGated;
  isab.hidden_act = Activation::kSilu;
  ModelConfig& cross = configs[3];
  cross.type_vocab_size = 0;
  cross.block = BlockType::kCrossAttention;
  cross.num_latents = 5;
  cross.attention.kernel = attention::Kernel::kSoftmaxExact;
  cross.linear_bias = false;
  cross.norm_bias = false;
  for (const ModelConfig& config : configs) {
    EXPECT_TRUE(ValidateModelConfig(config).ok())
        << ValidateModelConfig(config);
  }
  return configs;
}

// Writes every tensor of `expected`, zero-filled, as a safetensors file.
inline absl::Status WriteZeroTensors(
    const std::string& path, const std::vector<ExpectedTensor>& expected,
    DType dtype) {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorToWrite> tensors;
  storage.reserve(expected.size());
  for (const ExpectedTensor& tensor : expected) {
    int64_t count = 1;
    for (int64_t dim : tensor.shape) count *= dim;
    storage.emplace_back(static_cast<size_t>(count) * DTypeSize(dtype));
    tensors.push_back({tensor.name, dtype, tensor.shape, storage.back()});
  }
  return WriteSafetensors(path, tensors);
}

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_MODEL_CONFIG_TEST_UTIL_H_
