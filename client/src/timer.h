// A one-thread timer that runs the client's delayed work: the waits
// between retries. One per Client.
#ifndef FAVOR_CLIENT_SRC_TIMER_H_
#define FAVOR_CLIENT_SRC_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor::client_internal {

class Timer {
 public:
  using Id = uint64_t;

  Timer();
  // Shutdown().
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `task` on the timer's thread at `when` (at once if it has passed).
  // After Shutdown, runs it on the calling thread before returning (and
  // returns 0).
  Id Schedule(absl::Time when, std::function<void()> task);

  // Removes the task `id` if it has not started and returns true; false if
  // it has run or is running, in which case Cancel waits until it has
  // returned (unless called from the task itself).
  bool Cancel(Id id);

  // Runs every pending task now, in time order, and stops the thread.
  void Shutdown();

  // Implementation details follow.
 private:
  using Key = std::pair<absl::Time, Id>;
  void Loop();

  absl::Mutex mu_;
  // Set when the thread must look at the tasks again before its deadline:
  // an earlier task or Shutdown. (A flag and Mutex::Await rather than a
  // CondVar, so that ThreadSanitizer's absl::Mutex shim sees every wait.)
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  std::map<Key, std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::map<Id, absl::Time> times_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  Id running_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_TIMER_H_
