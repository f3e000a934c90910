// ChunkGather on its own: windows pooled token-weighted into one input's
// answer, the first failure winning, and windows never enqueued.
#include "server/service/chunk_gather.h"

#include <memory>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/model_runner.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;

class UnusedRunner final : public batching::ModelRunner {
 public:
  absl::Status RunBatch(int, batching::Batch*) override {
    return absl::InternalError("unused");
  }
};

EmbedWork Pooled(std::vector<float> pooled, absl::Duration queue) {
  EmbedWork work;
  work.pooled = std::move(pooled);
  work.queue_time = queue;
  return work;
}

class ChunkGatherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    batcher_ =
        *batching::Batcher::Create(batching::Batcher::Options(), &runner_);
    response_.add_embeddings();
    gather_ = std::make_shared<EmbedGather>(
        [this](absl::Status status) {
          EXPECT_FALSE(answer_.has_value()) << "answered twice";
          answer_ = status;
        },
        flag_,
        batcher_.get(), &response_, 1, ResolvedEmbedOptions(), 2);
  }

  UnusedRunner runner_;
  std::unique_ptr<batching::Batcher> batcher_;
  std::shared_ptr<batching::CancellationFlag> flag_ =
      std::make_shared<batching::CancellationFlag>();
  v1::EmbedResponse response_;
  std::shared_ptr<EmbedGather> gather_;
  std::optional<absl::Status> answer_;
};

TEST_F(ChunkGatherTest, WindowsArePooledByTheirTokenCounts) {
  ChunkGather chunks(gather_, 0, {4, 2});
  chunks.WindowDone(1, Pooled({4, 8}, absl::Milliseconds(7)), absl::OkStatus());
  EXPECT_FALSE(answer_.has_value());
  chunks.WindowDone(0, Pooled({1, 2}, absl::Milliseconds(3)), absl::OkStatus());
  ASSERT_TRUE(answer_.has_value());
  EXPECT_TRUE(answer_->ok());
  // (4 × (1, 2) + 2 × (4, 8)) / 6
  EXPECT_THAT(response_.embeddings(0).values(), ElementsAre(2, 4));
  EXPECT_EQ(response_.timing().queue_time_micros(), 7000);
}

TEST_F(ChunkGatherTest, MaxPoolingTakesTheWindowsMaximum) {
  ChunkGather chunks(gather_, 0, {4, 2, 3}, model::Pooling::kMax);
  chunks.WindowDone(2, Pooled({-5, -1}, absl::Milliseconds(1)),
                    absl::OkStatus());
  chunks.WindowDone(0, Pooled({-2, -7}, absl::Milliseconds(1)),
                    absl::OkStatus());
  chunks.WindowDone(1, Pooled({-3, -4}, absl::Milliseconds(1)),
                    absl::OkStatus());
  ASSERT_TRUE(answer_.has_value() && answer_->ok());
  EXPECT_THAT(response_.embeddings(0).values(), ElementsAre(-2, -1));
}

TEST_F(ChunkGatherTest, LastTokenPoolingTakesTheLastWindows) {
  ChunkGather chunks(gather_, 0, {4, 2, 3}, model::Pooling::kLastToken);
  chunks.WindowDone(2, Pooled({5, 6}, absl::Milliseconds(1)), absl::OkStatus());
  chunks.WindowDone(0, Pooled({1, 2}, absl::Milliseconds(1)), absl::OkStatus());
  chunks.WindowDone(1, Pooled({3, 4}, absl::Milliseconds(1)), absl::OkStatus());
  ASSERT_TRUE(answer_.has_value() && answer_->ok());
  EXPECT_THAT(response_.embeddings(0).values(), ElementsAre(5, 6));
}

TEST_F(ChunkGatherTest, OneFailedWindowFailsTheInput) {
  ChunkGather chunks(gather_, 0, {4, 4, 4});
  chunks.WindowDone(0, Pooled({1, 2}, absl::ZeroDuration()), absl::OkStatus());
  EXPECT_FALSE(flag_->cancelled());
  chunks.WindowDone(1, EmbedWork(), absl::ResourceExhaustedError("full"));
  EXPECT_FALSE(answer_.has_value());
  // The call's queued work is dropped at once, not computed for nothing.
  EXPECT_TRUE(flag_->cancelled());
  chunks.Release(1);  // the third was never enqueued
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(response_.embeddings(0).values_size(), 0);
}

// A window's failure answers the call even when the work it cancels (another
// input's, queued) is answered CANCELLED before the window's input is
// complete: the failure that cancelled it wins, not the cancellation.
TEST_F(ChunkGatherTest, TheFailedWindowNotTheWorkItCancelledAnswersTheCall) {
  v1::EmbedResponse response;
  response.add_embeddings();
  response.add_embeddings();
  std::optional<absl::Status> answer;
  auto gather = std::make_shared<EmbedGather>(
      [&](absl::Status status) {
        EXPECT_FALSE(answer.has_value()) << "answered twice";
        answer = status;
      },
      flag_, batcher_.get(), &response, 2, ResolvedEmbedOptions(), 2);
  ChunkGather chunks(gather, 0, {4, 4});
  chunks.WindowDone(0, EmbedWork(),
                    absl::UnavailableError("model 'm' is shutting down"));
  EXPECT_TRUE(flag_->cancelled());
  // Input 1, queued, is dropped for the cancellation.
  gather->InputDone(1, EmbedWork(),
                    absl::CancelledError("request cancelled while queued"));
  EXPECT_FALSE(answer.has_value());
  chunks.Release(1);  // window 1 was never enqueued
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code(), absl::StatusCode::kUnavailable) << *answer;
}

// The last window refused by a full queue, then no window released.
TEST_F(ChunkGatherTest, ReleasingNoneAfterTheLastWindowDoesNotAnswerAgain) {
  ChunkGather chunks(gather_, 0, {4, 4});
  chunks.WindowDone(0, Pooled({1, 2}, absl::ZeroDuration()), absl::OkStatus());
  chunks.WindowDone(1, EmbedWork(), absl::ResourceExhaustedError("full"));
  ASSERT_TRUE(answer_.has_value());
  chunks.Release(0);
  EXPECT_EQ(answer_->code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace favor::service
