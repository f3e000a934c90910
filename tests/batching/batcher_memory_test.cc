// The Batcher under a MemoryBudget (batcher.h, "Memory"), with the fake
// clock and runner of batcher_fixture.h: a batch fits and reserves its
// estimate, waits while the budget is held, is refused when it could never
// fit, and gives its reservation back when it is done, failed or dropped;
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

TEST_F(BatcherMemoryTest, ABatchDroppedBeforeItRunsGivesItsReservationBack) {
  Start(MemoryOptions());
  HoldRunning(1, 100);
  // Formed while 1 runs (reserving 400), then expires before a worker
  // takes it.
  ASSERT_OK(AddBytes(2, 300, clock_.Now() + 2 * kDelay));
  clock_.Advance(kDelay);
  WaitIdle();
  EXPECT_EQ(budget_->reserved_bytes(), 200 + 400);
  clock_.Advance(kDelay);
  Release();
  ASSERT_TRUE(log_.WaitForTotal(2));
  WaitIdle();
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(budget_->reserved_bytes(), 0);
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
