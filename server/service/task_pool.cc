#include "server/service/task_pool.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/batching/retry_hint.h"

namespace favor::service {

std::string ThreadName(absl::string_view pool_name) {
  return std::string(absl::StrCat("favor-", pool_name).substr(0, 15));
}

absl::StatusOr<std::unique_ptr<TaskPool>> TaskPool::Create(
    const Options& options) {
  if (options.num_threads < 1 || options.max_queued_tasks < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TaskPool '", options.name,
                     "': num_threads and max_queued_tasks must be >= 1"));
  }
  std::unique_ptr<TaskPool> pool(new TaskPool(options));
  for (int i = 0; i < options.num_threads; ++i) {
    pool->threads_.emplace_back([raw = pool.get()] { raw->Work(); });
    // Named for debuggers, top and the tests (15 bytes at most).
    pthread_setname_np(pool->threads_.back().native_handle(),
                       ThreadName(options.name).c_str());
  }
  return pool;
}

TaskPool::~TaskPool() { Shutdown(); }

absl::Status TaskPool::Schedule(absl::AnyInvocable<void() &&> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return absl::UnavailableError(
        absl::StrCat("the ", options_.name, " threads are shutting down"));
  }
  if (static_cast<int64_t>(queue_.size()) >= options_.max_queued_tasks) {
    return batching::ResourceExhaustedWithRetry(
        absl::StrCat("the ", options_.name, " queue is full (",
                     options_.max_queued_tasks, " calls waiting)"),
        options_.retry_after);
  }
  queue_.push_back(std::move(task));
  return absl::OkStatus();
}

void TaskPool::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // A second caller waits here until the first has joined the threads.
  std::call_once(joined_, [this] {
    for (std::thread& thread : threads_) thread.join();
  });
}

void TaskPool::Work() {
  while (true) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](TaskPool* pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool->mu_) {
            return pool->stopping_ || !pool->queue_.empty();
          },
          this));
      // Stopping drains the queue first.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace favor::service
