// Test doubles for the batching tests: a ModelRunner that records the batches
// it is given (and can be held inside RunBatch), and a log of request
// completions that checks the exactly-once contract.
#ifndef FAVOR_TESTS_BATCHING_FAKE_MODEL_RUNNER_H_
#define FAVOR_TESTS_BATCHING_FAKE_MODEL_RUNNER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/batching/job.h"
#include "server/batching/model_runner.h"
#include "server/batching/request.h"

namespace favor::batching::testing {

// Real-time safety net for waits on other threads: a broken test fails after
// this instead of hanging. Never reached by a passing test.
inline constexpr absl::Duration kTestTimeout = absl::Seconds(30);

struct RunRecord {
  int worker_index = 0;
  std::vector<uint64_t> ids;
  std::vector<Priority> priorities;
  int64_t num_tokens = 0;
};

class FakeModelRunner final : public ModelRunner {
 public:
  // Called inside RunBatch (after recording, before returning), e.g. to
  // complete some requests itself or to advance a fake clock.
  using Hook = std::function<void(int worker_index, Batch* batch)>;

  absl::Status RunBatch(int worker_index, Batch* batch) override {
    Hook hook;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      runs_.push_back(Record(worker_index, *batch));
      ++running_;
      max_running_ = std::max(max_running_, running_);
      mu_.Await(absl::Condition(this, &FakeModelRunner::Unblocked));
      --running_;
      hook = hook_;
      status = status_;
    }
    if (hook) hook(worker_index, batch);
    return status;
  }

  // While blocked, RunBatch records its batch and then waits for Unblock().
  void Block() {
    absl::MutexLock lock(&mu_);
    blocked_ = true;
  }
  void Unblock() {
    absl::MutexLock lock(&mu_);
    blocked_ = false;
  }
  void set_status(absl::Status status) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
  }
  void set_hook(Hook hook) {
    absl::MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }

  // Waits until RunBatch has been called `count` times in all.
  bool WaitForBatches(int count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() {
      mu_.AssertReaderHeld();
      return static_cast<int>(runs_.size()) >= count;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kTestTimeout);
  }
  // Waits until `count` calls are inside RunBatch at once.
  bool WaitForRunning(int count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() {
      mu_.AssertReaderHeld();
      return running_ >= count;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kTestTimeout);
  }

  std::vector<RunRecord> runs() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  int num_runs() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(runs_.size());
  }
  int max_running() const {
    absl::MutexLock lock(&mu_);
    return max_running_;
  }

 private:
  static RunRecord Record(int worker_index, const Batch& batch) {
    RunRecord record;
    record.worker_index = worker_index;
    record.num_tokens = batch.num_tokens;
    for (const std::unique_ptr<Request>& request : batch.requests) {
      record.ids.push_back(request->id);
      record.priorities.push_back(request->priority);
    }
    return record;
  }
  bool Unblocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !blocked_; }

  mutable absl::Mutex mu_;
  std::vector<RunRecord> runs_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int max_running_ ABSL_GUARDED_BY(mu_) = 0;
  bool blocked_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  Hook hook_ ABSL_GUARDED_BY(mu_);
};

// FakeModelRunner as the runner of a JobBatcher<Work> (job.h): it records
// and holds batches as FakeModelRunner does and never reads their work.
template <typename Work>
class FakeJobRunner final : public JobRunner<Work> {
 public:
  absl::Status RunBatch(int worker_index, Batch* batch) override {
    return fake.RunBatch(worker_index, batch);
  }
  absl::Status RunJobs(int /*worker_index*/,
                       absl::Span<Job<Work>* const> /*jobs*/) override {
    return absl::InternalError("FakeJobRunner runs whole batches");
  }

  FakeModelRunner fake;
};

// Every status each request id was completed with, in order.
class CompletionLog {
 public:
  Request::DoneCallback Callback(uint64_t id) {
    return [this, id](absl::Status status) {
      absl::MutexLock lock(&mu_);
      statuses_[id].push_back(std::move(status));
      ++total_;
    };
  }

  std::unique_ptr<Request> MakeRequest(
      uint64_t id, int64_t num_tokens, Priority priority = Priority::kNormal,
      absl::Time deadline = absl::InfiniteFuture(),
      std::shared_ptr<const CancellationFlag> cancellation = nullptr) {
    auto request = std::make_unique<Request>(Callback(id));
    request->id = id;
    request->num_tokens = num_tokens;
    request->priority = priority;
    request->deadline = deadline;
    request->cancellation = std::move(cancellation);
    return request;
  }

  // Waits until `count` completions have been recorded in all.
  bool WaitForTotal(int count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() {
      mu_.AssertReaderHeld();
      return total_ >= count;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kTestTimeout);
  }
  // Waits until request `id` has been completed.
  bool WaitFor(uint64_t id) {
    absl::MutexLock lock(&mu_);
    auto done = [this, id]() {
      mu_.AssertReaderHeld();
      return statuses_.count(id) > 0;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), kTestTimeout);
  }

  // The number of times `id` was completed.
  int Count(uint64_t id) const {
    absl::MutexLock lock(&mu_);
    auto it = statuses_.find(id);
    return it == statuses_.end() ? 0 : static_cast<int>(it->second.size());
  }
  // The first status `id` was completed with (UNKNOWN "not completed" if
  // none).
  absl::Status StatusOf(uint64_t id) const {
    absl::MutexLock lock(&mu_);
    auto it = statuses_.find(id);
    if (it == statuses_.end()) return absl::UnknownError("not completed");
    return it->second.front();
  }
  int total() const {
    absl::MutexLock lock(&mu_);
    return total_;
  }
  std::map<uint64_t, std::vector<absl::Status>> statuses() const {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::vector<absl::Status>> statuses_ ABSL_GUARDED_BY(mu_);
  int total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace favor::batching::testing

#endif  // FAVOR_TESTS_BATCHING_FAKE_MODEL_RUNNER_H_
