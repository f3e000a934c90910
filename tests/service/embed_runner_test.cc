// EmbedRunner against FakeModel (tests/service/test_server.h), whose pooled
// row of a sequence is (sum of ids, length, first id, 1) and whose token
// rows are (id, position, 0, 0): the encoder runs once per pooling in a
// batch, whatever each request wants of its token vectors, and every
// request gets exactly what it asked for.
#include "server/service/embed_runner.h"

#include <memory>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/batch.h"
#include "server/batching/clock.h"
#include "server/batching/job.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

EmbedWork* Add(batching::Batch& batch, std::vector<int32_t> ids,
               model::Pooling pooling = model::Pooling::kMean) {
  auto work = std::make_shared<EmbedWork>();
  work->token_ids = std::move(ids);
  work->pooling = pooling;
  auto request =
      std::make_unique<batching::Job<EmbedWork>>(work, [](absl::Status) {});
  request->num_tokens = static_cast<int64_t>(work->token_ids.size());
  batch.num_tokens += request->num_tokens;
  batch.requests.push_back(std::move(request));
  return work.get();
}

class EmbedRunnerTest : public ::testing::Test {
 protected:
  testing::FakeModel model_{"fake"};
  EmbedRunner runner_{&model_, batching::RealClock::Get()};
};

TEST_F(EmbedRunnerTest, PooledAndTokenVectorsOfOneRequestAreOnePass) {
  batching::Batch batch;
  EmbedWork* work = Add(batch, {7, 8, 9});
  work->include_token_embeddings = true;
  work->spans = {{0, 2}};
  ASSERT_TRUE(runner_.RunBatch(0, &batch).ok());
  EXPECT_EQ(model_.calls(), 1);
  EXPECT_THAT(work->pooled, ElementsAre(24, 3, 7, 1));
  EXPECT_EQ(work->num_token_rows, 3);
  EXPECT_THAT(work->token_rows,
              ElementsAre(7, 0, 0, 0, 8, 1, 0, 0, 9, 2, 0, 0));
  EXPECT_THAT(work->span_means, ElementsAre(7.5, 0.5, 0, 0));
}

TEST_F(EmbedRunnerTest, RequestsWantingDifferentVectorsShareOnePass) {
  batching::Batch batch;
  EmbedWork* pooled_only = Add(batch, {1, 2});
  EmbedWork* with_tokens = Add(batch, {3});
  with_tokens->include_token_embeddings = true;
  EmbedWork* with_spans = Add(batch, {4, 5, 6});
  with_spans->spans = {{1, 3}};
  ASSERT_TRUE(runner_.RunBatch(0, &batch).ok());
  EXPECT_EQ(model_.calls(), 1);
  EXPECT_EQ(model_.sequences(), 3);

  EXPECT_THAT(pooled_only->pooled, ElementsAre(3, 2, 1, 1));
  EXPECT_THAT(pooled_only->token_rows, IsEmpty());
  EXPECT_EQ(pooled_only->num_token_rows, 0);
  EXPECT_THAT(pooled_only->span_means, IsEmpty());

  EXPECT_THAT(with_tokens->pooled, ElementsAre(3, 1, 3, 1));
  EXPECT_THAT(with_tokens->token_rows, ElementsAre(3, 0, 0, 0));
  EXPECT_THAT(with_tokens->span_means, IsEmpty());

  EXPECT_THAT(with_spans->pooled, ElementsAre(15, 3, 4, 1));
  EXPECT_THAT(with_spans->token_rows, IsEmpty());
  EXPECT_THAT(with_spans->span_means, ElementsAre(5.5, 1.5, 0, 0));
}

TEST_F(EmbedRunnerTest, EachPoolingIsOnePass) {
  batching::Batch batch;
  EmbedWork* mean = Add(batch, {1, 2});
  EmbedWork* none = Add(batch, {3, 4}, model::Pooling::kNone);
  none->include_token_embeddings = true;
  EmbedWork* mean_with_tokens = Add(batch, {5});
  mean_with_tokens->include_token_embeddings = true;
  ASSERT_TRUE(runner_.RunBatch(0, &batch).ok());
  EXPECT_EQ(model_.calls(), 2);
  EXPECT_THAT(mean->pooled, ElementsAre(3, 2, 1, 1));
  EXPECT_THAT(none->pooled, IsEmpty());
  EXPECT_THAT(none->token_rows, ElementsAre(3, 0, 0, 0, 4, 1, 0, 0));
  EXPECT_THAT(mean_with_tokens->token_rows, ElementsAre(5, 0, 0, 0));
}

}  // namespace
}  // namespace favor::service
