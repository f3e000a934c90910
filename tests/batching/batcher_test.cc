// Behaviour of the Batcher with a fake clock and a fake runner (fixture:
// batcher_fixture.h): options and admission, budgets and delays, queue
// limits, pipelining, runner results, observer hooks and shutdown. Packing,
// deadlines, cancellation and priority: batcher_scheduling_test.cc.
#include "server/batching/batcher.h"

#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/request.h"
#include "server/batching/retry_hint.h"
#include "tests/batching/batcher_fixture.h"

namespace favor::batching {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// Options and admission checks.

TEST_F(BatcherTest, CreateRejectsInvalidOptions) {
  struct Case {
    const char* field;
    void (*mutate)(Batcher::Options*);
  };
  const Case cases[] = {
      {"max_queue_requests",
       [](Batcher::Options* o) { o->max_queue_requests = 0; }},
      {"max_queue_tokens",
       [](Batcher::Options* o) { o->max_queue_tokens = 0; }},
      {"max_batch_tokens",
       [](Batcher::Options* o) { o->max_batch_tokens = 0; }},
      {"max_batch_requests",
       [](Batcher::Options* o) { o->max_batch_requests = -1; }},
      {"max_consecutive_high_batches",
       [](Batcher::Options* o) { o->max_consecutive_high_batches = 0; }},
      {"num_workers", [](Batcher::Options* o) { o->num_workers = 0; }},
      {"max_queue_delay",
       [](Batcher::Options* o) {
         o->max_queue_delay = absl::Milliseconds(-1);
       }},
      {"max_enqueue_group_wait",
       [](Batcher::Options* o) {
         o->max_enqueue_group_wait = absl::InfiniteDuration();
       }},
      {"max_request_age",
       [](Batcher::Options* o) { o->max_request_age = absl::ZeroDuration(); }},
  };
  for (const Case& c : cases) {
    Batcher::Options options = TestOptions();
    c.mutate(&options);
    absl::StatusOr<std::unique_ptr<Batcher>> batcher =
        Batcher::Create(options, &runner_, &clock_);
    EXPECT_EQ(batcher.status().code(), absl::StatusCode::kInvalidArgument)
        << c.field;
    EXPECT_THAT(batcher.status().message(), HasSubstr(c.field));
  }
  EXPECT_EQ(Batcher::Create(TestOptions(), nullptr, &clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BatcherTest, DefaultOptionsAreValid) {
  absl::StatusOr<std::unique_ptr<Batcher>> batcher =
      Batcher::Create(Batcher::Options(), &runner_);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
}

TEST_F(BatcherTest, RejectsRequestWithoutTokens) {
  Start();
  const absl::Status status = Add(1, 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("num_tokens"));
  // Answered through the callback too, before Enqueue returned.
  EXPECT_EQ(log_.Count(1), 1);
  EXPECT_EQ(log_.StatusOf(1), status);
}

TEST_F(BatcherTest, RejectsRequestLargerThanTheQueue) {
  Batcher::Options options = TestOptions();
  options.max_queue_tokens = 200;
  Start(options);
  const absl::Status status = Add(1, 201);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("max_queue_tokens=200"));
  EXPECT_EQ(log_.StatusOf(1), status);
}

TEST_F(BatcherTest, RejectsOversizeRequestUnlessRunAlone) {
  Batcher::Options options = TestOptions();
  options.run_oversize_alone = false;
  Start(options);
  const absl::Status status = Add(1, kBatchTokens + 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("max_batch_tokens=100"));
  EXPECT_EQ(log_.StatusOf(1), status);
  ASSERT_OK(Add(2, kBatchTokens));  // At the limit is fine.
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_TRUE(log_.StatusOf(2).ok());
}

TEST_F(BatcherTest, RejectsAlreadyExpiredOrCancelledRequest) {
  Start();
  EXPECT_EQ(Add(1, 10, Priority::kNormal, clock_.Now()).code(),
            absl::StatusCode::kDeadlineExceeded);
  auto flag = std::make_shared<CancellationFlag>();
  flag->Cancel();
  EXPECT_EQ(Add(2, 10, Priority::kNormal, kNever, flag).code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(batcher_->NumQueuedRequests(), 0);
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
}

// ---------------------------------------------------------------------------
// Budgets and delays.

TEST_F(BatcherTest, FormsBatchAtOnceWhenTokenBudgetIsReached) {
  Start();
  ASSERT_OK(Add(1, 60));
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  ASSERT_OK(Add(2, 40));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2)));
  EXPECT_EQ(runner_.runs()[0].num_tokens, 100);
  EXPECT_EQ(clock_.Now(), start_);  // No delay was needed.
  EXPECT_TRUE(log_.StatusOf(1).ok());
  EXPECT_TRUE(log_.StatusOf(2).ok());
}

TEST_F(BatcherTest, FormsBatchAtOnceWhenRequestLimitIsReached) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 3;
  Start(options);
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  ASSERT_OK(Add(3, 10));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2, 3)));
}

TEST_F(BatcherTest, NeverExceedsTheTokenBudget) {
  Start();
  ASSERT_OK(Add(1, 40));
  ASSERT_OK(Add(2, 40));
  ASSERT_OK(Add(3, 40));  // 120 queued: a full batch is due.
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2)));
  // The remainder is not full; it waits for the delay.
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(2));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2), ElementsAre(3)));
}

TEST_F(BatcherTest, NeverExceedsTheRequestLimit) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 2;
  Start(options);
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  ASSERT_OK(Add(3, 10));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(2));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2), ElementsAre(3)));
}

TEST_F(BatcherTest, WaitsForMaxQueueDelayBeforeFormingPartialBatch) {
  Start();
  ASSERT_OK(Add(1, 10));
  // The former has seen the request and sleeps until its delay elapses.
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + kDelay));
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  clock_.Advance(kDelay - absl::Microseconds(1));
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  EXPECT_EQ(log_.total(), 0);
  clock_.Advance(absl::Microseconds(1));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1)));
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_TRUE(log_.StatusOf(1).ok());
}

// By default (max_queue_delay zero) a worker with nothing to run takes what
// is queued at once, again and again: the clock never moves here.
TEST_F(BatcherTest, AnIdleWorkerRunsALoneRequestAtOnce) {
  Batcher::Options options = TestOptions();
  options.max_queue_delay = Batcher::Options().max_queue_delay;
  Start(options);
  for (int id = 1; id <= 3; ++id) {
    ASSERT_OK(Add(id, 10));
    ASSERT_TRUE(runner_.WaitForBatches(id));
    ASSERT_TRUE(log_.WaitFor(id));
    EXPECT_TRUE(log_.StatusOf(id).ok());
  }
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1), ElementsAre(2),
                                      ElementsAre(3)));
}

// A call's inputs, enqueued one by one inside an EnqueueGroup, run in one
// batch on an idle worker, not as many as were queued when it looked.
TEST_F(BatcherTest, AnIdleWorkerWaitsForTheRestOfAnEnqueueGroup) {
  Batcher::Options options = TestOptions();
  options.max_queue_delay = absl::ZeroDuration();
  Start(options);
  {
    const Batcher::EnqueueGroup group(batcher_.get());
    ASSERT_OK(Add(1, 10));
    WaitIdle();
    EXPECT_EQ(runner_.num_runs(), 0);
    ASSERT_OK(Add(2, 10));
    WaitIdle();
    EXPECT_EQ(runner_.num_runs(), 0);
  }
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2)));
}

// The wait is bounded (a group left open too long does not hold the queue),
// and a full batch never waits.
TEST_F(BatcherTest, AnEnqueueGroupHoldsBackOnlyPartialBatchesAndBriefly) {
  Batcher::Options options = TestOptions();
  options.max_queue_delay = absl::ZeroDuration();
  Start(options);
  const Batcher::EnqueueGroup group(batcher_.get());
  ASSERT_OK(Add(1, 10));
  const absl::Duration wait = options.max_enqueue_group_wait;
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + wait));
  clock_.Advance(wait);
  ASSERT_TRUE(runner_.WaitForBatches(1));
  ASSERT_OK(Add(2, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForBatches(2));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1), ElementsAre(2)));
}

// Everything that arrives while the worker runs joins its next batch, however
// long it has waited: no batch is formed before a worker can take it, so none
// is closed to the callers that arrive meanwhile. (A batch formed once 2 had
// waited kDelay held a third of 16 closed-loop callers, not half.)
TEST_F(BatcherTest, ArrivalsWhileTheWorkerRunsAllJoinItsNextBatch) {
  Batcher::Options options = TestOptions();
  options.max_queue_delay = absl::ZeroDuration();
  Start(options);
  runner_.Block();
  ASSERT_OK(Add(1, 10));
  ASSERT_TRUE(runner_.WaitForRunning(1));
  held_ = 1;
  ASSERT_OK(Add(2, 10));
  clock_.Advance(2 * kDelay);
  WaitIdle();
  ASSERT_OK(Add(3, 10));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(2));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1), ElementsAre(2, 3)));
}

TEST_F(BatcherTest, DelayCountsFromTheOldestRequest) {
  Start();
  ASSERT_OK(Add(1, 10));
  clock_.Advance(absl::Milliseconds(4));
  ASSERT_OK(Add(2, 10));
  WaitIdle();
  clock_.Advance(absl::Milliseconds(5));
  WaitIdle();
  EXPECT_EQ(runner_.num_runs(), 0);
  clock_.Advance(absl::Milliseconds(1));  // Request 1 has waited kDelay.
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2)));
}

// ---------------------------------------------------------------------------
// Queue limits.

TEST_F(BatcherTest, FullQueueOfRequestsRefusesAtOnceWithRetryHint) {
  Batcher::Options options = TestOptions();
  options.max_queue_requests = 2;
  Start(options);
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  const absl::Status status = Add(3, 10);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("max_queue_requests=2"));
  EXPECT_THAT(status.message(), HasSubstr("retry after"));
  // One batch (estimated at kDelay before any measurement) makes room.
  EXPECT_EQ(RetryAfter(status), kDelay);
  // Answered before Enqueue returned, and nothing waited.
  EXPECT_EQ(log_.Count(3), 1);
  EXPECT_EQ(log_.StatusOf(3), status);
  EXPECT_EQ(clock_.Now(), start_);
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);

  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  ASSERT_OK(Add(4, 10));  // Room again.
}

TEST_F(BatcherTest, FullQueueOfTokensRefusesAtOnceWithRetryHint) {
  Batcher::Options options = TestOptions();
  options.max_queue_tokens = 300;
  Start(options);
  HoldWorker();
  ASSERT_OK(Add(1, 100));
  ASSERT_OK(Add(2, 100));
  // 450 tokens would exceed the limit by 150: two batches must leave first.
  absl::Status status = Add(3, 250);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("max_queue_tokens=300"));
  EXPECT_EQ(RetryAfter(status), 2 * kDelay);
  EXPECT_EQ(log_.StatusOf(3), status);
  ASSERT_OK(Add(4, 100));  // Exactly at the limit is admitted.
  status = Add(5, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfter(status), kDelay);
  EXPECT_EQ(batcher_->NumQueuedTokens(), 300);
}

TEST_F(BatcherTest, RetryHintFollowsMeasuredComputeTime) {
  Batcher::Options options = TestOptions();
  options.max_queue_requests = 1;
  Start(options);
  absl::Duration compute = absl::Milliseconds(60);
  runner_.set_hook([this, &compute](int, Batch*) { clock_.Advance(compute); });
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  ASSERT_OK(Add(2, 10));
  absl::Status status = Add(3, 10);
  // The first measurement replaces the guess (kDelay).
  EXPECT_EQ(RetryAfter(status), absl::Milliseconds(60));
  compute = absl::Milliseconds(20);
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(2));
  WaitIdle();
  ASSERT_OK(Add(4, 10));
  status = Add(5, 10);
  // Later ones are averaged in: 0.75 * 60ms + 0.25 * 20ms.
  EXPECT_EQ(RetryAfter(status), absl::Milliseconds(50));
}

// Before any batch is measured, the hint is no shorter than the time the
// running batch has computed so far: a first long input is not hinted at
// max_queue_delay.
TEST_F(BatcherTest, RetryHintBeforeAnyMeasurementCountsTheRunningBatch) {
  Batcher::Options options = TestOptions();
  options.max_queue_requests = 1;
  Start(options);
  runner_.Block();
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForRunning(1));
  held_ = 1;
  ASSERT_OK(Add(2, 10));  // queued
  WaitIdle();
  EXPECT_EQ(RetryAfter(Add(3, 10)), kDelay);
  clock_.Advance(absl::Milliseconds(300));
  EXPECT_EQ(RetryAfter(Add(4, 10)), absl::Milliseconds(300));
}

// ---------------------------------------------------------------------------
// Workers.

// A full batch and a request past its delay stay queued while the worker
// runs; once it frees they run in turn, without waiting again.
TEST_F(BatcherTest, NoBatchIsFormedWhileNoWorkerCanTakeIt) {
  Start();
  runner_.Block();
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForRunning(1));
  held_ = 1;
  ASSERT_OK(Add(2, kBatchTokens));
  ASSERT_OK(Add(3, 10));
  clock_.Advance(kDelay);
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);
  EXPECT_EQ(runner_.num_runs(), 1);
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  EXPECT_THAT(BatchIds(),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
}

TEST_F(BatcherTest, EachWorkerRunsOneBatchAtATime) {
  Batcher::Options options = TestOptions();
  options.num_workers = 2;
  Start(options);
  runner_.Block();
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_OK(Add(2, kBatchTokens));
  ASSERT_OK(Add(3, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForRunning(2));
  held_ = 2;
  WaitIdle();
  std::vector<testing::RunRecord> runs = runner_.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_THAT((std::vector<int>{runs[0].worker_index, runs[1].worker_index}),
              UnorderedElementsAre(0, 1));
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);  // The third waits, queued.
  Release();
  ASSERT_TRUE(log_.WaitForTotal(3));
  EXPECT_EQ(runner_.num_runs(), 3);
  EXPECT_EQ(runner_.max_running(), 2);
}

// ---------------------------------------------------------------------------
// Runner results.

TEST_F(BatcherTest, RunnerErrorAnswersTheWholeBatch) {
  Start();
  runner_.set_status(absl::InternalError("device lost"));
  ASSERT_OK(Add(1, 50));
  ASSERT_OK(Add(2, 50));
  ASSERT_TRUE(log_.WaitForTotal(2));
  EXPECT_EQ(log_.StatusOf(1), absl::InternalError("device lost"));
  EXPECT_EQ(log_.StatusOf(2), absl::InternalError("device lost"));
  WaitIdle();
  ASSERT_EQ(observer_.batches().size(), 1u);
  EXPECT_EQ(observer_.batches()[0].code, absl::StatusCode::kInternal);
}

TEST_F(BatcherTest, RunnerMayAnswerSomeRequestsItself) {
  Start();
  runner_.set_hook([](int, Batch* batch) {
    batch->requests[0]->Complete(absl::InvalidArgumentError("token 7 unknown"));
  });
  ASSERT_OK(Add(1, 50));
  ASSERT_OK(Add(2, 50));
  ASSERT_TRUE(log_.WaitForTotal(2));
  WaitIdle();
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(log_.StatusOf(2).ok());
  EXPECT_EQ(log_.Count(1), 1);
  EXPECT_EQ(log_.Count(2), 1);
}

// ---------------------------------------------------------------------------
// Metrics hooks.

TEST_F(BatcherTest, ObserverSeesQueueDurationsAndBatchSizes) {
  Start();
  ASSERT_OK(Add(1, 30));
  clock_.Advance(absl::Milliseconds(4));
  ASSERT_OK(Add(2, 20));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 2);
  EXPECT_EQ(batcher_->NumQueuedTokens(), 50);
  clock_.Advance(absl::Milliseconds(6));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 0);
  EXPECT_EQ(batcher_->NumQueuedTokens(), 0);
  ASSERT_OK(
      Add(3, 10, Priority::kNormal, clock_.Now() + absl::Milliseconds(1)));
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(log_.WaitFor(3));
  WaitIdle();
  const absl::StatusCode ok = absl::StatusCode::kOk;
  EXPECT_THAT(observer_.dequeued(),
              ElementsAre(DequeuedRecord{1, absl::Milliseconds(10), ok},
                          DequeuedRecord{2, absl::Milliseconds(6), ok},
                          DequeuedRecord{3, absl::Milliseconds(1),
                                         absl::StatusCode::kDeadlineExceeded}));
  EXPECT_THAT(observer_.batches(),
              ElementsAre(BatchRunRecord{0, 2, 50, absl::ZeroDuration(), ok}));
}

// Every request that enters the queue is reported in once and out once,
// whether it runs or is dropped, and never while it runs; so the difference
// (favor_queue_depth) counts exactly the requests still waiting.
TEST_F(BatcherTest, ObserverReportsEachRequestInAndOutOnce) {
  Start();
  HoldWorker();
  EXPECT_EQ(observer_.waiting(), 0);  // kRunningId: out when it started
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10, Priority::kNormal, clock_.Now() + absl::Milliseconds(1)));
  EXPECT_EQ(observer_.waiting(), 2);
  clock_.Advance(absl::Milliseconds(1));  // request 2 expires in the queue
  ASSERT_TRUE(log_.WaitFor(2));
  WaitIdle();
  EXPECT_EQ(observer_.waiting(), 1);
  Release();
  clock_.Advance(kDelay);
  ASSERT_TRUE(log_.WaitFor(1));
  WaitIdle();
  EXPECT_EQ(observer_.waiting(), 0);
  EXPECT_THAT(observer_.enqueued(),
              UnorderedElementsAre(kRunningId, 1, 2));
  std::vector<uint64_t> out;
  for (const DequeuedRecord& record : observer_.dequeued()) {
    out.push_back(record.id);
  }
  EXPECT_THAT(out, UnorderedElementsAre(kRunningId, 1, 2));
}

// A batch is reported before its requests are answered, so that a caller
// holding its answer finds the batch in the metrics (a scrape right after an
// Embed counts its tokens).
TEST_F(BatcherTest, ABatchIsReportedBeforeItsRequestsAreAnswered) {
  Start();
  absl::Mutex mu;
  std::vector<size_t> batches_seen;
  for (uint64_t id : {1, 2}) {
    auto request = std::make_unique<Request>([&](absl::Status) {
      const size_t seen = observer_.batches().size();
      absl::MutexLock lock(&mu);
      batches_seen.push_back(seen);
    });
    request->id = id;
    request->num_tokens = kBatchTokens / 2;
    ASSERT_OK(batcher_->Enqueue(std::move(request)));
  }
  WaitIdle();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(batches_seen, ElementsAre(1u, 1u));
}

// Created without an observer, the batcher reports to BatcherObserver::Noop():
// batches run and dropped requests are answered as with one.
TEST_F(BatcherTest, RunsWithoutAnObserver) {
  absl::StatusOr<std::unique_ptr<Batcher>> batcher =
      Batcher::Create(TestOptions(), &runner_, &clock_);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  batcher_ = *std::move(batcher);
  start_ = clock_.Now();
  ASSERT_OK(Add(1, 10, Priority::kNormal, start_ + absl::Milliseconds(5)));
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(5)));
  clock_.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(log_.WaitFor(1));
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_OK(Add(2, kBatchTokens));
  ASSERT_TRUE(log_.WaitFor(2));
  EXPECT_TRUE(log_.StatusOf(2).ok());
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(2)));
  EXPECT_TRUE(observer_.dequeued().empty());
}

// ---------------------------------------------------------------------------
// Shutdown.

TEST_F(BatcherTest, ShutdownRunsEverythingQueuedWithoutWaiting) {
  Start();
  for (uint64_t id = 1; id <= 5; ++id) ASSERT_OK(Add(id, 10));
  batcher_->Shutdown(absl::InfiniteDuration());
  EXPECT_EQ(clock_.Now(), start_);
  EXPECT_EQ(log_.total(), 5);
  for (uint64_t id = 1; id <= 5; ++id) EXPECT_TRUE(log_.StatusOf(id).ok());
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1, 2, 3, 4, 5)));
  const absl::Status status = Add(6, 10);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log_.StatusOf(6), status);
}

TEST_F(BatcherTest, ShutdownRunsQueuedRequestsWithinTheDrainTimeout) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  std::thread shutdown([this] { batcher_->Shutdown(absl::Milliseconds(20)); });
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(20)));
  Release();
  shutdown.join();
  EXPECT_EQ(log_.total(), 3);
  for (uint64_t id : {kRunningId, uint64_t{1}, uint64_t{2}}) {
    EXPECT_TRUE(log_.StatusOf(id).ok()) << id;
  }
}

TEST_F(BatcherTest, ShutdownAnswersUnavailableAfterTheDrainTimeout) {
  Start();
  HoldWorker();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  std::thread shutdown([this] { batcher_->Shutdown(absl::Milliseconds(20)); });
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(20)));
  EXPECT_EQ(Add(3, 10).code(), absl::StatusCode::kUnavailable);
  clock_.Advance(absl::Milliseconds(20));
  // At the deadline, not when the running batch ends: a queued call must not
  // wait past --drain_timeout_seconds behind a long batch (7 s and more).
  ASSERT_TRUE(log_.WaitFor(1));
  ASSERT_TRUE(log_.WaitFor(2));
  Release();  // The running batch is never interrupted.
  shutdown.join();
  EXPECT_TRUE(log_.StatusOf(kRunningId).ok());
  for (uint64_t id : {uint64_t{1}, uint64_t{2}, uint64_t{3}}) {
    EXPECT_EQ(log_.StatusOf(id).code(), absl::StatusCode::kUnavailable) << id;
    EXPECT_EQ(log_.Count(id), 1) << id;
  }
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(kRunningId)));
  EXPECT_EQ(observer_.waiting(), 0);  // request 3, refused, never entered
}

TEST_F(BatcherTest, DestructorAnswersQueuedRequestsUnavailable) {
  Start();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  batcher_.reset();
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(runner_.num_runs(), 0);
  EXPECT_EQ(observer_.waiting(), 0);
}

}  // namespace
}  // namespace favor::batching
