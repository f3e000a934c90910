#include "server/batching/fake_clock.h"

#include <algorithm>

#include "glog/logging.h"

namespace favor::batching {

FakeClock::FakeClock(absl::Time start) : now_nanos_(absl::ToUnixNanos(start)) {}

absl::Time FakeClock::Now() const {
  return absl::FromUnixNanos(now_nanos_.load(std::memory_order_acquire));
}

bool FakeClock::ConditionOrDeadline(AwaitArgs* args) {
  return args->condition->Eval() || args->clock->Now() >= args->deadline;
}

bool FakeClock::AwaitWithDeadline(absl::Mutex* mu,
                                  const absl::Condition& condition,
                                  absl::Time deadline) {
  // Lock order: the waiter's `mu`, then our `mu_` (never the reverse: see
  // WakeWaiters()).
  Waiter waiter{mu, deadline};
  {
    absl::MutexLock lock(&mu_);
    waiters_.push_back(&waiter);
  }
  AwaitArgs args{this, &condition, deadline};
  mu->Await(absl::Condition(&ConditionOrDeadline, &args));
  {
    absl::MutexLock lock(&mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &waiter));
  }
  return condition.Eval();
}

void FakeClock::Advance(absl::Duration delta) {
  CHECK_GE(delta, absl::ZeroDuration()) << "time runs forward only";
  now_nanos_.fetch_add(absl::ToInt64Nanoseconds(delta),
                       std::memory_order_acq_rel);
  WakeWaiters();
}

void FakeClock::SetTime(absl::Time time) { Advance(time - Now()); }

// A waiter blocked in absl::Mutex::Await() re-evaluates its condition when
// its mutex is released; locking and unlocking each waiter's mutex makes it
// see the new time. The mutexes are collected first and locked without
// holding `mu_`, because a waiter returning from Await() holds its mutex
// while it takes `mu_` to unregister.
void FakeClock::WakeWaiters() {
  std::vector<absl::Mutex*> mutexes;
  {
    absl::MutexLock lock(&mu_);
    for (const Waiter* waiter : waiters_) mutexes.push_back(waiter->mu);
  }
  std::sort(mutexes.begin(), mutexes.end());
  mutexes.erase(std::unique(mutexes.begin(), mutexes.end()), mutexes.end());
  for (absl::Mutex* mu : mutexes) {
    mu->Lock();
    mu->Unlock();
  }
}

bool FakeClock::BlockUntilWaiting(absl::Time deadline,
                                  absl::Duration real_timeout) {
  auto waiting = [this, deadline]() {
    mu_.AssertReaderHeld();
    return std::any_of(waiters_.begin(), waiters_.end(),
                       [deadline](const Waiter* waiter) {
                         return waiter->deadline == deadline;
                       });
  };
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&waiting), real_timeout);
}

bool FakeClock::BlockUntilNumWaiters(int count, absl::Duration real_timeout) {
  auto enough = [this, count]() {
    mu_.AssertReaderHeld();
    return static_cast<int>(waiters_.size()) >= count;
  };
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&enough), real_timeout);
}

int FakeClock::NumWaiters() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(waiters_.size());
}

}  // namespace favor::batching
