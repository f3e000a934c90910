#include "timer.h"

namespace favor::client_internal {

Timer::Timer() : thread_([this] { Loop(); }) {}

Timer::~Timer() { Shutdown(); }

Timer::Id Timer::Schedule(absl::Time when, std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (!shutdown_) {
      const Id id = next_id_++;
      // The thread sleeps until the earliest task: wake it only when this
      // one comes first (message deadlines, the common case, come last).
      const bool earliest =
          tasks_.empty() || Key(when, id) < tasks_.begin()->first;
      tasks_.emplace(Key(when, id), std::move(task));
      times_.emplace(id, when);
      if (earliest) wake_ = true;
      return id;
    }
  }
  task();
  return 0;
}

bool Timer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  const auto found = times_.find(id);
  if (found != times_.end()) {
    tasks_.erase(Key(found->second, id));
    times_.erase(found);
    return true;
  }
  if (std::this_thread::get_id() != thread_.get_id()) {
    const auto not_running = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return running_ != id;
    };
    mu_.Await(absl::Condition(&not_running));
  }
  return false;
}

void Timer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    wake_ = true;
  }
  thread_.join();
}

void Timer::Loop() {
  absl::MutexLock lock(&mu_);
  const auto woken = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wake_; };
  while (true) {
    wake_ = false;  // the tasks are looked at again below
    if (tasks_.empty()) {
      if (shutdown_) return;
      mu_.Await(absl::Condition(&woken));
      continue;
    }
    const auto first = tasks_.begin();
    if (!shutdown_ && first->first.first > absl::Now()) {
      mu_.AwaitWithDeadline(absl::Condition(&woken), first->first.first);
      continue;
    }
    const Id id = first->first.second;
    std::function<void()> task = std::move(first->second);
    tasks_.erase(first);
    times_.erase(id);
    running_ = id;
    mu_.Unlock();
    task();
    mu_.Lock();
    running_ = 0;
  }
}

}  // namespace favor::client_internal
