// The Batcher under a MemoryBudget (batcher.h, "Memory"), with the fake
// clock and runner of batcher_fixture.h: a batch fits and reserves its
// estimate, waits while the budget is held, is refused when it could never
// fit, and gives its reservation back when it is done or failed;
// the leader is never overtaken, and batchers sharing the budget wake each
// other.
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/memory_budget.h"
#include "server/batching/retry_hint.h"
#include "tests/batching/batcher_fixture.h"

namespace favor::batching {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kBudgetBytes = 1000;
constexpr int64_t kOverheadBytes = 100;

class BatcherMemoryTest : public BatcherTest {
 protected:
  void SetUp() override {
    MemoryBudget::Options budget;
    budget.max_bytes = kBudgetBytes;
    budget_ = *MemoryBudget::Create(std::move(budget));
  }

  Batcher::Options MemoryOptions() {
    Batcher::Options options = TestOptions();
    options.memory_budget = budget_.get();
    options.batch_memory_overhead_bytes = kOverheadBytes;
    // One worker runs the held batch while the other waits for one, so that
    // the budget, not a busy worker, is what holds the queue back.
    options.num_workers = 2;
    return options;
  }

  absl::Status AddBytes(uint64_t id, int64_t memory_bytes,
                        absl::Time deadline = kNever,
                        Batcher* batcher = nullptr) {
    std::unique_ptr<Request> request =
        log_.MakeRequest(id, 10, Priority::kNormal, deadline);
    request->memory_bytes = memory_bytes;
    return (batcher != nullptr ? batcher : batcher_.get())
        ->Enqueue(std::move(request));
  }

  // Request `id` of `memory_bytes`, running and held in the runner.
  void HoldRunning(uint64_t id, int64_t memory_bytes) {
    runner_.Block();
    ASSERT_OK(AddBytes(id, memory_bytes));
    clock_.Advance(kDelay);
    ASSERT_TRUE(runner_.WaitForRunning(1));
    held_ = 1;
  }

  std::unique_ptr<MemoryBudget> budget_;  // Outlives batcher_ (TearDown).
};

TEST_F(BatcherMemoryTest, ABatchThatFitsRunsAndHoldsItsEstimateUntilDone) {
  Start(MemoryOptions());
  HoldRunning(1, 400);
  EXPECT_EQ(budget_->reserved_bytes(), 400 + kOverheadBytes);
  Release();
  ASSERT_TRUE(log_.WaitFor(1));
  WaitIdle();
  EXPECT_TRUE(log_.StatusOf(1).ok());
  EXPECT_EQ(budget_->reserved_bytes(), 0);
}

TEST_F(BatcherMemoryTest, WaitsWhileTheBudgetIsHeldAndNothingOvertakesIt) {
  Start(MemoryOptions());
  HoldRunning(1, 600);          // 700 held of 1000
  ASSERT_OK(AddBytes(2, 500));  // needs 600: waits
  ASSERT_OK(AddBytes(3, 50));   // would fit, but must not overtake 2
  clock_.Advance(kDelay);
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);
  EXPECT_EQ(budget_->reserved_bytes(), 700);
  Release();
  ASSERT_TRUE(log_.WaitForTotal(3));
  WaitIdle();
  // 2 leads the next batch and 3 fits beside it (100 + 500 + 50 of 1000).
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1), ElementsAre(2, 3)));
  EXPECT_EQ(budget_->reserved_bytes(), 0);
}

TEST_F(BatcherMemoryTest, FillsTheBatchFirstFitWithinTheRoomLeft) {
  Start(MemoryOptions());
  HoldRunning(1, 100);  // 200 held: 800 left
  ASSERT_OK(AddBytes(2, 300));
  ASSERT_OK(AddBytes(3, 500));  // 100 + 300 + 500 > 800: skipped
  ASSERT_OK(AddBytes(4, 300));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForRunning(2));  // {2, 4}, on the other worker
  held_ = 2;
  WaitIdle();
  EXPECT_EQ(budget_->reserved_bytes(), 200 + 100 + 300 + 300);
  Release();
  ASSERT_TRUE(log_.WaitForTotal(4));
  clock_.Advance(kDelay);
  WaitIdle();
  EXPECT_THAT(BatchIds(),
              ElementsAre(ElementsAre(1), ElementsAre(2, 4), ElementsAre(3)));
}

TEST_F(BatcherMemoryTest, ARequestThatCanNeverFitIsRefusedAtOnce) {
  Start(MemoryOptions());
  const absl::Status status = AddBytes(1, 901);  // + 100 overhead > 1000
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("needs an estimated 1001 bytes"));
  EXPECT_THAT(status.message(),
              HasSubstr("memory budget (max_memory_bytes=1000)"));
  EXPECT_EQ(RetryAfter(status), std::nullopt);  // retrying cannot help
  // favor::Client recognises the refusal by this ending and does not retry.
  EXPECT_THAT(std::string(status.message()),
              ::testing::EndsWith("it can never run here"));
  EXPECT_EQ(log_.StatusOf(1), status);
  ASSERT_OK(AddBytes(2, 900));  // exactly the capacity: runs
  clock_.Advance(kDelay);
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_TRUE(log_.StatusOf(2).ok());
}

// A request that could never run is told so even when the queue is full:
// a retry hint would only bring it back to the same refusal.
TEST_F(BatcherMemoryTest, NeverFittingIsToldBeforeAFullQueue) {
  Batcher::Options options = MemoryOptions();
  options.max_queue_requests = 1;
  Start(options);
  HoldRunning(1, 100);
  ASSERT_OK(AddBytes(2, 100));  // queued: the queue is full
  const absl::Status status = AddBytes(3, 901);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfter(status), std::nullopt) << status;
  EXPECT_THAT(std::string(status.message()),
              ::testing::EndsWith("it can never run here"));
  Release();
}

TEST_F(BatcherMemoryTest, AFailedBatchGivesItsReservationBack) {
  Start(MemoryOptions());
  runner_.set_status(absl::InternalError("device lost"));
  ASSERT_OK(AddBytes(1, 800));
  clock_.Advance(kDelay);
  ASSERT_TRUE(log_.WaitFor(1));
  WaitIdle();
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(budget_->reserved_bytes(), 0);
  runner_.set_status(absl::OkStatus());
  ASSERT_OK(AddBytes(2, 800));  // the whole budget is back
  clock_.Advance(kDelay);
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_TRUE(log_.StatusOf(2).ok());
}

TEST_F(BatcherMemoryTest, AWaitingRequestExpiresWithinItsDeadline) {
  Start(MemoryOptions());
  HoldRunning(1, 600);
  ASSERT_OK(AddBytes(2, 500, clock_.Now() + 3 * kDelay));
  clock_.Advance(kDelay);
  WaitIdle();
  clock_.Advance(2 * kDelay);  // the budget never frees in time
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(runner_.num_runs(), 1);
}

TEST_F(BatcherMemoryTest, BatchersSharingTheBudgetWakeEachOther) {
  Start(MemoryOptions());
  testing::FakeModelRunner other_runner;
  Batcher::Options other_options = MemoryOptions();
  other_options.model_name = "other";
  auto other = *Batcher::Create(other_options, &other_runner, &clock_);
  HoldRunning(1, 600);
  ASSERT_OK(AddBytes(2, 500, kNever, other.get()));
  clock_.Advance(kDelay);
  ASSERT_TRUE(other->WaitUntilIdleForTesting());
  EXPECT_EQ(other->NumQueuedRequests(), 1);  // waits for this one's release
  Release();
  ASSERT_TRUE(log_.WaitForTotal(2));
  EXPECT_TRUE(log_.StatusOf(2).ok());
  EXPECT_EQ(other_runner.num_runs(), 1);
  other.reset();
}

// When a reload's weights take the room a queued leader was admitted with,
// the leader is refused as soon as the weights come, and the requests
// behind it run. Waiting would be for a release that can never make room,
// holding up every request behind it for good (with a new revision of the
// same model, a deadlock: the old revision is freed only once its calls
// are answered).
TEST_F(BatcherMemoryTest, ALeaderThatAReloadLeftNoRoomForIsRefused) {
  Start(MemoryOptions());
  HoldRunning(1, 600);          // 700 held of 1000
  ASSERT_OK(AddBytes(2, 700));  // needs 800: waits for the release
  ASSERT_OK(AddBytes(3, 50));
  clock_.Advance(kDelay);
  WaitIdle();
  ASSERT_OK(budget_->AddWeights(300));  // 700 for batches from now on
  ASSERT_TRUE(log_.WaitFor(2));  // at once, while 1 still runs
  const absl::Status refused = log_.StatusOf(2);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              HasSubstr("leaves 700 bytes for batches beside 300 resident"));
  EXPECT_EQ(RetryAfter(refused), std::nullopt);  // no weights are retiring
  EXPECT_THAT(std::string(refused.message()),
              ::testing::EndsWith("it can never run here"));
  Release();
  ASSERT_TRUE(log_.WaitFor(3));
  EXPECT_TRUE(log_.StatusOf(3).ok());
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1), ElementsAre(3)));
}

// The same while the revision being replaced still holds its weights (the
// reload's overlap): room comes back once it is freed, so the refusal
// carries a retry hint, at Enqueue as for a queued leader; it did not wait
// in the queue for that room, nor was it told it could never run.
TEST_F(BatcherMemoryTest, ARequestThatNeedsRetiringWeightsIsToldToRetry) {
  MemoryBudget::Options budget_options;
  budget_options.max_bytes = kBudgetBytes;
  budget_options.resident_bytes = 200;  // the revision being replaced
  budget_ = *MemoryBudget::Create(std::move(budget_options));
  Start(MemoryOptions());
  HoldRunning(1, 400);          // 500 held of 800
  ASSERT_OK(AddBytes(2, 600));  // needs 700: waits for the release
  clock_.Advance(kDelay);
  WaitIdle();
  budget_->RetireWeights(200);
  ASSERT_OK(budget_->AddWeights(200));  // 600 for batches until it is freed
  ASSERT_TRUE(log_.WaitFor(2));
  const absl::Status queued = log_.StatusOf(2);
  EXPECT_EQ(queued.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(queued.message(),
              HasSubstr("of which 200 are weights of replaced revisions"));
  EXPECT_NE(RetryAfter(queued), std::nullopt);
  const absl::Status arriving = AddBytes(3, 600);
  EXPECT_EQ(arriving.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(RetryAfter(arriving), std::nullopt);
  // Freed: the retry fits.
  budget_->FreeRetiredWeights(200);
  Release();
  ASSERT_OK(AddBytes(4, 600));
  clock_.Advance(kDelay);
  ASSERT_TRUE(log_.WaitFor(4));
  EXPECT_TRUE(log_.StatusOf(4).ok());
}

TEST_F(BatcherMemoryTest, ShutdownAnswersTheRequestsWaitingForMemory) {
  Start(MemoryOptions());
  HoldRunning(1, 600);
  ASSERT_OK(AddBytes(2, 500));
  clock_.Advance(kDelay);
  WaitIdle();
  // No drain time: what waits for memory is answered at once, while the
  // running batch goes on.
  std::thread shutdown([this] { batcher_->Shutdown(absl::ZeroDuration()); });
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kUnavailable);
  Release();
  shutdown.join();
  EXPECT_TRUE(log_.StatusOf(1).ok());
  EXPECT_EQ(budget_->reserved_bytes(), 0);
}

}  // namespace
}  // namespace favor::batching
