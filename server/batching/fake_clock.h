// A Clock for tests: time stands still until the test advances it.
//
// Advance() and SetTime() wake every thread waiting in AwaitWithDeadline()
// whose deadline has been reached, at once and without real sleeping, so a
// test can say "the queue delay has now elapsed" and watch what the batcher
// does. The BlockUntil...() helpers let a test wait (in real time) until a
// thread under test has reached a wait on this clock, which is how tests
// know that, e.g., the batch former has seen a request and decided to wait.
//
// A test utility (target favor::batching_testing); production code never
// links it.
#ifndef FAVOR_SERVER_BATCHING_FAKE_CLOCK_H_
#define FAVOR_SERVER_BATCHING_FAKE_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/batching/clock.h"

namespace favor::batching {

class FakeClock final : public Clock {
 public:
  // Starts at `start`; any finite time will do.
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'000'000'000));

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Moves time forward by `delta` (>= 0) and wakes the waiters whose deadline
  // it reaches. Locks each waiter's mutex briefly, so it must not be called
  // with such a mutex held, nor concurrently with the destruction of one (in
  // tests: do not destroy the object under test on another thread while
  // advancing). May be called from any thread, e.g. from a fake runner.
  void Advance(absl::Duration delta);
  // Moves time to `time` (not before Now()), as Advance() does.
  void SetTime(absl::Time time);

  // Blocks until some thread waits on this clock with exactly `deadline`, or
  // `real_timeout` of real time passes (a safety net so that a broken test
  // fails instead of hanging). Returns whether such a waiter was seen.
  bool BlockUntilWaiting(absl::Time deadline,
                         absl::Duration real_timeout = absl::Seconds(30));
  // Blocks until at least `count` threads wait on this clock (same timeout).
  bool BlockUntilNumWaiters(int count,
                            absl::Duration real_timeout = absl::Seconds(30));
  int NumWaiters() const;

  // Implementation details follow.
 private:
  struct Waiter {
    absl::Mutex* mu;
    absl::Time deadline;
  };
  struct AwaitArgs {
    const FakeClock* clock;
    const absl::Condition* condition;
    absl::Time deadline;
  };
  static bool ConditionOrDeadline(AwaitArgs* args);
  void WakeWaiters();

  // Nanoseconds since the Unix epoch; atomic because waiters' conditions read
  // it while holding their own mutex, not ours.
  std::atomic<int64_t> now_nanos_;
  mutable absl::Mutex mu_;
  std::vector<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_FAKE_CLOCK_H_
