// EmbedGather on its own: answers gathered from any order, the first
// failure winning, and inputs that were never enqueued.
#include "server/service/embed_gather.h"

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/model_runner.h"

namespace favor::service {
namespace {

// Never reached: the tests only wake the batcher, they enqueue nothing.
class UnusedRunner final : public batching::ModelRunner {
 public:
  absl::Status RunBatch(int, batching::Batch*) override {
    return absl::InternalError("unused");
  }
};

EmbedWork WorkOf(std::vector<float> pooled, absl::Duration queue,
                 absl::Duration compute) {
  EmbedWork work;
  work.pooled = std::move(pooled);
  work.queue_time = queue;
  work.compute_time = compute;
  return work;
}

class EmbedGatherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto batcher =
        batching::Batcher::Create(batching::Batcher::Options(), &runner_);
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
  }

  // A gather of `num_inputs` inputs of dimension 2 into response_.
  std::unique_ptr<EmbedGather> Gather(
      int num_inputs, ResolvedEmbedOptions options = ResolvedEmbedOptions()) {
    for (int i = 0; i < num_inputs; ++i) response_.add_embeddings();
    return std::make_unique<EmbedGather>(
        [this](absl::Status status) {
          EXPECT_FALSE(answer_.has_value()) << "answered twice";
          answer_ = status;
        },
        flag_, batcher_.get(), &response_, num_inputs, options, 2);
  }

  UnusedRunner runner_;
  std::unique_ptr<batching::Batcher> batcher_;
  std::shared_ptr<batching::CancellationFlag> flag_ =
      std::make_shared<batching::CancellationFlag>();
  v1::EmbedResponse response_;
  std::optional<absl::Status> answer_;
};

TEST_F(EmbedGatherTest, AnswersOnceEveryInputIsIn) {
  std::unique_ptr<EmbedGather> gather = Gather(2);
  gather->InputDone(1, WorkOf({3, 4}, absl::Milliseconds(5), absl::Seconds(1)),
                    absl::OkStatus());
  EXPECT_FALSE(answer_.has_value());
  gather->InputDone(
      0, WorkOf({1, 2}, absl::Milliseconds(2), absl::Milliseconds(500)),
      absl::OkStatus());
  ASSERT_TRUE(answer_.has_value());
  EXPECT_TRUE(answer_->ok());
  EXPECT_FALSE(flag_->cancelled());
  EXPECT_EQ(response_.embeddings(0).values(1), 2);
  EXPECT_EQ(response_.embeddings(1).values(0), 3);
  // The call's timing is its slowest input's, part by part.
  EXPECT_EQ(response_.timing().queue_time_micros(), 5000);
  EXPECT_EQ(response_.timing().compute_time_micros(), 1000000);
}

TEST_F(EmbedGatherTest, TheFirstFailureWinsAndCancelsTheOthers) {
  std::unique_ptr<EmbedGather> gather = Gather(3);
  gather->InputDone(0,
                    WorkOf({1, 2}, absl::ZeroDuration(), absl::ZeroDuration()),
                    absl::OkStatus());
  gather->InputDone(1, EmbedWork(), absl::InternalError("device lost"));
  EXPECT_TRUE(flag_->cancelled());
  EXPECT_FALSE(answer_.has_value());
  gather->InputDone(2,
                    WorkOf({5, 6}, absl::ZeroDuration(), absl::ZeroDuration()),
                    absl::CancelledError("dropped"));
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(*answer_, absl::InternalError("device lost"));
  EXPECT_EQ(response_.embeddings(2).values_size(), 0);
}

TEST_F(EmbedGatherTest, ReleaseAccountsForInputsNeverEnqueued) {
  std::unique_ptr<EmbedGather> gather = Gather(3);
  // Input 0 was refused by the batcher; 1 and 2 were never enqueued.
  gather->InputDone(0, EmbedWork(), absl::ResourceExhaustedError("full"));
  EXPECT_FALSE(answer_.has_value());
  gather->Release(2);
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->code(), absl::StatusCode::kResourceExhausted);
}

// The service's path when a call's last input is refused by a full queue:
// the batcher completes it (InputDone), then the service releases the
// inputs after it, none. The call is answered once: answering twice would
// free a stream message twice and abort favor-server.
TEST_F(EmbedGatherTest, ReleasingNoneAfterTheLastInputDoesNotAnswerAgain) {
  std::unique_ptr<EmbedGather> gather = Gather(1);
  gather->InputDone(0, EmbedWork(), absl::ResourceExhaustedError("full"));
  ASSERT_TRUE(answer_.has_value());
  gather->Release(0);  // Gather's callback fails the test on a second answer
  EXPECT_EQ(answer_->code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(EmbedGatherTest, WritesTokenEmbeddingsAsATensor) {
  ResolvedEmbedOptions options;
  options.include_token_embeddings = true;
  options.token_embeddings_dtype = v1::DTYPE_FLOAT32;
  std::unique_ptr<EmbedGather> gather = Gather(1, options);
  EmbedWork work = WorkOf({}, absl::ZeroDuration(), absl::ZeroDuration());
  work.token_rows = {1, 2, 3, 4, 5, 6};
  work.num_token_rows = 3;
  gather->InputDone(0, work, absl::OkStatus());
  const v1::Tensor& tensor = response_.embeddings(0).token_embeddings();
  ASSERT_EQ(tensor.shape_size(), 2);
  EXPECT_EQ(tensor.shape(0), 3);
  EXPECT_EQ(tensor.shape(1), 2);
  EXPECT_EQ(tensor.dtype(), v1::DTYPE_FLOAT32);
  ASSERT_EQ(tensor.data().size(), 6 * sizeof(float));
  float last = 0;
  std::memcpy(&last, tensor.data().data() + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(last, 6);
}

}  // namespace
}  // namespace favor::service
