// The fixture of the Batcher tests: a Batcher over a fake clock, a fake
// runner and a recording observer, with helpers to enqueue requests and to
// hold the worker (one batch running) while a test queues more. No test
// sleeps: time moves only through FakeClock::Advance(), and tests
// synchronise with the batcher's threads through WaitUntilIdleForTesting()
// and the fakes' waits.
#ifndef FAVOR_TESTS_BATCHING_BATCHER_FIXTURE_H_
#define FAVOR_TESTS_BATCHING_BATCHER_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/batcher_observer.h"
#include "server/batching/fake_clock.h"
#include "server/batching/request.h"
#include "tests/batching/fake_model_runner.h"

#define ASSERT_OK(expr)                   \
  do {                                    \
    const absl::Status status_ = (expr);  \
    ASSERT_TRUE(status_.ok()) << status_; \
  } while (false)

namespace favor::batching {

inline constexpr absl::Duration kDelay = absl::Milliseconds(10);
inline constexpr int64_t kBatchTokens = 100;
// The request HoldWorker() occupies the worker with.
inline constexpr uint64_t kRunningId = 1001;
inline constexpr absl::Time kNever = absl::InfiniteFuture();

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
  void OnEnqueued(const Request& request) override {
    absl::MutexLock lock(&mu_);
    enqueued_.push_back(request.id);
  }
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
  std::vector<uint64_t> enqueued() const {
    absl::MutexLock lock(&mu_);
    return enqueued_;
  }
  // Reported in, not yet reported out: what favor_queue_depth shows.
  int64_t waiting() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(enqueued_.size()) -
           static_cast<int64_t>(dequeued_.size());
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
  std::vector<uint64_t> enqueued_ ABSL_GUARDED_BY(mu_);
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
    // These tests form partial batches by the clock (batcher_test.cc's
    // IdleWorker tests cover the default, zero).
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

  // Occupies the single worker (request kRunningId, a full batch held
  // inside the runner), so that what the test enqueues next stays queued
  // until Release(): no batch is formed while no worker can take it.
  void HoldWorker() {
    runner_.Block();
    ASSERT_OK(Add(kRunningId, kBatchTokens));
    ASSERT_TRUE(runner_.WaitForRunning(1));
    held_ = 1;
    WaitIdle();
    ASSERT_EQ(batcher_->NumQueuedRequests(), 0);
  }

  std::vector<std::vector<uint64_t>> BatchIds() const {
    std::vector<std::vector<uint64_t>> ids;
    for (const testing::RunRecord& run : runner_.runs()) ids.push_back(run.ids);
    return ids;
  }

  // The batches run after the HoldWorker() one.
  std::vector<std::vector<uint64_t>> BatchIdsAfterHold() const {
    std::vector<std::vector<uint64_t>> ids;
    for (const testing::RunRecord& run : runner_.runs()) {
      if (run.ids == std::vector<uint64_t>{kRunningId}) continue;
      ids.push_back(run.ids);
    }
    return ids;
  }

  FakeClock clock_;
  testing::FakeModelRunner runner_;
  testing::CompletionLog log_;
  RecordingObserver observer_;
  std::unique_ptr<Batcher> batcher_;  // Destroyed first.
  absl::Time start_;
  int held_ = 0;  // Workers held inside the blocked runner.
};

}  // namespace favor::batching

#endif  // FAVOR_TESTS_BATCHING_BATCHER_FIXTURE_H_
