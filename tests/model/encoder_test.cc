// The encoder's positions, causal attention and norms (encoder.cc, layers.cc)
// through Model::Embed.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

// ---- Positions ----

// Without positions, non-causal attention is permutation-equivariant:
// permuting the tokens permutes the outputs.
TEST_F(ModelTest, NoPositionsMakesTheEncoderPermutationEquivariant) {
  ModelConfig config = SmallConfig();
  config.position_embedding_type = PositionEmbedding::kNone;
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(12, 6);
  std::vector<int32_t> reversed(ids.rbegin(), ids.rend());
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  const Embeddings a = Alone(*model, ids, none);
  const Embeddings b = Alone(*model, reversed, none);
  for (int r = 0; r < 12; ++r) {
    EXPECT_LE(RelativeError(b.Row(11 - r), a.Row(r)), 1e-5) << "token " << r;
  }
}

// Absolute and rotary positions make order matter; rotary rotates position
// 0 by angle 0, so a one-token sequence is as without positions (the two
// models share every weight: rotary adds no tensor).
TEST_F(ModelTest, PositionsMakeOrderMatterAndRotaryStartsAtAngleZero) {
  ModelConfig config = SmallConfig();
  std::unique_ptr<Model> models[3];
  const PositionEmbedding kinds[] = {PositionEmbedding::kAbsolute,
                                     PositionEmbedding::kRotary,
                                     PositionEmbedding::kNone};
  for (int i = 0; i < 3; ++i) {
    config.position_embedding_type = kinds[i];
    models[i] = Make(config, std::string(NameOf(kinds[i])));
    ASSERT_NE(models[i], nullptr);
  }
  const std::vector<int32_t> ids = {3, 9, 27, 4};
  const std::vector<int32_t> swapped = {9, 3, 27, 4};
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  for (int i = 0; i < 2; ++i) {  // token 2 sees its neighbours in new places
    EXPECT_GT(RelativeError(Alone(*models[i], ids, none).Row(2),
                            Alone(*models[i], swapped, none).Row(2)),
              1e-3)
        << NameOf(kinds[i]);
  }
  EXPECT_LE(RelativeError(Alone(*models[1], {7}, none).Row(0),
                          Alone(*models[2], {7}, none).Row(0)),
            1e-6);
  EXPECT_GT(RelativeError(Alone(*models[1], ids, none).Row(2),
                          Alone(*models[2], ids, none).Row(2)),
            1e-3);
}

// A causal model's token i sees only tokens ≤ i: a prefix's outputs are the
// first rows of the whole sequence's. For FAVOR+ this holds with ε = 0
// only: the key stabiliser is the max over the whole sequence (as in the
// reference implementation), and ε, added after that shift, weighs
// differently when a later token raises the max.
TEST_F(ModelTest, CausalOutputsDependOnlyOnEarlierTokens) {
  for (const attention::Kernel kernel :
       {attention::Kernel::kSoftmaxExact, attention::Kernel::kFavorPositive}) {
    ModelConfig config = SmallConfig();
    config.attention.kernel = kernel;
    config.attention.causal = true;
    config.attention.feature_epsilon = 0.0;
    config.position_embedding_type = PositionEmbedding::kRotary;
    const auto model = Make(config, std::string(attention::KernelName(kernel)));
    ASSERT_NE(model, nullptr);
    const std::vector<int32_t> ids = Tokens(40, 8);
    EmbedOptions none;
    none.pooling = Pooling::kNone;
    const Embeddings whole = Alone(*model, ids, none);
    const Embeddings prefix = Alone(
        *model, std::vector<int32_t>(ids.begin(), ids.begin() + 25), none);
    for (int r = 0; r < 25; ++r) {
      EXPECT_LE(RelativeError(prefix.Row(r), whole.Row(r)), 1e-5)
          << attention::KernelName(kernel) << ", token " << r;
    }
  }
}

// ---- Norms and placement ----

TEST_F(ModelTest, EveryNormAndPlacementGivesADistinctFiniteModel) {
  std::vector<Embeddings> outputs;
  for (const NormType norm : {NormType::kLayerNorm, NormType::kScaleNorm}) {
    for (const NormPlacement placement :
         {NormPlacement::kPost, NormPlacement::kPre}) {
      ModelConfig config = SmallConfig();
      config.norm = norm;
      config.norm_placement = placement;
      const auto model =
          Make(config, absl::StrCat(NameOf(norm), "_", NameOf(placement)));
      ASSERT_NE(model, nullptr);
      outputs.push_back(EmbedOrDie(*model, Tokens(16, 9), {0, 16}));
      for (const float v : outputs.back().values) ASSERT_TRUE(std::isfinite(v));
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      EXPECT_GT(RelativeError(outputs[i].values, outputs[j].values), 1e-3)
          << i << " vs " << j;
    }
  }
}

// ---- Memory bounds ----

// Attention over one head at a time (a pass budget below one head) and
// rotary rows made block by block give what whole passes and whole tables
// give, for self-attention, cross-attention and ISAB layers alike.
TEST_F(ModelTest, HeadGroupsAndRotaryRowsChangeNothing) {
  for (const BlockType block :
       {BlockType::kEncoder, BlockType::kCrossAttention, BlockType::kIsab}) {
    ModelConfig config = SmallConfig();
    config.block = block;
    config.num_latents = block == BlockType::kCrossAttention ? 5 : 0;
    config.num_inducing_points = block == BlockType::kIsab ? 3 : 0;
    if (block == BlockType::kEncoder) {  // the others have no rotary
      config.position_embedding_type = PositionEmbedding::kRotary;
    }
    const std::string name(NameOf(block));
    ASSERT_NE(Make(config, name), nullptr);
    ModelOptions bounded = SmallBlocks();
    bounded.max_attention_pass_bytes = 1;
    bounded.max_rotary_table_bytes = 0;
    auto whole = Model::Load(dir_ + "/" + name, SmallBlocks());
    auto parts = Model::Load(dir_ + "/" + name, bounded);
    ASSERT_TRUE(whole.ok() && parts.ok());
    const std::vector<int32_t> ids = Tokens(70, 3);
    EmbedOptions none;
    none.pooling = Pooling::kNone;
    const Embeddings want = Alone(**whole, ids, none);
    const Embeddings got = Alone(**parts, ids, none);
    ASSERT_EQ(got.num_rows(), want.num_rows());
    for (int64_t r = 0; r < want.num_rows(); ++r) {
      EXPECT_LE(RelativeError(got.Row(r), want.Row(r)), 1e-5)
          << name << ", row " << r;
    }
  }
}

}  // namespace
}  // namespace favor::model
