// Behaviour of the Batcher with a fake clock and a fake runner: budgets,
// delays, packing, priority, deadlines, cancellation, queue limits and
// shutdown. No test sleeps: time moves only through FakeClock::Advance(),
// and tests synchronise with the batcher's threads through
// WaitUntilIdleForTesting() and the fakes' waits.
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
#include "server/batching/batcher_observer.h"
#include "server/batching/fake_clock.h"
#include "server/batching/request.h"
#include "server/batching/retry_hint.h"
#include "tests/batching/fake_model_runner.h"

namespace favor::batching {
namespace {

using ::favor::batching::testing::CompletionLog;
using ::favor::batching::testing::FakeModelRunner;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

#define ASSERT_OK(expr)                   \
  do {                                    \
    const absl::Status status_ = (expr);  \
    ASSERT_TRUE(status_.ok()) << status_; \
  } while (false)

constexpr absl::Duration kDelay = absl::Milliseconds(10);
constexpr int64_t kBatchTokens = 100;
// Requests HoldPipeline() uses to occupy the worker and the ready slot.
constexpr uint64_t kRunningId = 1001;
constexpr uint64_t kReadyId = 1002;
constexpr absl::Time kNever = absl::InfiniteFuture();

struct DequeuedRecord {
  uint64_t id;
  absl::Duration queue_duration;
  absl::StatusCode code;
  bool operator==(const DequeuedRecord& other) const {
    return id == other.id && queue_duration == other.queue_duration &&
           code == other.code;
  }
};

struct BatchRunRecord {
  int worker_index;
  int64_t num_requests;
  int64_t num_tokens;
  absl::Duration compute_duration;
  absl::StatusCode code;
  bool operator==(const BatchRunRecord& other) const {
    return worker_index == other.worker_index &&
           num_requests == other.num_requests &&
           num_tokens == other.num_tokens &&
           compute_duration == other.compute_duration && code == other.code;
  }
};

class RecordingObserver final : public BatcherObserver {
 public:
  void OnDequeued(const Request& request, absl::Duration queue_duration,
                  absl::StatusCode code) override {
    absl::MutexLock lock(&mu_);
    dequeued_.push_back({request.id, queue_duration, code});
  }
  void OnBatchRun(int worker_index, int64_t num_requests, int64_t num_tokens,
                  absl::Duration compute_duration,
                  const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    batches_.push_back({worker_index, num_requests, num_tokens,
                        compute_duration, status.code()});
  }
  std::vector<DequeuedRecord> dequeued() const {
    absl::MutexLock lock(&mu_);
    return dequeued_;
  }
  std::vector<BatchRunRecord> batches() const {
    absl::MutexLock lock(&mu_);
    return batches_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<DequeuedRecord> dequeued_ ABSL_GUARDED_BY(mu_);
  std::vector<BatchRunRecord> batches_ ABSL_GUARDED_BY(mu_);
};

class BatcherTest : public ::testing::Test {
 protected:
  static Batcher::Options TestOptions() {
    Batcher::Options options;
    options.model_name = "test-model";
    options.max_batch_tokens = kBatchTokens;
    options.max_batch_requests = 8;
    options.max_queue_delay = kDelay;
    return options;
  }

  void Start(const Batcher::Options& options = TestOptions()) {
    absl::StatusOr<std::unique_ptr<Batcher>> batcher =
        Batcher::Create(options, &runner_, &clock_, &observer_);
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
    start_ = clock_.Now();
  }

  void TearDown() override {
    runner_.Unblock();
    batcher_.reset();
  }

  absl::Status Add(uint64_t id, int64_t num_tokens,
                   Priority priority = Priority::kNormal,
                   absl::Time deadline = kNever,
                   std::shared_ptr<const CancellationFlag> flag = nullptr) {
    return batcher_->Enqueue(
        log_.MakeRequest(id, num_tokens, priority, deadline, std::move(flag)));
  }

  // See Batcher::WaitUntilIdleForTesting; `held_` workers are blocked in
  // the runner.
  void WaitIdle() { ASSERT_TRUE(batcher_->WaitUntilIdleForTesting(held_)); }

  // Lets the runner go and expects no worker to be held in it any more.
  void Release() {
    held_ = 0;
    runner_.Unblock();
  }

  // Occupies the single worker (request kRunningId, held inside the runner)
  // and the ready slot (request kReadyId, formed and waiting), so that what
  // the test enqueues next stays queued until Release(). Both are
  // full batches of the normal priority.
  void HoldPipeline(
      absl::Time ready_deadline = kNever,
      std::shared_ptr<const CancellationFlag> ready_flag = nullptr) {
    runner_.Block();
    ASSERT_OK(Add(kRunningId, kBatchTokens));
    ASSERT_TRUE(runner_.WaitForRunning(1));
    held_ = 1;
    ASSERT_OK(Add(kReadyId, kBatchTokens, Priority::kNormal, ready_deadline,
                  std::move(ready_flag)));
    WaitIdle();
    ASSERT_EQ(batcher_->NumQueuedRequests(), 0);
  }

  std::vector<std::vector<uint64_t>> BatchIds() const {
    std::vector<std::vector<uint64_t>> ids;
    for (const testing::RunRecord& run : runner_.runs()) ids.push_back(run.ids);
    return ids;
  }

  // The batches run after the two HoldPipeline() ones.
  std::vector<std::vector<uint64_t>> BatchIdsAfterHold() const {
    std::vector<std::vector<uint64_t>> ids;
    for (const testing::RunRecord& run : runner_.runs()) {
      if (run.ids == std::vector<uint64_t>{kRunningId}) continue;
      if (run.ids == std::vector<uint64_t>{kReadyId}) continue;
      ids.push_back(run.ids);
    }
    return ids;
  }

  FakeClock clock_;
  FakeModelRunner runner_;
  CompletionLog log_;
  RecordingObserver observer_;
  std::unique_ptr<Batcher> batcher_;  // Destroyed first.
  absl::Time start_;
  int held_ = 0;  // Workers held inside the blocked runner.
};

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

TEST_F(BatcherTest, ZeroDelayFormsBatchAtOnce) {
  Batcher::Options options = TestOptions();
  options.max_queue_delay = absl::ZeroDuration();
  Start(options);
  ASSERT_OK(Add(1, 10));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(1)));
}

// ---------------------------------------------------------------------------
// Length-aware packing.

TEST_F(BatcherTest, PacksShorterRequestsAroundALongOne) {
  Start();
  HoldPipeline();
  ASSERT_OK(Add(1, 60));
  ASSERT_OK(Add(2, 50));  // Does not fit with request 1.
  ASSERT_OK(Add(3, 30));  // These two fill the budget instead of waiting.
  ASSERT_OK(Add(4, 10));
  WaitIdle();
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(1, 3, 4)));
  EXPECT_EQ(runner_.runs()[2].num_tokens, kBatchTokens);
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 3, 4), ElementsAre(2)));
}

TEST_F(BatcherTest, SkippedLongRequestLeadsTheNextBatch) {
  Start();
  HoldPipeline();
  ASSERT_OK(Add(1, 30));
  ASSERT_OK(Add(2, 80));  // Skipped by the first batch...
  ASSERT_OK(Add(3, 30));
  ASSERT_OK(Add(4, 30));
  ASSERT_OK(Add(5, 30));  // ...but not overtaken by this later small one.
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(4));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 3, 4), ElementsAre(2)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(5));
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

  HoldPipeline();
  ASSERT_OK(Add(2, 250));
  ASSERT_OK(Add(3, 10));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(4));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(1), ElementsAre(2)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(5));
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

TEST_F(BatcherTest, RequestExpiringInAFormedBatchIsNotRun) {
  Start();
  HoldPipeline(/*ready_deadline=*/start_ + absl::Milliseconds(5));
  clock_.Advance(absl::Milliseconds(5));
  Release();
  ASSERT_TRUE(log_.WaitFor(kReadyId));
  EXPECT_EQ(log_.StatusOf(kReadyId).code(),
            absl::StatusCode::kDeadlineExceeded);
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

TEST_F(BatcherTest, CancelledRequestInAFormedBatchIsNotRun) {
  Start();
  auto flag = std::make_shared<CancellationFlag>();
  HoldPipeline(kNever, flag);
  flag->Cancel();
  Release();
  ASSERT_TRUE(log_.WaitFor(kReadyId));
  EXPECT_EQ(log_.StatusOf(kReadyId).code(), absl::StatusCode::kCancelled);
  WaitIdle();
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(kRunningId)));
}

// ---------------------------------------------------------------------------
// Priority and starvation.

TEST_F(BatcherTest, HighPriorityRequestsLeadFirst) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 1;
  Start(options);
  HoldPipeline();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  ASSERT_OK(Add(2, 10, Priority::kNormal));
  ASSERT_OK(Add(3, 10, Priority::kHigh));
  ASSERT_OK(Add(4, 10, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(6));
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(3), ElementsAre(4),
                                               ElementsAre(1), ElementsAre(2)));
}

TEST_F(BatcherTest, HighPriorityRequestsFillFirst) {
  Start();
  HoldPipeline();
  ASSERT_OK(Add(1, 40, Priority::kNormal));
  ASSERT_OK(Add(2, 40, Priority::kHigh));
  ASSERT_OK(Add(3, 20, Priority::kNormal));
  ASSERT_OK(Add(4, 40, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(3));
  WaitIdle();
  EXPECT_THAT(BatchIdsAfterHold(), ElementsAre(ElementsAre(2, 4, 3)));
  clock_.Advance(kDelay);
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(2, 4, 3), ElementsAre(1)));
}

TEST_F(BatcherTest, HighPriorityNeverStarvesNormal) {
  Batcher::Options options = TestOptions();
  options.max_batch_requests = 1;
  options.max_consecutive_high_batches = 2;
  Start(options);
  HoldPipeline();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  ASSERT_OK(Add(2, 10, Priority::kNormal));
  for (uint64_t id = 3; id <= 7; ++id) ASSERT_OK(Add(id, 10, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(9));
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
  HoldPipeline();
  ASSERT_OK(Add(1, 10, Priority::kNormal));
  clock_.Advance(absl::Milliseconds(50));
  ASSERT_OK(Add(2, 10, Priority::kHigh));
  ASSERT_OK(Add(3, 10, Priority::kHigh));
  clock_.Advance(absl::Milliseconds(50));  // Request 1 reaches the bound.
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(5));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
}

TEST_F(BatcherTest, RequestsPastTheAgeBoundArePackedFirst) {
  Batcher::Options options = TestOptions();
  options.max_request_age = absl::Milliseconds(100);
  options.max_consecutive_high_batches = 100;
  Start(options);
  HoldPipeline();
  ASSERT_OK(Add(1, 50, Priority::kNormal));
  ASSERT_OK(Add(2, 50, Priority::kNormal));
  clock_.Advance(absl::Milliseconds(150));
  ASSERT_OK(Add(3, 50, Priority::kHigh));
  ASSERT_OK(Add(4, 50, Priority::kHigh));
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(4));
  EXPECT_THAT(BatchIdsAfterHold(),
              ElementsAre(ElementsAre(1, 2), ElementsAre(3, 4)));
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
  HoldPipeline();
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
  runner_.set_hook(
      [this](int, Batch*) { clock_.Advance(absl::Milliseconds(60)); });
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForBatches(1));
  WaitIdle();
  ASSERT_OK(Add(2, 10));
  const absl::Status status = Add(3, 10);
  // 0.75 * 10ms (initial estimate) + 0.25 * 60ms (measured).
  EXPECT_EQ(RetryAfter(status), absl::Microseconds(22500));
}

// ---------------------------------------------------------------------------
// Pipelining and workers.

TEST_F(BatcherTest, NextBatchIsFormedWhileOneRuns) {
  Start();
  runner_.Block();
  ASSERT_OK(Add(1, kBatchTokens));
  ASSERT_TRUE(runner_.WaitForRunning(1));
  held_ = 1;
  ASSERT_OK(Add(2, kBatchTokens));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 0);  // Batch {2} is formed.
  ASSERT_OK(Add(3, 10));
  WaitIdle();
  EXPECT_EQ(batcher_->NumQueuedRequests(), 1);  // Only one batch ahead.
  EXPECT_EQ(runner_.num_runs(), 1);
  Release();
  ASSERT_TRUE(runner_.WaitForBatches(2));
  clock_.Advance(kDelay);
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
  EXPECT_EQ(batcher_->NumQueuedRequests(), 0);  // The third waits, formed.
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
  HoldPipeline();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  std::thread shutdown([this] { batcher_->Shutdown(absl::Milliseconds(20)); });
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(20)));
  Release();
  shutdown.join();
  EXPECT_EQ(log_.total(), 4);
  for (uint64_t id : {kRunningId, kReadyId, uint64_t{1}, uint64_t{2}}) {
    EXPECT_TRUE(log_.StatusOf(id).ok()) << id;
  }
}

TEST_F(BatcherTest, ShutdownAnswersUnavailableAfterTheDrainTimeout) {
  Start();
  HoldPipeline();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  std::thread shutdown([this] { batcher_->Shutdown(absl::Milliseconds(20)); });
  ASSERT_TRUE(clock_.BlockUntilWaiting(start_ + absl::Milliseconds(20)));
  EXPECT_EQ(Add(3, 10).code(), absl::StatusCode::kUnavailable);
  clock_.Advance(absl::Milliseconds(20));
  ASSERT_TRUE(log_.WaitFor(1));
  ASSERT_TRUE(log_.WaitFor(2));
  Release();  // The running batch is never interrupted.
  shutdown.join();
  EXPECT_TRUE(log_.StatusOf(kRunningId).ok());
  for (uint64_t id : {kReadyId, uint64_t{1}, uint64_t{2}, uint64_t{3}}) {
    EXPECT_EQ(log_.StatusOf(id).code(), absl::StatusCode::kUnavailable) << id;
    EXPECT_EQ(log_.Count(id), 1) << id;
  }
  EXPECT_THAT(BatchIds(), ElementsAre(ElementsAre(kRunningId)));
}

TEST_F(BatcherTest, DestructorAnswersQueuedRequestsUnavailable) {
  Start();
  ASSERT_OK(Add(1, 10));
  ASSERT_OK(Add(2, 10));
  batcher_.reset();
  EXPECT_EQ(log_.StatusOf(1).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log_.StatusOf(2).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(runner_.num_runs(), 0);
}

}  // namespace
}  // namespace favor::batching
