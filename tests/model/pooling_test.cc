// Pooling (pooling.cc) through Model::Embed, and on bfloat16 vectors.
#include "server/model/pooling.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/model/safetensors.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

TEST_F(ModelTest, PoolingsFollowTheirDefinitions) {
  const auto model = Make(SmallConfig());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(20, 3);
  EmbedOptions options;
  options.normalize = false;
  options.pooling = Pooling::kNone;
  const Embeddings tokens = Alone(*model, ids, options);
  options.pooling = Pooling::kMean;
  const Embeddings mean = Alone(*model, ids, options);
  options.pooling = Pooling::kCls;
  const Embeddings cls = Alone(*model, ids, options);
  options.pooling = Pooling::kMax;
  const Embeddings max = Alone(*model, ids, options);
  options.pooling = Pooling::kLastToken;
  const Embeddings last = Alone(*model, ids, options);
  std::vector<float> want(32, 0.0f), want_max(32, -INFINITY);
  for (int64_t r = 0; r < 20; ++r) {
    for (int c = 0; c < 32; ++c) {
      want[c] += tokens.Row(r)[c] / 20;
      want_max[c] = std::max(want_max[c], tokens.Row(r)[c]);
    }
  }
  EXPECT_LE(RelativeError(mean.Row(0), want), 1e-5);
  const auto row = [](const Embeddings& e, int64_t r) {
    return std::vector<float>(e.Row(r).begin(), e.Row(r).end());
  };
  EXPECT_EQ(row(cls, 0), row(tokens, 0));
  EXPECT_EQ(row(max, 0), want_max);
  EXPECT_EQ(row(last, 0), row(tokens, 19));
}

// α = softmax(q · y / √H) over the tokens, with q read from the file.
TEST_F(ModelTest, AttentionPoolingWeighsTokensBySoftmaxOfTheQuery) {
  const auto model = Make(SmallConfig());
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(model->description().has_attention_pooling);
  auto file = SafetensorsFile::Open(dir_ + "/model/model.safetensors");
  ASSERT_TRUE(file.ok());
  const TensorView query = *(*file)->Get("pooler.query");
  std::vector<float> q(32);
  std::memcpy(q.data(), query.data, 32 * sizeof(float));
  const std::vector<int32_t> ids = Tokens(11, 4);
  EmbedOptions options;
  options.normalize = false;
  options.pooling = Pooling::kNone;
  const Embeddings tokens = Alone(*model, ids, options);
  std::vector<double> scores(11);
  for (int r = 0; r < 11; ++r) {
    for (int c = 0; c < 32; ++c) scores[r] += q[c] * tokens.Row(r)[c];
    scores[r] /= std::sqrt(32.0);
  }
  const double top = *std::max_element(scores.begin(), scores.end());
  double total = 0;
  for (double& s : scores) total += (s = std::exp(s - top));
  std::vector<float> want(32, 0.0f);
  for (int r = 0; r < 11; ++r) {
    for (int c = 0; c < 32; ++c)
      want[c] += scores[r] / total * tokens.Row(r)[c];
  }
  options.pooling = Pooling::kAttention;
  EXPECT_LE(RelativeError(Alone(*model, ids, options).Row(0), want), 1e-5);
}

TEST_F(ModelTest, NormalizeGivesUnitVectorsInTheSameDirection) {
  ModelConfig config = SmallConfig();
  config.normalize = true;  // the model's default; a request may turn it off
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(30, 5);
  const Embeddings unit = EmbedOrDie(*model, ids, {0, 10, 30});
  EmbedOptions raw;
  raw.normalize = false;
  const Embeddings plain = EmbedOrDie(*model, ids, {0, 10, 30}, raw);
  for (int64_t s = 0; s < 2; ++s) {
    double norm = 0, plain_norm = 0;
    for (int c = 0; c < 32; ++c) {
      norm += unit.Row(s)[c] * unit.Row(s)[c];
      plain_norm += plain.Row(s)[c] * plain.Row(s)[c];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
    for (int c = 0; c < 32; ++c) {
      EXPECT_NEAR(unit.Row(s)[c], plain.Row(s)[c] / std::sqrt(plain_norm),
                  1e-6);
    }
  }
}

TEST_F(ModelTest, AttentionPoolingNeedsThePoolerQuery) {
  RandomModelOptions random;
  random.write_pooler_query = false;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/bare", random).ok());
  auto model = Model::Load(dir_ + "/bare");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->description().has_attention_pooling);
  EmbedOptions options;
  options.pooling = Pooling::kAttention;
  auto out = (*model)->Embed(Tokens(3, 0), {0, 3}, options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("pooler.query"));
}

// One pass gives both the pooled rows (normalised as asked) and the raw
// token vectors the service pools spans from.
TEST_F(ModelTest, TokenVectorsComeWithThePooledRowsOfTheSamePass) {
  const auto model = Make(SmallConfig());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(30, 6);
  EmbedOptions options;
  options.pooling = Pooling::kNone;
  options.normalize = false;
  const Embeddings tokens = EmbedOrDie(*model, ids, {0, 10, 30}, options);
  options.pooling = Pooling::kMean;
  options.normalize = true;
  const Embeddings pooled = EmbedOrDie(*model, ids, {0, 10, 30}, options);
  options.include_token_vectors = true;
  const Embeddings both = EmbedOrDie(*model, ids, {0, 10, 30}, options);
  EXPECT_EQ(both.values, pooled.values);
  EXPECT_EQ(both.row_offsets, pooled.row_offsets);
  EXPECT_EQ(both.token_row_offsets, tokens.row_offsets);
  EXPECT_EQ(both.token_vectors, tokens.values);
  EXPECT_TRUE(pooled.token_vectors.empty());
  EXPECT_TRUE(pooled.token_row_offsets.empty());
}

// bfloat16 vectors (a bfloat16 model's output) pool to float32, averaged
// in float32 over blocks of rows: as the float64 mean of the same values,
// for sequences shorter and longer than a block, and any pooling.
TEST(PoolingTest, BFloat16RowsPoolInFloat32) {
  internal::PackedVectors vectors;
  vectors.values = at::randn({5000 + 3 + 1, 8}).to(at::kBFloat16);
  vectors.offsets = {0, 5000, 5003, 5004};
  const at::Tensor exact = vectors.values.to(at::kDouble);
  const at::Tensor query = at::randn({8});
  for (const Pooling pooling :
       {Pooling::kMean, Pooling::kCls, Pooling::kAttention, Pooling::kNone}) {
    const internal::PackedVectors pooled =
        internal::Pool(vectors, pooling, query);
    ASSERT_EQ(pooled.values.scalar_type(), at::kFloat) << NameOf(pooling);
    if (pooling != Pooling::kMean) continue;
    for (int s = 0; s < 3; ++s) {
      const int64_t begin = vectors.offsets[s];
      const at::Tensor want =
          exact.narrow(0, begin, vectors.offsets[s + 1] - begin).mean(0);
      EXPECT_LE(
          (pooled.values[s].to(at::kDouble) - want).abs().max().item<double>(),
          1e-6)
          << "sequence " << s;
    }
  }
}

}  // namespace
}  // namespace favor::model
