// The memory budget's estimate (memory_estimate.h) against the formula
// docs/performance.md writes out for the default model's shape (hidden 256,
// 4 heads of 64, feed-forward 1024, rotary), term by term; and the profile
// a loaded model carries.
#include "server/model/memory_estimate.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "server/model/model.h"

namespace favor::model {
namespace {

MemoryProfile DefaultShape() {
  ModelConfig config;
  config.hidden_size = 256;
  config.num_attention_heads = 4;
  config.intermediate_size = 1024;
  config.position_embedding_type = PositionEmbedding::kRotary;
  MemoryProfile profile = MemoryProfileOf(config);
  profile.num_threads = 2;
  return profile;
}

TEST(MemoryEstimateTest, EveryHeadInOnePassUpTo256kTokens) {
  const MemoryProfile profile = DefaultShape();
  // ids 24 + positions 8 + rotary tables 4·64 + vectors 256·4 + one pass
  // 16·64·4 heads.
  constexpr int64_t kPerToken = 24 + 8 + 256 + 1024 + 4096;
  EXPECT_EQ(kPerToken, 5408);
  for (const int64_t tokens : {int64_t{1}, int64_t{16384}, int64_t{262144}}) {
    EXPECT_EQ(EstimateInputMemoryBytes(profile, tokens, false),
              tokens * kPerToken)
        << tokens;
  }
}

TEST(MemoryEstimateTest, LongInputsRunHeadGroupsAndBlockwiseRotary) {
  const MemoryProfile profile = DefaultShape();
  // 1M tokens: one head per pass (16·64·1), its output gathered (256·4),
  // rotary tables made per block (none whole).
  constexpr int64_t kPerToken = 24 + 8 + 1024 + 1024 + 1024;
  EXPECT_EQ(EstimateInputMemoryBytes(profile, int64_t{1} << 20, false),
            (int64_t{1} << 20) * kPerToken);
  // 512k: two heads per pass, rotary per block.
  EXPECT_EQ(EstimateInputMemoryBytes(profile, int64_t{1} << 19, false),
            (int64_t{1} << 19) * (24 + 8 + 1024 + 2048 + 1024));
}

TEST(MemoryEstimateTest, TokenVectorsDtypeAndDevice) {
  MemoryProfile profile = DefaultShape();
  EXPECT_EQ(EstimateInputMemoryBytes(profile, 1000, true),
            EstimateInputMemoryBytes(profile, 1000, false) + 1000 * 12 * 256);
  profile.value_bytes = 2;  // bfloat16 vectors; Q, K, V stay float32
  EXPECT_EQ(EstimateInputMemoryBytes(profile, 1000, false),
            1000 * (24 + 8 + 256 + 512 + 4096));
  profile.on_host = false;  // CUDA: only the ids and the returned vectors
  EXPECT_EQ(EstimateInputMemoryBytes(profile, 1000, false), 1000 * 24);
  EXPECT_EQ(EstimateInputMemoryBytes(profile, 1000, true),
            1000 * (24 + 12 * 256));
  EXPECT_EQ(EstimateBatchOverheadBytes(profile), int64_t{4} << 20);
}

TEST(MemoryEstimateTest, BatchOverheadIsEachThreadsBlockBuffers) {
  const MemoryProfile profile = DefaultShape();
  // 2 threads × (256 rows × (8·1024 + 16·256) + 4 MiB) = 14 MiB.
  EXPECT_EQ(EstimateBatchOverheadBytes(profile), int64_t{14} << 20);
}

TEST(MemoryEstimateTest, ALoadedModelCarriesItsProfile) {
  auto model = Model::Load(FAVOR_DEFAULT_MODEL_DIR);
  ASSERT_TRUE(model.ok()) << model.status();
  const MemoryProfile& profile = (*model)->description().memory;
  EXPECT_EQ(profile.hidden_size, 256);
  EXPECT_EQ(profile.head_dim, 64);
  EXPECT_EQ(profile.num_heads, 4);
  EXPECT_EQ(profile.intermediate_size, 1024);
  EXPECT_TRUE(profile.rotary);
  EXPECT_EQ(profile.value_bytes, 4);
  EXPECT_TRUE(profile.on_host);
  EXPECT_EQ(profile.max_attention_pass_bytes,
            ModelOptions().max_attention_pass_bytes);
  EXPECT_GE(profile.num_threads, 1);
}

}  // namespace
}  // namespace favor::model
