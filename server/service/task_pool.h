// A fixed set of threads that run short tasks in arrival order: the
// service's tokenizer threads. Text is tokenised here, never inside a gRPC
// reactor (whose threads gRPC shares among all calls) and never on a batch
// worker (which must keep its device busy).
//
// Schedule never blocks: a task that does not fit the queue is refused at
// once with RESOURCE_EXHAUSTED and a retry hint, like a full batcher queue.
// Shutdown runs every task already queued, then joins the threads; tasks
// scheduled after it are refused with UNAVAILABLE.
//
// Thread-safe.
#ifndef FAVOR_SERVER_SERVICE_TASK_POOL_H_
#define FAVOR_SERVER_SERVICE_TASK_POOL_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor::service {

// The name of a pool's threads: "favor-" and the pool's name, cut to the 15
// bytes Linux keeps ("favor-tokenizer").
std::string ThreadName(absl::string_view pool_name);

class TaskPool {
 public:
  struct Options {
    // What the pool does, for status messages ("tokenizer").
    std::string name = "tasks";
    // Threads running tasks; at least 1.
    int num_threads = 2;
    // Tasks waiting for a thread; one more is refused with
    // RESOURCE_EXHAUSTED. At least 1.
    int64_t max_queued_tasks = 1024;
    // The retry hint of a refusal.
    absl::Duration retry_after = absl::Milliseconds(10);
  };

  // Starts the threads. INVALID_ARGUMENT names a bad option.
  static absl::StatusOr<std::unique_ptr<TaskPool>> Create(
      const Options& options);
  ~TaskPool();  // Shutdown()
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`, to run once on one of the threads. OK: it will run.
  // RESOURCE_EXHAUSTED (queue full, with a retry hint) or UNAVAILABLE
  // (shut down): it never will.
  absl::Status Schedule(absl::AnyInvocable<void() &&> task);

  // Runs what is queued, then stops the threads. Idempotent.
  void Shutdown();

  const Options& options() const { return options_; }

  // Implementation details follow.
 private:
  explicit TaskPool(const Options& options) : options_(options) {}
  void Work();

  const Options options_;
  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // Set by Create(), joined once.
  std::once_flag joined_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_TASK_POOL_H_
