// Which requests the Batcher runs together and which it drops, through a
// running Batcher (fixture: batcher_fixture.h): length-aware packing,
// deadlines, cancellation, priority and starvation. The packing policy on
// its own: batch_packing_test.cc.
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/request.h"
#include "tests/batching/batcher_fixture.h"

namespace favor::batching {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// Length-aware packing.

TEST_F(BatcherTest, PacksShorterRequestsAroundALongOne) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, 60));
  ASSERT_OK(Add(2, 50));  // Does not fit with request 1.
  ASSERT_OK(Add(3, 30));  // These two fill the budget instead of waiting.
  ASSERT_OK(Add(4, 10));
  WaitIdle();
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(2));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(1, 3, 4)));
  EXPECT_EQ(runner_.runs()[1].num_tokens, kBatchTokens);
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(3));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 3, 4), ElementsAre(2)));
}

TEST_F(BatcherTest, SkippedLongRequestLeadsTheNextBatch) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, 30));
  ASSERT_OK(Add(2, 80));  // Skipped by the first batch...
  ASSERT_OK(Add(3, 30));
  ASSERT_OK(Add(4, 30));
  ASSERT_OK(Add(5, 30));  // ...but not overtaken by this later small one.
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 3, 4), ElementsAre(2)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(1, 3, 4),
                                               ElementsAre(2), ElementsAre(5)));
}

TEST_F(BatcherTest, OversizeRequestRunsAlone) {
  Start();
  ASSERT_OK(Add(1, 250));  // More than a full batch: due at once.
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1)));
  EXPECT_EQ(runner_.runs()[0].num_tokens, 250);
  EXPECT_TRUE(log_.StatusOf(1).ok());

  HoldWorker();
  ASSERT_OK(Add(2, 250));
  ASSERT_OK(Add(3, 10));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(1), ElementsAre(2)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
}

// ---------------------------------------------------------------------------
// Deadlines.

TEST_F(BatcherTest, RequestExpiringInTheQueueIsAnsweredAtItsDeadline) {
  Start();
  ASSERT_OK(Add(1, 10, Priority::kNormal, start_ + absl::Milliseconds(5)));
  ASSERT_OK(Add(2, 10));
  // The former wakes at the deadline, before the batch is due.
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(5)));
  clock_.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);
  EXPECT_EQ(batcher_->NumQueuedTokens(), 10);
  clock_.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(2)));  // Never request 1.
}

// While the worker is busy: answered at its deadline, not when the worker
// frees, and never run.
TEST_F(BatcherTest, RequestExpiringWhileTheWorkerIsBusyIsNotRun) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, kBatchTokens, Priority::kNormal,
                start_ + absl::Milliseconds(5)));
  clock_.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
  Release();
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(kRunningId)));
  EXPECT_TRUE(log_.StatusOf(kRunningId).ok());
}

// ---------------------------------------------------------------------------
// Cancellation.

TEST_F(BatcherTest, CancelledRequestIsDroppedFromTheQueue) {
  Start();
  auto flag = std::make_shared<CancellationFlag>();
  ASSERT_OK(Add(1, 10, Priority::kNormal, kNever, flag));
  ASSERT_OK(Add(2, 15));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);
  flag->Cancel();
  batcher_->NotifyCancelled();
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kCancelled);
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);  // Its place is free at once.
  EXPECT_EQ(batcher_->NumQueuedTokens(), 15);
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(2)));
  EXPECT_EQ(log_.Count(1), 1);
}

TEST_F(BatcherTest, CancelledRequestIsDroppedWhenItsBatchFormsWithoutNotify) {
  Start();
  auto flag = std::make_shared<CancellationFlag>();
  ASSERT_OK(Add(1, 10, Priority::kNormal, kNever, flag));
  ASSERT_OK(Add(2, 10));
  WaitIdle();
  flag->Cancel();
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(1));
  ASSERT_TRUE(log_.WaitForTotal(2));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(2)));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kCancelled);
}

TEST_F(BatcherTest, ClosedStreamCancelsAllItsRequests) {
  Start();
  auto stream = std::make_shared<CancellationFlag>();
  ASSERT_OK(Add(1, 10, Priority::kNormal, kNever, stream));
  ASSERT_OK(Add(2, 10, Priority::kHigh, kNever, stream));
  ASSERT_OK(Add(3, 10));
  ASSERT_OK(Add(4, 10, Priority::kNormal, kNever, stream));
  stream->Cancel();
  batcher_->NotifyCancelled();
  ASSERT_TRUE(log_.WaitForTotal(3));
  for (uint64_t id : {1, 2, 4}) {
    EXPECT_EQ(log_.StatusOf(id).code(), absl::StatusCode::kCancelled) << id;
  }
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(3)));
}

// Cancelled without NotifyCancelled() while the worker is busy: dropped
// when the worker frees, before the batch it would have led is formed.
TEST_F(BatcherTest, CancelledRequestIsNotRunWhenTheWorkerFrees) {
  Start();
  auto flag = std::make_shared<CancellationFlag>();
  HoldWorker();
  ASSERT_OK(Add(1, kBatchTokens, Priority::kNormal, kNever, flag));
  flag->Cancel();
  Release();
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kCancelled);
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(kRunningId)));
}

// ---------------------------------------------------------------------------
// Priority and starvation.

TEST_F(BatcherTest, HighPriorityRequestsLeadFirst) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 1;
  Start(options);
  HoldWorker();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  ASSERT_OK(Add(2, 10, Priority::kNormal));
  ASSERT_OK(Add(3, 10, Priority::kHigh));
  ASSERT_OK(Add(4, 10, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(5));
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(3), ElementsAre(4),
                                               ElementsAre(1), ElementsAre(2)));
}

TEST_F(BatcherTest, HighPriorityRequestsFillFirst) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, 40, Priority::kNormal));
  ASSERT_OK(Add(2, 40, Priority::kHigh));
  ASSERT_OK(Add(3, 20, Priority::kNormal));
  ASSERT_OK(Add(4, 40, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(2));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(2, 4, 3)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(3));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(2, 4, 3), ElementsAre(1)));
}

TEST_F(BatcherTest, HighPriorityNeverStarvesNormal) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 1;
  options.max_consecutive_high_batches = 2;
  Start(options);
  HoldWorker();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  ASSERT_OK(Add(2, 10, Priority::kNormal));
  for (uint64_t id = 3; id <= 7; ++id) ASSERT_OK(Add(id, 10, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(8));
  // At most two high-led batches in a row while a normal request waits.
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(3), ElementsAre(4), ElementsAre(1),
                          ElementsAre(5), ElementsAre(6), ElementsAre(2),
                          ElementsAre(7)));
}

TEST_F(BatcherTest, AgeBoundLetsAnOldRequestLeadAheadOfPriority) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 1;
  options.max_request_age = absl::Milliseconds(100);
  options.max_consecutive_high_batches = 100;
  Start(options);
  HoldWorker();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  clock_.Advance(absl::Milliseconds(50));
  ASSERT_OK(Add(2, 10, Priority::kHigh));
  ASSERT_OK(Add(3, 10, Priority::kHigh));
  clock_.Advance(absl::Milliseconds(50));  // Request 1 reaches the bound.
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
}

TEST_F(BatcherTest, RequestsPastTheAgeBoundArePackedFirst) {
  Batcher::Options options = TestOptions();
  options.max_request_age = absl::Milliseconds(100);
  options.max_consecutive_high_batches = 100;
  Start(options);
  HoldWorker();
  ASSERT_OK(Add(1, 50, Priority::kNormal));
  ASSERT_OK(Add(2, 50, Priority::kNormal));
  clock_.Advance(absl::Milliseconds(150));
  ASSERT_OK(Add(3, 50, Priority::kHigh));
  ASSERT_OK(Add(4, 50, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 2), ElementsAre(3, 4)));
}

}  // namespace
}  // namespace favor::batching
